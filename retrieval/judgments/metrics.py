"""Snapshot metrics computed by ir-measures (pytrec_eval underneath: trec_eval's own definitions).

ir-measures, not ranx: it adds one 1 MB C extension to the numpy/scipy we already have and imports
in 0.06 s; ranx pulls numba, llvmlite, pandas and matplotlib (~300 MB) and imports in 2.9 s
(docs/ENVIRONMENT). `tests/test_judgments.py` checks these numbers against the hand-computed
`retrieval.eval.metrics` on random rankings.

Conventions (trec_eval): gain = grade; relevant = grade >= 1; P@k divides by k even when fewer
were retrieved; judged@k = share of the retrieved top k (min(k, retrieved)) that has any grade
(0 included). A query with no
judgment at all is not scored (it is "unjudged", not 0).

ERR@k (Chapelle et al. 2009, expected reciprocal rank) is ours, pure: trec_eval has no ERR, and gdeval,
ir-measures' provider for it, is a Perl script. A grade g stops the user with probability (2^g - 1) / 2^gmax,
gmax the top of the case's scale.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

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
