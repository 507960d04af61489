"""Backend names used by the CLI and the app → objects. One place that knows every backend."""
from __future__ import annotations

RERANKERS = ("none", "embedding", "cohere", "cross-encoder:PATH")
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
