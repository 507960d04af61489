"""Backend names used by the CLI and the app → objects. One place that knows every backend.

`secrets` (optional, every factory): the operator's Streamlit secrets, read before the environment
for API keys and base URLs. A configured key only ever goes to its configured origin (credentials.py).
"""
from __future__ import annotations

from collections.abc import Mapping

EMBEDDERS = ("minilm", "hashing", "st:PATH", "cohere:MODEL", "openai:BASE_URL#MODEL")
RERANKERS = ("none", "embedding", "cohere", "cross-encoder:PATH")


def split_openai_spec(spec: str, kind: str) -> tuple[str, str]:
    """`openai:BASE_URL#MODEL` → (base URL, model). The last '#' splits, as URLs may not carry one."""
    url, sep, model = spec[len("openai:"):].rpartition("#")
    if not sep:
        url, model = model, ""
    if not url.strip():
        raise ValueError(f"{kind} {spec!r} has no base URL; write openai:BASE_URL#MODEL, e.g. "
                         "openai:http://127.0.0.1:11434#nomic-embed-text")
    return url.strip(), model.strip()


def make_embedder(kind: str | None, secrets: Mapping[str, str] | None = None, **kw):
    """An embedder from its spec (SPEC §15); the result's `name` is the stable identity a store records.

    `minilm` (bundled all-MiniLM-L6-v2, lazily loaded) · `hashing` (no model: tests, plumbing checks) ·
    `st:PATH` (local sentence-transformers folder) · `cohere:MODEL` (Cohere embed v2) ·
    `openai:BASE_URL#MODEL` (OpenAI-compatible /v1/embeddings). `minilm` and `hashing` are both 384-d:
    a store must be queried with the embedder that built it.
    """
    from retrieval.models.embedders import HashingEmbedder, SentenceTransformerEmbedder

    kind = (kind or "minilm").strip()
    if kind == "minilm":
        return SentenceTransformerEmbedder(**kw)
    if kind == "hashing":
        return HashingEmbedder(384)
    if kind.startswith("st:"):
        if not kind[3:].strip():
            raise ValueError("st:PATH needs a folder, e.g. st:/models/all-mpnet-base-v2")
        return SentenceTransformerEmbedder(kind[3:].strip(), **kw)
    if kind.startswith("cohere:"):
        from retrieval.models.cohere_embedder import CohereEmbedder

        return CohereEmbedder(kind[len("cohere:"):], secrets=secrets, **kw)
    if kind.startswith("openai:"):
        from retrieval.models.openai_embedder import OpenAIEmbedder

        url, model = split_openai_spec(kind, "embedder")
        return OpenAIEmbedder(url, model, secrets=secrets, **kw)
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")


GENERATORS = ("gemma", "cohere", "openai:BASE_URL#MODEL")


def make_reranker(spec: str | None, secrets: Mapping[str, str] | None = None, **kw):
    from retrieval.models.rerankers import CohereReranker, CrossEncoderReranker, EmbeddingReranker

    spec = (spec or "none").strip()
    if spec == "none":
        return None
    if spec == "embedding":
        return EmbeddingReranker(**kw)
    if spec == "cohere":
        return CohereReranker(secrets=secrets, **kw)
    if spec.startswith("cross-encoder:"):
        return CrossEncoderReranker(spec.split(":", 1)[1])
    raise ValueError(f"unknown reranker {spec!r}; choose one of {', '.join(RERANKERS)}")


def make_generator(spec: str | None, secrets: Mapping[str, str] | None = None, **kw):
    from retrieval.models.generators import CohereGenerator, LocalGemmaGenerator, OpenAICompatibleGenerator

    spec = (spec or "gemma").strip()
    if spec == "gemma":
        return LocalGemmaGenerator(**kw)
    if spec == "cohere":
        return CohereGenerator(secrets=secrets, **kw)
    if spec.startswith("openai:"):
        url, model = split_openai_spec(spec, "generator")
        return OpenAICompatibleGenerator(url, model or "default", secrets=secrets, **kw)
    raise ValueError(f"unknown generator {spec!r}; choose one of {', '.join(GENERATORS)}")


def make_hyde(spec: str | None, secrets: Mapping[str, str] | None = None, **kw):
    from retrieval.models.generators import HydeGenerator

    if (spec or "none") == "none":
        return None
    return HydeGenerator(make_generator(spec, secrets=secrets, **kw))
