"""Model backends: embedders, rerankers and text generators. Weights load lazily, on first use."""
from .embedders import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from .errors import BackendError
from .generators import (CohereGenerator, HydeGenerator, LocalGemmaGenerator, OpenAICompatibleGenerator,
                         TextGenerator)
from .rerankers import CohereReranker, CrossEncoderReranker, EmbeddingReranker, Reranker

__all__ = [
    "BackendError", "CohereGenerator", "CohereReranker", "CrossEncoderReranker", "Embedder", "EmbeddingReranker",
    "HashingEmbedder", "HydeGenerator", "LocalGemmaGenerator", "OpenAICompatibleGenerator", "Reranker",
    "SentenceTransformerEmbedder", "TextGenerator",
]
