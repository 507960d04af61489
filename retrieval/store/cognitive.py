"""Cognitive score of a dense hit (SPEC §2, AgentOS). Pure functions, no I/O.

score = 0.25·strength + 0.35·similarity + 0.10·recency + 0.15·emotional + 0.10·graph
        + 0.05·importance, every term in [0, 1] and the result clamped to [0, 1].
"""
from __future__ import annotations

import math
from datetime import datetime
from collections.abc import Mapping

from retrieval.types import MemoryTrace, Mood, ScoreBreakdown

DEFAULT_SCORING_WEIGHTS: dict[str, float] = {
    "strength": 0.25,
    "similarity": 0.35,
    "recency": 0.10,
    "emotional": 0.15,
    "graph": 0.10,
    "importance": 0.05,
}
DAY_MS = 86_400_000.0


def _clamp01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def resolve_weights(overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Defaults with per-call overrides; unknown keys or negative values → ValueError."""
    weights = dict(DEFAULT_SCORING_WEIGHTS)
    for key, value in (overrides or {}).items():
        if key not in weights:
            raise ValueError(f"unknown scoring weight {key!r}; allowed: {', '.join(DEFAULT_SCORING_WEIGHTS)}")
        if not float(value) >= 0:
            raise ValueError(f"scoring weight {key}={value!r} must be >= 0")
        weights[key] = float(value)
    return weights


def cognitive_score(
    trace: MemoryTrace,
    cosine: float,
    now: datetime,
    mood: Mood | None = None,
    neutral_mood: bool = False,
    weights: Mapping[str, float] = DEFAULT_SCORING_WEIGHTS,
) -> tuple[float, ScoreBreakdown]:
    last = trace.last_accessed_at or trace.created_at  # never None after construction
    age_ms = max(0.0, (now - last).total_seconds() * 1000.0)
    strength = _clamp01(trace.encoding_strength * math.exp(-age_ms / trace.stability_ms))
    recency = math.exp(-age_ms / DAY_MS)
    emotional = 0.0 if (neutral_mood or mood is None) else max(0.0, mood.valence * trace.valence)
    parts = ScoreBreakdown(
        strength=strength,
        similarity=_clamp01(cosine),
        recency=recency,
        emotional=_clamp01(emotional),
        graph=0.0,  # no spreading activation in this store
        importance=_clamp01(0.5 + 0.5 * trace.confidence),
    )
    # the breakdown's field order, left to right from 0, as sum() over as_dict() adds them
    total = (0 + weights["strength"] * parts.strength + weights["similarity"] * parts.similarity
             + weights["recency"] * parts.recency + weights["emotional"] * parts.emotional
             + weights["graph"] * parts.graph + weights["importance"] * parts.importance)
    return _clamp01(total), parts
