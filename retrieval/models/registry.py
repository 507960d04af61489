"""Backend names used by the CLI and the app → objects. One place that knows every backend."""
from __future__ import annotations

EMBEDDERS = ("minilm", "hashing")
RERANKERS = ("none", "embedding", "cohere", "cross-encoder:PATH")


def make_embedder(kind: str | None):
    """`minilm` (bundled all-MiniLM-L6-v2, loaded lazily) or `hashing` (no model: tests, plumbing checks).

    Both are 384-d, so a store must be queried with the embedder it was built with.
    """
    from .embedders import HashingEmbedder, SentenceTransformerEmbedder

    kind = kind or "minilm"
    if kind == "minilm":
        return SentenceTransformerEmbedder()
    if kind == "hashing":
        return HashingEmbedder(384)
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")
GENERATORS = ("gemma", "cohere", "openai:BASE_URL#MODEL")


def make_reranker(spec: str | None, **kw):
    from .rerankers import CohereReranker, CrossEncoderReranker, EmbeddingReranker

    spec = (spec or "none").strip()
    if spec == "none":
        return None
    if spec == "embedding":
        return EmbeddingReranker(**kw)
    if spec == "cohere":
        return CohereReranker(**kw)
    if spec.startswith("cross-encoder:"):
        return CrossEncoderReranker(spec.split(":", 1)[1])
    raise ValueError(f"unknown reranker {spec!r}; choose one of {', '.join(RERANKERS)}")


def make_generator(spec: str | None, **kw):
    from .generators import CohereGenerator, LocalGemmaGenerator, OpenAICompatibleGenerator

    spec = (spec or "gemma").strip()
    if spec == "gemma":
        return LocalGemmaGenerator(**kw)
    if spec == "cohere":
        return CohereGenerator(**kw)
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        return OpenAICompatibleGenerator(url, model or "default", **kw)
    raise ValueError(f"unknown generator {spec!r}; choose one of {', '.join(GENERATORS)}")


def make_hyde(spec: str | None, **kw):
    from .generators import HydeGenerator

    if (spec or "none") == "none":
        return None
    return HydeGenerator(make_generator(spec, **kw))
