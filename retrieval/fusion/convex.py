"""Convex fusion (SPEC §13; Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS
2023): score(id) = Σ_i weights[i] · φ_i(s_i(id)), φ_i a per-list normalisation into [0, 1] (`normalize`); a list
that lacks the id contributes 0."""
from __future__ import annotations

import math
from collections.abc import Sequence

from retrieval.fusion.base import Fused, _check_weights
from retrieval.fusion.normalize import _check_bound, _check_method, _normalize


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
