"""Model backends: embedders, rerankers and text generators. Weights load lazily, on first use."""
from .cohere_embedder import CohereEmbedder
from .credentials import BaseURL, Credential, operator_credential, parse_base_url, same_origin, scrub_url
from .embedders import Embedder, HashingEmbedder, HostedEmbedder, SentenceTransformerEmbedder, embed_queries
from .errors import BackendError
from .generators import (CohereGenerator, HydeGenerator, LocalGemmaGenerator, OpenAICompatibleGenerator,
                         TextGenerator)
from .openai_embedder import OpenAIEmbedder
from .rerankers import CohereReranker, CrossEncoderReranker, EmbeddingReranker, Reranker

__all__ = [
    "BackendError", "BaseURL", "CohereEmbedder", "CohereGenerator", "CohereReranker", "Credential",
    "CrossEncoderReranker", "Embedder", "EmbeddingReranker", "HashingEmbedder", "HostedEmbedder", "HydeGenerator",
    "LocalGemmaGenerator", "OpenAICompatibleGenerator", "OpenAIEmbedder", "Reranker", "SentenceTransformerEmbedder",
    "TextGenerator", "embed_queries", "operator_credential", "parse_base_url", "same_origin", "scrub_url",
]
