"""Convex fusion (SPEC §13; Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS
2023): score(id) = Σ_i weights[i] · φ_i(s_i(id)), φ_i a per-list normalisation into [0, 1] (`normalize`); a list
that lacks the id contributes 0."""
from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.fusion.base import Fused, FusionStrategy, Param, _check_weights, g4, score_fusion
from retrieval.fusion.normalize import NORMALIZATIONS, _check_bound, _check_method, _normalize, normalize


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
    return score_fusion(score_lists, weights, lambda i, scores: _normalize(scores, normalization, bounds[i]))


@dataclass(frozen=True, repr=False)
class Convex(FusionStrategy):
    """Convex fusion as a registered strategy. The pipeline's lists are both bounded below by 0 (the cognitive
    score and BM25), so `theoretical` uses lower bound 0.0 for each."""

    name = "convex"
    short = "convex"
    title = "convex (scores)"
    in_words = "a weighted sum of the dense and BM25 scores, each list first scaled onto 0–1"
    formula = ("w_d·φ(s_d) + w_s·φ(s_s), s_d and s_s the trace's dense and BM25 scores, φ the normalisation onto "
               "[0, 1]")
    params = (Param("normalization", "normalization", "choice", "minmax", choices=NORMALIZATIONS, grid=NORMALIZATIONS,
                    help="minmax: each list to [0, 1]; theoretical: from the score's known minimum (0) to the list's "
                         "best; zscore: distribution-based (DBSF).", label="Normalisation"),)
    weights: tuple[float, float] = (0.5, 0.5)
    normalization: str = "minmax"

    def fuse(self, score_lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[Fused]:
        return convex_fusion(score_lists, weights=weights, normalization=self.normalization,
                             lower_bounds=[0.0] * len(score_lists))

    def explain_title(self, fmt: Callable[[Any], str] = g4) -> str:  # noqa: ARG002
        return f"Convex fusion ({self.normalization} normalisation): each list adds weight × its normalised score"

    def normalised(self, scores: Sequence[float], raw: float) -> tuple[float, str]:
        method = self.normalization
        value = normalize(scores, method)[list(scores).index(raw)]  # `raw` is one of the list's own scores
        lo, hi = min(scores), max(scores)
        if method == "theoretical":
            how = f"{g4(value)} = {g4(raw)} ÷ list max {g4(hi)}"
        elif method == "minmax":
            how = (f"{g4(value)}: every score in the list is equal" if hi == lo else
                   f"{g4(value)} = ({g4(raw)} − list min {g4(lo)}) ÷ (list max {g4(hi)} − min {g4(lo)})")
        elif len(scores) < 2 or hi == lo:
            how = f"{g4(value)}: one score or all equal, so the middle of [0, 1]"
        else:
            mu, sd = statistics.fmean(scores), statistics.stdev(scores)
            how = f"{g4(value)} = ({g4(raw)} − (mean {g4(mu)} − 3 × sd {g4(sd)})) ÷ (6 × sd)"
        if value in (0.0, 1.0) and method == "zscore" and len(scores) > 1 and hi != lo:
            how += ", clipped to [0, 1]"
        return value, how
