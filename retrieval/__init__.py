"""Hybrid (dense + BM25) retrieval over memory traces, with per-stage diagnostics.

Importing this package loads no model and imports neither Streamlit nor plotly.
"""
from retrieval.bm25.index import BM25Index
from retrieval.fusion import Fused, reciprocal_rank_fusion
from retrieval.hybrid import AGENTOS, HYBRID, PRESETS, STAGES, Explanation, HybridRetriever, RetrievalResult
from retrieval.store.memory import MemoryStore
from retrieval.types import MemoryTrace, Mood, Scope, ScoreBreakdown, ScoredMemoryTrace

__all__ = [
    "AGENTOS", "BM25Index", "Explanation", "Fused", "HYBRID", "HybridRetriever", "MemoryStore",
    "MemoryTrace", "Mood", "PRESETS", "RetrievalResult", "STAGES", "Scope", "ScoreBreakdown",
    "ScoredMemoryTrace", "reciprocal_rank_fusion",
]
