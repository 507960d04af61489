"""Rerankers: `name` and `score(query, texts) -> list[float]` in [0, 1]. One class per backend."""
from __future__ import annotations

import math
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable
from collections.abc import Mapping, Sequence

import numpy as np

from retrieval.models.credentials import (COHERE, operator_base_url, operator_credential, parse_base_url, same_origin,
                                          secret_values)
from retrieval.models.errors import BackendError, http_error, scrub


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


class EmbeddingReranker:
    """Offline default: cosine of the original query and each text with the bundled MiniLM,
    clamped to [0, 1]. A bi-encoder stand-in, not a cross-encoder: weak, but real work under HyDE
    (the dense side searched the hypothesis) and for split-on-ambiguous (halves score alone)."""

    name = "embedding (MiniLM bi-encoder stand-in)"

    def __init__(self, embedder=None):
        self._embedder = embedder

    def __repr__(self) -> str:
        return f"EmbeddingReranker(embedder={self.embedder!r})"

    @property
    def embedder(self):
        if self._embedder is None:
            from retrieval.models.embedders import SentenceTransformerEmbedder

            self._embedder = SentenceTransformerEmbedder()
        return self._embedder

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        vecs = self.embedder.embed([query, *texts])
        cos = vecs[1:] @ vecs[0]
        return [float(min(1.0, max(0.0, c))) for c in cos]


class CrossEncoderReranker:
    """Any local sentence-transformers cross-encoder directory; logits → sigmoid.

    None is bundled: no cross-encoder is distributable here (a bi-encoder directory loaded as a
    cross-encoder gets a random head and meaningless scores).
    """

    def __init__(self, model_path: str | Path):
        self.model_path = Path(model_path)
        if not (self.model_path / "config.json").is_file():
            raise ValueError(f"{model_path} is not a local model directory (no config.json); "
                             "download a cross-encoder (e.g. ms-marco-MiniLM-L-6-v2) elsewhere and point here")
        self.name = f"cross-encoder ({self.model_path.name})"

    def __repr__(self) -> str:
        return f"CrossEncoderReranker(model_path={str(self.model_path)!r})"

    @cached_property
    def model(self):
        from retrieval.models.embedders import load_sentence_transformer

        return load_sentence_transformer(self.model_path, kind="cross")

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        import torch

        logits = np.asarray(self.model.predict([(query, t) for t in texts], activation_fn=torch.nn.Identity(),
                                               show_progress_bar=False), dtype=np.float64).reshape(len(texts), -1)[:,
                                                                                                                   -1]
        return [1.0 / (1.0 + math.exp(-float(x))) for x in logits]


def resolve_cohere(api_key: str | None, base_url: str | None, secrets: Mapping[str, str] | None = None, *,
                   who: str = "the Cohere reranker",
                   offline: str = "pick the offline 'embedding' reranker") -> tuple[str, str, tuple[str, ...]]:
    """(key to send, base URL to call, secrets to scrub) for a Cohere client; `who` (the reranker, an embedder,
    the generator) and its `offline` alternative are what a missing key's error names.

    An explicit `api_key` goes where the caller points it. The operator's key (Streamlit `secrets`,
    then COHERE_API_KEY / CO_API_KEY) goes only to the operator's COHERE_BASE_URL origin (default
    https://api.cohere.com); another `base_url` is called with an empty key, never the configured one.
    """
    cred = operator_credential(COHERE, secrets)
    base = parse_base_url(base_url) if base_url else cred.base if cred else parse_base_url(
        operator_base_url(COHERE, secrets))
    if base.username or base.password or base.query:
        raise ValueError(f"Cohere base URL {base.display} carries credentials or a query string; give a plain "
                         "URL and put the key in COHERE_API_KEY (environment or Streamlit secrets)")
    key = api_key or (cred.key_for(base) if cred else None)
    if not key:
        if cred is None and same_origin(base, operator_base_url(COHERE, secrets)):
            raise ValueError(f"{who} needs a Cohere API key: set COHERE_API_KEY (or CO_API_KEY) in the "
                             "environment, or in the app's Streamlit secrets (.streamlit/secrets.toml); "
                             f"or {offline}")
        key = ""  # not None: the cohere package would fall back to CO_API_KEY and send it anywhere
    return key, base.request_url(), secret_values(api_key, cred, base)


def cohere_client(api_key: str, base_url: str | None, timeout: float):
    try:
        import cohere
    except ImportError as exc:  # pragma: no cover
        raise ImportError("pip install cohere==7.3.1 (see requirements.txt)") from exc
    # No base_url (None or "") leaves the SDK's default, as its own default of None does.
    return cohere.ClientV2(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0)


def cohere_failure(backend: str, exc: Exception, *secrets: str) -> BackendError:
    """Turn any Cohere SDK/transport exception into a BackendError that never shows the key."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return http_error(backend, status, *secrets)
    name = type(exc).__name__
    if "Timeout" in name:
        return BackendError(f"{backend}: timed out; the server did not answer in time (check base_url/network)")
    if "Connect" in name:
        return BackendError(f"{backend}: cannot connect; is the server reachable? ({name})")
    return BackendError(scrub(f"{backend}: {name}: {exc}", *secrets)[:300])


class CohereReranker:
    """Hosted rerank (`POST /v2/rerank`). `base_url` points it at a proxy or a local fake server."""

    def __init__(self, api_key: str | None = None, model: str = "rerank-v3.5", base_url: str | None = None,
                 timeout: float = 10.0, secrets: Mapping[str, str] | None = None):
        self._key, self.base_url, self._secrets = resolve_cohere(api_key, base_url, secrets)
        self.model = model
        self.timeout = timeout
        self.name = f"cohere ({model})"

    def __repr__(self) -> str:  # never the key
        return f"CohereReranker(model={self.model!r}, base_url={self.base_url!r})"

    @cached_property
    def client(self):
        return cohere_client(self._key, self.base_url, self.timeout)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        try:
            resp = self.client.rerank(model=self.model, query=query, documents=list(texts), top_n=len(texts))
            results = resp.results
        except Exception as exc:
            raise cohere_failure("Cohere rerank", exc, *self._secrets) from None
        scores = [0.0] * len(texts)
        seen = 0
        for r in results or []:
            if not 0 <= r.index < len(texts):
                raise BackendError(f"Cohere rerank: result index {r.index} is out of range for {len(texts)} texts")
            scores[r.index] = float(min(1.0, max(0.0, r.relevance_score)))
            seen += 1
        if seen != len(texts):
            raise BackendError(f"Cohere rerank: got {seen} scores for {len(texts)} texts")
        return scores
