"""`openai:BASE_URL#MODEL`: any OpenAI-compatible `POST /v1/embeddings` (Ollama, vLLM,
text-embeddings-inference, OpenAI itself) over the standard library."""
from __future__ import annotations

import time
from dataclasses import replace
from collections.abc import Callable, Mapping

from retrieval.models.credentials import OPENAI, operator_credential, parse_base_url
from retrieval.models.embedders import HostedEmbedder
from retrieval.models.errors import BackendError
from retrieval.models.http import JsonEndpoint, v1_path


class OpenAIEmbedder(HostedEmbedder):
    """Symmetric by default (queries embedded like documents), as the OpenAI API has no input type.

    Key: `api_key` as given, else the operator's OPENAI_API_KEY only when `base_url` has the origin
    of the operator's OPENAI_BASE_URL (default https://api.openai.com/v1); otherwise no key.
    """

    def __init__(self, base_url: str, model: str, dim: int | None = None, api_key: str | None = None,
                 secrets: Mapping[str, str] | None = None, batch_size: int = 64, timeout: float = 30.0,
                 max_retries: int = 3, max_retry_wait: float = 30.0, sleep: Callable[[float], None] = time.sleep):
        if not model or not model.strip():
            raise ValueError("openai:BASE_URL#MODEL needs a model name after '#', e.g. "
                             "openai:http://127.0.0.1:11434#nomic-embed-text")
        if dim is not None and int(dim) < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        self.base = parse_base_url(base_url)
        self.model = model.strip()
        self._dim = int(dim) if dim is not None else None
        self.batch_size = int(batch_size)
        # `host/v1` and `host` are one endpoint, so one name.
        root = replace(self.base, path=self.base.path.removesuffix("/v1")).display
        self.name = f"openai:{root}#{self.model}"
        self.backend = f"OpenAI-compatible embeddings at {self.base.display} ({self.model})"
        self._http = JsonEndpoint(self.base, self.backend, api_key=api_key,
                                  credential=operator_credential(OPENAI, secrets), timeout=timeout,
                                  max_retries=max_retries, max_retry_wait=max_retry_wait, sleep=sleep)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(name={self.name!r}, dim={self._dim}, batch_size={self.batch_size})"

    @property
    def sends_key(self) -> bool:
        return self._http.key is not None

    def _embed_batch(self, texts: list[str], kind: str) -> list:  # noqa: ARG002 (one endpoint for both kinds)
        data = self._http.post(v1_path(self.base, "/embeddings"),
                               {"model": self.model, "input": texts, "encoding_format": "float"})
        try:
            items = sorted(data["data"], key=lambda d: d["index"])
            if [d["index"] for d in items] != list(range(len(texts))):
                raise ValueError("indices")
            return [d["embedding"] for d in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"{self.backend}: the response was not the JSON this client expects "
                               f"({type(exc).__name__}: no data[i].embedding for each of {len(texts)} inputs)"
                               ) from None
