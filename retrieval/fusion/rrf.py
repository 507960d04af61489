"""Weighted reciprocal rank fusion (SPEC §4; Cormack, Clarke & Büttcher 2009):
score(id) = Σ_i weights[i] / (k + rank_i(id)), ranks counted from `rank_start` in each list; a list that lacks
the id contributes 0."""
from __future__ import annotations

import math
from collections.abc import Sequence

from retrieval.fusion.base import Fused, _check_weights


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
