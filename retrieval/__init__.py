"""Hybrid (dense + BM25) retrieval over memory traces, with per-stage diagnostics.

The public face (SPEC §17). Importing this package is cheap: it loads no model, imports neither Streamlit nor
plotly, touches no store and sets nothing; each name below is imported on first use (PEP 562).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_EXPORTS = {
    "BM25Index": "retrieval.bm25.index",
    "Fused": "retrieval.fusion", "reciprocal_rank_fusion": "retrieval.fusion",
    **{n: "retrieval.hybrid" for n in ("AGENTOS", "HYBRID", "PRESETS", "STAGES", "Explanation", "HybridRetriever",
                                       "RetrievalResult")},
    "MemoryStore": "retrieval.store.memory",
    **{n: "retrieval.types" for n in ("MemoryTrace", "Mood", "Scope", "ScoreBreakdown", "ScoredMemoryTrace")},
}

if TYPE_CHECKING:
    from retrieval.bm25.index import BM25Index
    from retrieval.fusion import Fused, reciprocal_rank_fusion
    from retrieval.hybrid import AGENTOS, HYBRID, PRESETS, STAGES, Explanation, HybridRetriever, RetrievalResult
    from retrieval.store.memory import MemoryStore
    from retrieval.types import MemoryTrace, Mood, Scope, ScoreBreakdown, ScoredMemoryTrace


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "AGENTOS", "BM25Index", "Explanation", "Fused", "HYBRID", "HybridRetriever", "MemoryStore",
    "MemoryTrace", "Mood", "PRESETS", "RetrievalResult", "STAGES", "Scope", "ScoreBreakdown",
    "ScoredMemoryTrace", "reciprocal_rank_fusion",
]
