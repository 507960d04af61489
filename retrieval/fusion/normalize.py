"""Per-list score normalisation into [0, 1] (SPEC §13): min-max, theoretical (Bruch, Gai & Ingber 2023) and
z-score (mean ± 3σ, as Qdrant's DBSF). Pure; shared by the score-based strategies."""
from __future__ import annotations

import math
from collections.abc import Sequence

from retrieval.fusion.base import _Choice


class Normalization(_Choice):
    """How a convex fusion puts one list's scores into [0, 1] (`normalize`)."""

    MINMAX = "minmax"
    THEORETICAL = "theoretical"
    ZSCORE = "zscore"


NORMALIZATIONS = tuple(m.value for m in Normalization)


def _check_method(method: str) -> None:
    Normalization.from_str(method)


def _check_bound(lower_bound: float, where: str) -> float:
    lower_bound = float(lower_bound)
    if not math.isfinite(lower_bound):
        raise ValueError(f"{where}={lower_bound!r} is not finite; give the score's theoretical minimum "
                         "(cosine -1.0 or 0.0, BM25 0.0)")
    return lower_bound


def _scaled(values: Sequence[float], *also: float) -> list[float]:
    """`values` then `also`, each times 2**-e where 2**e is just above the largest magnitude, so every result
    lies in (-1, 1): no difference, square or sum of them can overflow, and a spread of tiny or subnormal
    scores is lifted clear of underflow. A power of two changes no rounding, so ordinary inputs give the very
    same normalised values as unscaled; `ldexp` is monotone, so an order is never reversed (a value far below
    the largest may underflow to 0, never past a larger one)."""
    _, e = math.frexp(max(abs(v) for v in (*values, *also)))  # 0.0 → e = 0: nothing to scale
    return [math.ldexp(v, -e) for v in (*values, *also)]


def _normalize(scores: Sequence[float], method: str, lower_bound: float) -> list[float]:
    """`normalize` without validation: inputs already checked by the caller. Total on finite input: every
    result in [0, 1], a higher score never normalised below a lower one, no exception."""
    n = len(scores)
    if n == 0:
        return []
    if method == "minmax":
        if max(scores) == min(scores):
            # Nothing separates the members, and each was retrieved: score them all as the list's best
            # (1.0), so a one-candidate list still outweighs absence.
            return [1.0] * n
        xs = _scaled(scores)
        lo, hi = min(xs), max(xs)
        flat = 1.0
    elif method == "theoretical":
        # Bruch, Gai & Ingber 2023 ("theoretical min-max"): the scoring function's own minimum replaces the
        # observed one, so a list whose scores are all weak is not stretched to [0, 1]; the observed max stays
        # the upper bound.
        if max(scores) <= lower_bound:
            # Every score is at or below the floor: nothing above the theoretical minimum, so 0.0.
            return [0.0] * n
        # A score below the floor normalises to 0 whatever its size: clamped first, so it cannot widen the scale.
        *xs, lo = _scaled([max(s, lower_bound) for s in scores], lower_bound)
        hi = max(xs)
        flat = 0.0
    else:  # zscore — Qdrant's distribution-based score fusion (DBSF): mean ± 3σ mapped onto [0, 1].
        if n < 2 or max(scores) == min(scores):
            # σ = 0 (one score, or all equal): every score sits at the mean, the middle of [μ-3σ, μ+3σ];
            # Qdrant returns 0.5 here too. Tested on min == max, not σ == 0, since a float mean of equal
            # values can be off by an ulp and give a tiny, meaningless σ.
            return [0.5] * n
        xs = _scaled(scores)
        mu = math.fsum(xs) / n
        # Sample standard deviation (n − 1), as Qdrant's Welford estimate.
        sigma = math.sqrt(math.fsum((x - mu) ** 2 for x in xs) / (n - 1))
        lo, hi = mu - 3.0 * sigma, mu + 3.0 * sigma
        flat = 0.5
    span = hi - lo
    if not span > 0.0:  # unreachable after scaling (min ≠ max keeps a spread ≥ 2**-54); total regardless
        return [flat] * n
    return [min(1.0, max(0.0, (x - lo) / span)) for x in xs]


def normalize(scores: Sequence[float], method: str, lower_bound: float = 0.0) -> list[float]:
    """Normalise one list's scores into [0, 1] (clipped) by `method`, one of `NORMALIZATIONS`.

    - `"minmax"`: (s − min) / (max − min) over this list; all scores equal (or one score) → 1.0 each.
    - `"theoretical"`: (s − lower_bound) / (max − lower_bound) (Bruch, Gai & Ingber 2023); max ≤
      lower_bound → 0.0 each. Scores below the bound clip to 0.
    - `"zscore"`: (s − (μ − 3σ)) / 6σ, sample σ (Qdrant's DBSF); σ = 0 (one score, or all equal) →
      0.5 each. Scores beyond μ ± 3σ clip to 0 or 1.

    `lower_bound` is used only by `"theoretical"`. Pure; `[]` → `[]`.
    """
    _check_method(method)
    lower_bound = _check_bound(lower_bound, "lower_bound")
    scores = [float(s) for s in scores]
    for j, s in enumerate(scores):
        if not math.isfinite(s):
            raise ValueError(f"scores[{j}]={s!r} is not finite; scores must be finite numbers")
    return _normalize(scores, method, lower_bound)
