"""Evaluation only: embed every query once, in batches, before the runs.

A retriever embeds one query per call; over 1,000 LoCoMo questions × two presets × two depths that
is 4,000 single-sentence model calls. `QueryMemo` wraps the store's embedder so those vectors come
from one batched pass (the same model, the same vectors) and documents still pass straight through.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from retrieval.models.embedders import embed_queries


class QueryMemo:
    def __init__(self, inner, texts: Sequence[str], batch: int = 64):
        self.inner = inner
        self.name, self.dim = getattr(inner, "name", None), inner.dim
        texts = list(dict.fromkeys(texts))
        vecs = [np.asarray(embed_queries(inner, texts[i:i + batch]), dtype=np.float32)
                for i in range(0, len(texts), batch)]
        self._memo = dict(zip(texts, np.concatenate(vecs) if vecs else []))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, np.asarray(embed_queries(self.inner, missing), dtype=np.float32)))
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def __repr__(self) -> str:
        return f"QueryMemo({self.inner!r}, {len(self._memo)} queries)"
