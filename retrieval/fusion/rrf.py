"""Weighted reciprocal rank fusion (SPEC §4; Cormack, Clarke & Büttcher 2009):
score(id) = Σ_i weights[i] / (k + rank_i(id)), ranks counted from `rank_start` in each list; a list that lacks
the id contributes 0."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.fusion.base import Fused, FusionStrategy, Param, _check_weights, g4


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


@dataclass(frozen=True, repr=False)
class RRF(FusionStrategy):
    """Weighted RRF as a registered strategy: `k` flattens rank differences; scores are not read."""

    name = "rrf"
    short = "RRF"
    title = "RRF (ranks)"
    in_words = ("weighted reciprocal rank fusion (by ranks only: each list adds its weight divided by k plus the "
                "trace's rank there)")
    formula = "w_d/(k+rank_d) + w_s/(k+rank_s)"
    params = (Param("rrf_k", "k", "float", 60.0, 0.0, 1000.0, 1.0, lo_open=True, ui=(1, 200), grid=(5, 10, 20, 60),
                    help="Higher k flattens rank differences (RRF only).", label="RRF k"),)
    weights: tuple[float, float] = (0.5, 0.5)
    k: float = 60.0

    def fuse(self, score_lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[Fused]:
        return reciprocal_rank_fusion([[i for i, _ in lst] for lst in score_lists], weights=weights, k=self.k)

    def term(self, weight: float, rank: int | None, contribution: float,  # noqa: ARG002
             fmt: Callable[[Any], str] = g4) -> str:
        return "not in this list: 0" if rank is None else f"{fmt(weight)} / ({fmt(self.k)} + {rank})"

    def explain_title(self, fmt: Callable[[Any], str] = g4) -> str:
        return f"RRF: each list adds weight / (k + rank), k = {fmt(self.k)}"
