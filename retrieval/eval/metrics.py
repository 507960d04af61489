"""Ranking metrics as pure functions over id lists and graded judgments, and a paired bootstrap interval.

`qrels` maps doc id → grade (0 = not relevant). Conventions follow trec_eval / BEIR:
nDCG uses gain = grade and log2(rank+1) discounts; Recall@k counts grade > 0.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def dcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    return sum(qrels.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg_at_k(ranked, qrels, k) / idcg if idcg > 0 else 0.0


def mrr(ranked: Sequence[str], qrels: Mapping[str, float], k: int | None = None) -> float:
    for i, d in enumerate(ranked[:k] if k else ranked):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evidence_recall_at_k(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """LoCoMo: share of a question's evidence turns found in the top k (duplicates counted once)."""
    ev = set(evidence)
    if not ev:
        return 0.0
    return len(ev & set(ranked[:k])) / len(ev)


def overlap_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """Share of the first k of `a` that are also in the first k of `b` (|A∩B| / k; 1.0 for two empty lists)."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    top_a, top_b = list(dict.fromkeys(a))[:k], set(list(dict.fromkeys(b))[:k])
    depth = max(len(top_a), len(top_b))
    return 1.0 if depth == 0 else len(top_b & set(top_a)) / min(k, depth)


def rank_biased_overlap(a: Sequence[str], b: Sequence[str], p: float = 0.9, depth: int | None = None) -> float:
    """Rank-biased overlap of two rankings (Webber, Moffat & Zobel, TOIS 2010), extrapolated (RBO_ext, eq. 32).

    Top-weighted similarity in [0, 1]: 1 for identical lists, 0 for disjoint ones; `p` is the persistence (0.9 puts
    ~86 % of the weight on the first 10 ranks). Lists may differ in length (the extrapolation of eq. 32 handles it);
    duplicates after their first occurrence are ignored. `depth` truncates both lists first.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    s_list, l_list = list(dict.fromkeys(a))[:depth], list(dict.fromkeys(b))[:depth]
    if len(s_list) > len(l_list):
        s_list, l_list = l_list, s_list
    s, length = len(s_list), len(l_list)
    if length == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_s: set[str] = set()
    seen_l: set[str] = set()
    overlap = 0  # X_d = |S[:d] ∩ L[:d]|
    total = 0.0
    x_s = 0
    for d in range(1, length + 1):
        item_l = l_list[d - 1]
        seen_l.add(item_l)
        if d <= s:
            item_s = s_list[d - 1]
            overlap += item_s in seen_l  # L[:d] already holds item_l
            overlap += item_l != item_s and item_l in seen_s  # S[:d-1]; equal items counted once above
            seen_s.add(item_s)
        else:
            overlap += item_l in seen_s
        if d == s:
            x_s = overlap
        # eq. 32: sum_{d=1}^{l} X_d/d p^d + sum_{d=s+1}^{l} X_s (d - s)/(s d) p^d
        total += overlap / d * p ** d
        if d > s:
            total += x_s * (d - s) / (s * d) * p ** d
    x_l = overlap
    return (1 - p) / p * total + ((x_l - x_s) / length + x_s / s) * p ** length


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class PairedInterval:
    """Mean of B − A over paired queries with a bootstrap confidence interval (`paired_bootstrap`)."""

    mean_a: float
    mean_b: float
    delta: float  # mean(b) − mean(a), the observed difference
    lo: float
    hi: float
    n: int
    resamples: int
    confidence: float

    @property
    def above_zero(self) -> bool:
        return self.lo > 0

    @property
    def below_zero(self) -> bool:
        return self.hi < 0

    def as_dict(self, digits: int = 4) -> dict[str, float | int]:
        return {k: round(v, digits) if isinstance(v, float) else v for k, v in asdict(self).items()}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 10_000, confidence: float = 0.95,
                     seed: int = 0) -> PairedInterval:
    """Percentile bootstrap of mean(b − a): queries are resampled with replacement, a query's two scores together.

    Deterministic for a given `seed` (numpy's PCG64). Efron & Tibshirani (1993) ch. 13; Sakai (SIGIR 2006) for IR.
    """
    if len(a) != len(b):
        raise ValueError(f"paired scores need equal lengths; got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("paired_bootstrap needs at least one pair of scores")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} must be in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples={resamples!r} must be >= 1")
    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    n = len(d)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    chunk = max(1, 2_000_000 // n)  # at most ~16 MB of indices at a time
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = d[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return PairedInterval(mean(list(map(float, a))), mean(list(map(float, b))), float(d.mean()), float(lo), float(hi),
                          n, resamples, confidence)
