"""Fusion of ranked lists (SPEC §4, §13): weighted RRF and convex combinations of normalised scores.

RRF (Cormack, Clarke & Büttcher 2009): score(id) = Σ_i weights[i] / (k + rank_i(id)), ranks counted
from `rank_start` in each list; a list that lacks the id contributes 0.

Convex (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023):
score(id) = Σ_i weights[i] · φ_i(s_i(id)), φ_i a per-list normalisation into [0, 1]; a list that
lacks the id contributes 0.

Pure functions over lists; both return the same `Fused` records, so explain shows either the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence
from enum import StrEnum


class _Choice(StrEnum):
    """A declared choice (as Haystack's `JoinMode`): members compare equal to their strings; `from_str` turns
    config, link and CLI text into a member or a ValueError naming the parameter and every allowed value."""

    @classmethod
    def parameter(cls) -> str:
        return cls.__name__.lower()

    @classmethod
    def from_str(cls, value: object) -> _Choice:
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
        raise ValueError(f"{cls.parameter()}={value!r} is unknown; use one of {', '.join(m.value for m in cls)}")


class Fusion(_Choice):
    """How the dense and sparse lists become one (SPEC §13)."""

    RRF = "rrf"
    CONVEX = "convex"


class Normalization(_Choice):
    """How a convex fusion puts one list's scores into [0, 1] (`normalize`)."""

    MINMAX = "minmax"
    THEORETICAL = "theoretical"
    ZSCORE = "zscore"


FUSIONS = tuple(m.value for m in Fusion)
NORMALIZATIONS = tuple(m.value for m in Normalization)


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    ranks: tuple[int | None, ...]
    contributions: tuple[float, ...]


def _check_weights(weights: Sequence[float], n: int, what: str) -> tuple[float, ...]:
    weights = tuple(float(w) for w in weights)
    if len(weights) != n:
        raise ValueError(f"got {len(weights)} weights for {n} {what}; give one weight per list")
    for i, w in enumerate(weights):
        if not math.isfinite(w):
            raise ValueError(f"weights[{i}]={w!r} is not finite; give a finite weight >= 0")
        if w < 0:
            raise ValueError(f"weights[{i}]={w!r} is negative; weights must be >= 0")
    return weights


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[str]],
    *,
    weights: Sequence[float] | None = None,
    k: float = 60,
    rank_start: int = 1,
) -> list[Fused]:
    """Fuse ranked id lists; sorted by score desc, ties by id asc. `[]` → `[]`.

    A repeated id inside one list keeps its best (first) rank.
    """
    # An infinite k (or weight) makes every term inf/inf or 0·inf, i.e. NaN, and the sort meaningless.
    if not (k > 0 and math.isfinite(k)):
        raise ValueError(f"RRF k must be > 0 and finite, got k={k!r}")
    n = len(ranked_lists)
    if weights is None:
        weights = (1.0,) * n
    weights = _check_weights(weights, n, "ranked lists")
    if n == 0:
        return []
    ranks: dict[str, list[int | None]] = {}
    for i, lst in enumerate(ranked_lists):
        for pos, doc_id in enumerate(lst):
            slot = ranks.setdefault(doc_id, [None] * n)
            if slot[i] is None:
                slot[i] = pos + rank_start
    fused = []
    for doc_id, rk in ranks.items():
        contrib = tuple(0.0 if r is None else weights[i] / (k + r) for i, r in enumerate(rk))
        fused.append(Fused(doc_id, sum(contrib), tuple(rk), contrib))
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused


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


def convex_fusion(
    score_lists: Sequence[Sequence[tuple[str, float]]],
    *,
    weights: Sequence[float],
    normalization: str = "minmax",
    lower_bounds: Sequence[float] | None = None,
) -> list[Fused]:
    """Convex combination of per-list normalised scores (SPEC §13; Bruch, Gai & Ingber 2023).

    Each list is `(id, score)` pairs in rank order, higher score better. Each list is normalised
    on its own (see `normalize`); `score(id) = Σ_i weights[i] · normalised_i(id)`, 0 from a list
    that lacks the id, so a score lies in [0, Σ weights]. `contributions[i]` is
    `weights[i] · normalised_i(id)`; `ranks[i]` is the 1-based position in list i, `None` if absent.
    `lower_bounds` (one per list, default 0.0 each) is the theoretical minimum of each list's
    scoring function, used only by `"theoretical"`: cosine −1.0 (or 0.0 when negatives are not
    expected), BM25 0.0. A repeated id inside one list keeps its first (best) occurrence and the
    repeat is left out of the list's statistics. Sorted by score desc, ties by id asc. `[]` → `[]`.
    """
    _check_method(normalization)
    n = len(score_lists)
    weights = _check_weights(weights, n, "score lists")
    if lower_bounds is None:
        bounds = (0.0,) * n
    else:
        bounds = tuple(_check_bound(b, f"lower_bounds[{i}]") for i, b in enumerate(lower_bounds))
        if len(bounds) != n:
            raise ValueError(f"got {len(bounds)} lower_bounds for {n} score lists; give one per list")
    if n == 0:
        return []
    rank_maps: list[dict[str, int]] = []
    norm_maps: list[dict[str, float]] = []
    for i, lst in enumerate(score_lists):
        ids = [p[0] for p in lst]
        scores = [float(p[1]) for p in lst]
        if not all(map(math.isfinite, scores)):
            pos = next(j for j, s in enumerate(scores) if not math.isfinite(s))
            raise ValueError(f"score_lists[{i}][{pos}] has score {scores[pos]!r} for id {ids[pos]!r}; "
                             "scores must be finite numbers")
        # Built back to front so an id's first (best) position is the one that stays.
        rank_of = {doc_id: pos for pos, doc_id in reversed(list(enumerate(ids, 1)))}
        if len(rank_of) < len(ids):
            ids = list(rank_of)
            scores = [scores[rank_of[doc_id] - 1] for doc_id in ids]
        rank_maps.append(rank_of)
        norm_maps.append(dict(zip(ids, _normalize(scores, normalization, bounds[i]))))
    fused = []
    for doc_id in dict.fromkeys(doc_id for m in rank_maps for doc_id in m):
        contrib = tuple([w * m.get(doc_id, 0.0) for w, m in zip(weights, norm_maps)])
        fused.append(Fused(doc_id, sum(contrib), tuple([m.get(doc_id) for m in rank_maps]), contrib))
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused
