"""`cohere:MODEL`: Cohere embed v2 through the cohere package; traces are embedded as
`search_document`, queries as `search_query` (the model is asymmetric)."""
from __future__ import annotations

import time
from functools import cached_property
from collections.abc import Callable, Mapping

from retrieval.models.embedders import HostedEmbedder
from retrieval.models.errors import BackendError
from retrieval.models.http import retry_after_seconds
from retrieval.models.rerankers import cohere_client, cohere_failure, resolve_cohere

# Widths of Cohere's published embed models, so opening a store needs no call; others are learned.
KNOWN_DIMS = {"embed-v4.0": 1536, "embed-english-v3.0": 1024, "embed-multilingual-v3.0": 1024,
              "embed-english-light-v3.0": 384, "embed-multilingual-light-v3.0": 384}
INPUT_TYPES = {"document": "search_document", "query": "search_query"}
MAX_BATCH = 96  # Cohere's per-call limit


class CohereEmbedder(HostedEmbedder):
    """Key: `api_key` as given, else the operator's COHERE_API_KEY only for the operator's
    COHERE_BASE_URL origin (default https://api.cohere.com)."""

    def __init__(self, model: str = "embed-v4.0", dim: int | None = None, api_key: str | None = None,
                 base_url: str | None = None, secrets: Mapping[str, str] | None = None, batch_size: int = MAX_BATCH,
                 timeout: float = 30.0, max_retries: int = 3, max_retry_wait: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep):
        if not model or not model.strip():
            raise ValueError("cohere:MODEL needs a model name, e.g. cohere:embed-v4.0")
        if not 1 <= int(batch_size) <= MAX_BATCH:
            raise ValueError(f"batch_size must be 1 to {MAX_BATCH} (Cohere's limit), got {batch_size!r}")
        if dim is not None and int(dim) < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.model = model.strip()
        self._key, self.base_url, self._secrets = resolve_cohere(
            api_key, base_url, secrets, who=f"the embedder 'cohere:{model.strip()}'",
            offline="for a new store, pick an offline embedder (--embedder minilm)")
        self._dim = int(dim) if dim is not None else KNOWN_DIMS.get(self.model)
        self._dim_source = "configured" if dim is not None else "Cohere's published width for this model"
        self.batch_size = int(batch_size)
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.sleep = sleep
        self.name = f"cohere:{self.model}"
        self.backend = f"Cohere embed ({self.model})"

    def __repr__(self) -> str:  # never the key
        return f"CohereEmbedder(model={self.model!r}, base_url={self.base_url!r}, dim={self._dim})"

    @cached_property
    def client(self):
        return cohere_client(self._key, self.base_url, self.timeout)

    def _embed_batch(self, texts: list[str], kind: str) -> list:
        attempt = 0
        while True:
            try:
                resp = self.client.embed(model=self.model, input_type=INPUT_TYPES[kind], texts=texts,
                                         embedding_types=["float"])
                rows = resp.embeddings.float_
                break
            except Exception as exc:
                wait = self._retry_wait(exc, attempt)
                if wait is None:
                    raise cohere_failure(self.backend, exc, *self._secrets) from None
                attempt += 1
                self.sleep(wait)
        if rows is None:
            raise BackendError(f"{self.backend}: the response has no float embeddings")
        return rows

    def _retry_wait(self, exc: Exception, attempt: int) -> float | None:
        if getattr(exc, "status_code", None) not in (429, 503) or attempt >= self.max_retries:
            return None
        headers = {str(k).lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
        wait = retry_after_seconds(headers.get("retry-after"))
        wait = min(self.max_retry_wait, 0.5 * 2 ** attempt) if wait is None else wait
        return wait if wait <= self.max_retry_wait else None
