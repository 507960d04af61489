"""Distribution-based score fusion (DBSF; Qdrant's default for hybrid queries; Mazzeschi 2023).

Each list's scores are normalised by their own distribution: with μ the mean and σ the sample standard deviation
(n − 1, as Qdrant's client) of the list's scores, lower = μ − 3σ and upper = μ + 3σ, and

    s' = (s − lower) / (upper − lower), clipped to [0, 1];

then score(id) = w_d · s'_dense(id) + w_s · s'_sparse(id), 0 from a list that lacks the id.

Edge cases, explicitly: a list with one score, or whose scores are all equal (σ = 0, the bounds collapse), gives
every member 0.5 — each sits at its list's mean, the middle of [μ − 3σ, μ + 3σ] (Qdrant does the same); an empty
list contributes nothing. Equal scores are tested as max == min, not σ == 0, since the float mean of equal values
can be an ulp off and give a tiny, meaningless σ. Scores far beyond μ ± 3σ clip to 0 or 1. The map is SPEC §13's
convex `zscore` normalisation, which scales the scores by a power of two first, so scores of extreme magnitude (a
spread whose 6σ would underflow or overflow) are mapped exactly like ordinary ones.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.fusion.base import Fused, FusionStrategy, _check_weights, g4, score_fusion
from retrieval.fusion.normalize import normalize


def dbsf_bounds(scores: Sequence[float]) -> tuple[float, float] | None:
    """(μ − 3σ, μ + 3σ) of `scores`, or None when one score or all equal (σ = 0; also when 6σ under- or
    overflows)."""
    if len(scores) < 2 or max(scores) == min(scores):
        return None
    try:
        mu = math.fsum(scores) / len(scores)
        sigma = math.sqrt(math.fsum((s - mu) ** 2 for s in scores) / (len(scores) - 1))
    except OverflowError:  # a square or a sum beyond the float range
        return None
    lo, hi = mu - 3.0 * sigma, mu + 3.0 * sigma
    return (lo, hi) if math.isfinite(hi - lo) and hi - lo > 0.0 else None


def dbsf_normalize(scores: Sequence[float]) -> list[float]:
    """Each score mapped from [μ − 3σ, μ + 3σ] onto [0, 1], clipped; 0.5 each when σ = 0 or one score; [] → [].
    Computed by the shared overflow-safe map (`normalize(…, "zscore")`: the scores are scaled by a power of two
    first), so a spread of extreme magnitude is mapped, not flattened, and the browser twin's map is this one."""
    return normalize(list(scores), "zscore")


@dataclass(frozen=True, repr=False)
class DBSF(FusionStrategy):
    """DBSF as a registered strategy: no parameter besides the weights."""

    name = "dbsf"
    short = "DBSF"
    title = "DBSF (mean ± 3σ)"
    in_words = "distribution-based score fusion (each list scaled by its mean ± 3 standard deviations)"
    formula = ("w_d·clip((s_d − (μ_d − 3σ_d)) / (6σ_d)) + w_s·clip((s_s − (μ_s − 3σ_s)) / (6σ_s)), μ and σ the mean "
               "and standard deviation of that list's scores, clip to [0, 1]")
    weights: tuple[float, float] = (0.5, 0.5)

    def fuse(self, score_lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[Fused]:
        return score_fusion(score_lists, _check_weights(weights, len(score_lists), "score lists"),
                            lambda _i, scores: dbsf_normalize(scores))

    def normalised(self, scores: Sequence[float], raw: float) -> tuple[float, str]:
        value = dbsf_normalize(scores)[list(scores).index(raw)]  # `raw` is one of the list's own scores
        bounds = dbsf_bounds(scores)
        if bounds is None:
            return value, f"{g4(value)}: one score or all equal (σ = 0), so the middle of [0, 1]"
        lo, hi = bounds
        how = f"{g4(value)} = ({g4(raw)} − lower {g4(lo)}) ÷ (upper {g4(hi)} − lower {g4(lo)}), bounds = mean ± 3 sd"
        return value, how + (", clipped to [0, 1]" if value in (0.0, 1.0) else "")
