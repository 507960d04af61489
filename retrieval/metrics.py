"""Every ranking metric the project reports, in one module: pure functions over id lists and graded judgments.

`qrels` maps doc id → grade (0 = not relevant). Two families, checked against each other on random rankings
(`tests/test_judgments.py`):

- hand-computed, per query (`recall_at_k`, `ndcg_at_k`, `mrr`, `evidence_recall_at_k`): what evaluation runs,
  the fusion lab and the benchmarks score with. Conventions follow trec_eval / BEIR: nDCG uses gain = grade and
  log2(rank+1) discounts; Recall@k counts grade > 0.
- trec_eval's own definitions through ir-measures (`evaluate`, `mean_metrics`): what snapshots carry. ir-measures,
  not ranx: it adds one 1 MB C extension to the numpy/scipy we already have and imports in 0.06 s; ranx pulls
  numba, llvmlite, pandas and matplotlib (~300 MB) and imports in 2.9 s. Conventions (trec_eval): gain = grade;
  relevant = grade >= 1; P@k divides by k even when fewer were retrieved; judged@k = share of the retrieved top k
  (min(k, retrieved)) that has any grade (0 included). A query with no judgment at all is not scored ("ungraded",
  not 0). ERR@k (Chapelle et al. 2009) is ours: trec_eval has no ERR. A grade g stops the user with probability
  (2^g - 1) / 2^gmax, gmax the top of the case's scale.

Facts in a ranked list (`credited`): a fact-graph trace in a final list carries the information of the stored trace it
was read from, and judgments grade stored traces, so every metric scores it as that source trace, the first time the
source appears (a later copy is dropped, never counted twice). Every metric on every page, the CLI and the browser's
live panel scores the credited list; the map comes from the record (`Diagnostics.credit`).

Beside them: how alike two rankings are (`overlap_at_k`, `rank_biased_overlap`) and the paired bootstrap interval
every default decision and every shown delta carries (`paired_bootstrap`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np


def credited(ids: Sequence[str], credit: Mapping[str, str]) -> list[str]:
    """`ids` with each fact-graph trace replaced by its source (`credit`: fact trace id -> source trace id), first
    appearance kept. The one rule for facts in a scored list; the browser applies the same map (ui/refuse/case.mjs)."""
    return list(dict.fromkeys(credit.get(i, i) for i in ids))


def fact_credit(fact_traces: Sequence, facts: Sequence) -> dict[str, str]:
    """{fact-graph trace id: the trace its fact was read from} of one search's injected `fact_traces` and their
    `facts` (aligned index for index; an id may carry a `#2` suffix, so it is read from the trace, not rebuilt from
    the fact). A fact with no source is left as itself (ungraded)."""
    return {t.id: f.source_trace_ids[0] for t, f in zip(fact_traces, facts) if f.source_trace_ids}


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

    # The one way an interval is written (Compare, Tune, Snapshots, calibration, the CLI).
    @property
    def verdict(self) -> str:
        return "above 0" if self.above_zero else "below 0" if self.below_zero else "includes 0"

    def bounds(self, digits: int = 4) -> str:
        """`[+0.0012, +0.0034]`"""
        return f"[{self.lo:+.{digits}f}, {self.hi:+.{digits}f}]"

    def cell(self, digits: int = 4) -> str:
        """`[-0.0039, +0.0102] includes 0`: the interval in a table cell."""
        return f"{self.bounds(digits)} {self.verdict}"

    def describe(self, digits: int = 4, over: str = "queries") -> str:
        """`+0.0030, 95 % interval [-0.0039, +0.0102] over 997 queries (includes 0)`"""
        return (f"{self.delta:+.{digits}f}, {self.confidence:.0%} interval {self.bounds(digits)} over {self.n} "
                f"{over} ({self.verdict})").replace("%", " %", 1)


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


def measure_names(k: int = 10) -> dict[str, str]:
    """Our metric name -> the ir-measures measure it is computed by."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return {f"ndcg@{k}": f"nDCG@{k}", f"recall@{k}": f"R@{k}", "mrr": "RR", f"p@{k}": f"P@{k}",
            f"judged@{k}": f"Judged@{k}"}


def metric_names(k: int = 10) -> list[str]:
    """Every metric a snapshot carries: ir-measures' and ERR@k."""
    return [*measure_names(k), f"err@{k}"]


METRICS = tuple(metric_names(10))


def err_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10, max_grade: int = 3) -> float:
    """Expected reciprocal rank of the top `k` (an id without a grade stops nobody)."""
    if max_grade < 1:
        raise ValueError(f"max_grade must be at least 1, got {max_grade}")
    err, go_on = 0.0, 1.0
    for r, d in enumerate(list(dict.fromkeys(ranked))[:k], 1):
        g = max(int(qrels.get(d, 0)), 0)
        stop = (2 ** g - 1) / 2 ** max_grade
        err += go_on * stop / r
        go_on *= 1 - stop
    return err


def _run(ranked: Sequence[str]) -> dict[str, float]:
    """A ranking as trec_eval scores: strictly decreasing, so its tie-break (by doc id) never applies."""
    ids = list(dict.fromkeys(ranked))
    return {d: float(len(ids) - i) for i, d in enumerate(ids)}


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
             k: int = 10, max_grade: int = 3) -> dict[str, dict[str, float]]:
    """{qid: {metric: value}} for every query that has a ranking and at least one judgment.

    A judged query whose ranking is empty scores 0 everywhere (trec_eval would skip it).
    """
    import ir_measures

    names = measure_names(k)
    parsed = {ir_measures.parse_measure(v): n for n, v in names.items()}
    judged = {q: {d: int(g) for d, g in qrels[q].items()} for q in rankings if qrels.get(q)}
    out = {q: {n: 0.0 for n in names} for q in judged}
    run = {q: _run(rankings[q]) for q in judged if rankings[q]}
    if run:
        for m in ir_measures.iter_calc(list(parsed), judged, run):
            out[m.query_id][parsed[m.measure]] = float(m.value)
    for q in judged:
        out[q][f"err@{k}"] = err_at_k(rankings[q], judged[q], k, max_grade)
    return out


def mean_metrics(per_query: Mapping[str, Mapping[str, float]], k: int = 10) -> dict[str, float]:
    """Mean of each metric over the scored queries (0.0 when none was scored)."""
    names = metric_names(k)
    vals = list(per_query.values())
    return {n: (sum(v.get(n, 0.0) for v in vals) / len(vals) if vals else 0.0) for n in names}
