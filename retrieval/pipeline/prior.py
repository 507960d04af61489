"""A bounded prior: fuse relevance first, then let recency and importance nudge the fused order.

The cognitive score (SPEC §2) mixes similarity with terms that know nothing of the query — strength,
recency, emotional, graph, importance. Fused as it is, those terms move a hit by however much they weigh
against the spread of similarities, which under a realistic clock lifts the latest session over
better matches. Here they act after fusion, as a multiplier with a fixed ceiling:

    final = fused × (1 + w · prior),   prior ∈ [0, 1],   w ≥ 0

so no trace gains more than a factor (1 + w) over another with the same relevance, whatever the clock.
`prior` is the cognitive score without its similarity term, renormalised to [0, 1] (`cognitive_prior`).

Pure functions, opt-in: nothing in the pipeline calls them unless a preset asks for a prior weight
(see the evaluation in `retrieval.eval.designs`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from retrieval.facts.classifiers import is_temporal
from retrieval.store.cognitive import DEFAULT_SCORING_WEIGHTS
from retrieval.types import ScoreBreakdown, ScoredMemoryTrace

PRIOR_TERMS = ("strength", "recency", "emotional", "graph", "importance")  # every cognitive term but similarity


def check_prior_weight(weight: float) -> float:
    """`weight` as a float >= 0 and finite, else ValueError naming it."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise ValueError(f"prior weight {weight!r} must be a finite number >= 0 (0 = no prior)")
    return float(weight)


def check_terms(terms: Sequence[str]) -> tuple[str, ...]:
    """`terms` as a non-empty tuple of `PRIOR_TERMS`, else ValueError naming the allowed ones."""
    terms = tuple(terms)
    if not terms or any(t not in PRIOR_TERMS for t in terms):
        raise ValueError(f"prior terms {terms!r} must be a non-empty subset of {', '.join(PRIOR_TERMS)}")
    return terms


def cognitive_prior(parts: ScoreBreakdown, weights: Mapping[str, float] = DEFAULT_SCORING_WEIGHTS,
                    terms: Sequence[str] = PRIOR_TERMS) -> float:
    """Σ w_t · part_t / Σ w_t over `terms` (default: every term but similarity), in [0, 1] (each part clamped);
    0 when those weights sum to 0. `terms=("recency",)` is the recency term alone."""
    terms = check_terms(terms)
    total = sum(weights[t] for t in terms)
    if total <= 0:
        return 0.0
    return sum(weights[t] * min(1.0, max(0.0, getattr(parts, t))) for t in terms) / total


def with_prior(score: float, prior: float, weight: float) -> float:
    """`score × (1 + weight · prior)` with `prior` clamped to [0, 1]; a fused score is >= 0 (ValueError if not)."""
    if not score >= 0:
        raise ValueError(f"fused score {score!r} must be >= 0 for a multiplicative prior")
    return score * (1.0 + check_prior_weight(weight) * min(1.0, max(0.0, prior)))


def prior_weight_for(query: str, weight: float, temporal_only: bool = False) -> float:
    """The weight a query gets: `weight`, or 0 for a non-temporal question when `temporal_only`."""
    weight = check_prior_weight(weight)
    return weight if not temporal_only or is_temporal(query) else 0.0


def apply_prior(pool: Sequence[ScoredMemoryTrace], weight: float,
                weights: Mapping[str, float] = DEFAULT_SCORING_WEIGHTS,
                terms: Sequence[str] = PRIOR_TERMS) -> list[ScoredMemoryTrace]:
    """The fused pool re-scored by `with_prior` of each trace's breakdown and re-sorted (score desc, id asc).

    Weight 0 returns the pool as it is (same order, same scores): the prior is off.
    """
    weight = check_prior_weight(weight)
    if weight == 0:
        return list(pool)
    terms = check_terms(terms)
    out = [replace(t, retrieval_score=with_prior(t.retrieval_score, cognitive_prior(t.score_breakdown, weights, terms),
                                                 weight)) for t in pool]
    return sorted(out, key=lambda t: (-t.retrieval_score, t.id))


__all__ = ["PRIOR_TERMS", "apply_prior", "check_prior_weight", "check_terms", "cognitive_prior", "prior_weight_for",
           "with_prior"]
