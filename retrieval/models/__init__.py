"""Model backends: embedders, rerankers and text generators. Weights load lazily, on first use."""
from retrieval.models.cohere_embedder import CohereEmbedder
from retrieval.models.credentials import (BaseURL, Credential, operator_credential, parse_base_url, same_origin,
                                          scrub_url)
from retrieval.models.embedders import (Embedder, HashingEmbedder, HostedEmbedder, SentenceTransformerEmbedder,
                                        embed_queries)
from retrieval.models.errors import BackendError
from retrieval.models.generators import (CohereGenerator, HydeGenerator, LocalGemmaGenerator, OpenAICompatibleGenerator,
                         TextGenerator)
from retrieval.models.openai_embedder import OpenAIEmbedder
from retrieval.models.rerankers import CohereReranker, CrossEncoderReranker, EmbeddingReranker, Reranker

__all__ = [
    "BackendError", "BaseURL", "CohereEmbedder", "CohereGenerator", "CohereReranker", "Credential",
    "CrossEncoderReranker", "Embedder", "EmbeddingReranker", "HashingEmbedder", "HostedEmbedder", "HydeGenerator",
    "LocalGemmaGenerator", "OpenAICompatibleGenerator", "OpenAIEmbedder", "Reranker", "SentenceTransformerEmbedder",
    "TextGenerator", "embed_queries", "operator_credential", "parse_base_url", "same_origin", "scrub_url",
]
