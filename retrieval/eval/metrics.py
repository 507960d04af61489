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
