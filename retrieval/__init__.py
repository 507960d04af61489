"""Hybrid (dense + BM25) retrieval over memory traces, with per-stage diagnostics.

Importing this package loads no model and imports neither Streamlit nor plotly.
"""
from .bm25 import BM25Index
from .fusion import Fused, reciprocal_rank_fusion
from .hybrid import AGENTOS, HYBRID, PRESETS, STAGES, Explanation, HybridRetriever, RetrievalResult
from .store import MemoryStore
from .types import MemoryTrace, Mood, Scope, ScoreBreakdown, ScoredMemoryTrace

__all__ = [
    "AGENTOS", "BM25Index", "Explanation", "Fused", "HYBRID", "HybridRetriever", "MemoryStore",
    "MemoryTrace", "Mood", "PRESETS", "RetrievalResult", "STAGES", "Scope", "ScoreBreakdown",
    "ScoredMemoryTrace", "reciprocal_rank_fusion",
]
