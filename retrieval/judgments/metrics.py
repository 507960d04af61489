"""Snapshot metrics computed by ir-measures (pytrec_eval underneath: trec_eval's own definitions).

ir-measures, not ranx: it adds one 1 MB C extension to the numpy/scipy we already have and imports
in 0.06 s; ranx pulls numba, llvmlite, pandas and matplotlib (~300 MB) and imports in 2.9 s
(docs/ENVIRONMENT). `tests/test_judgments.py` checks these numbers against the hand-computed
`retrieval.eval.metrics` on random rankings.

Conventions (trec_eval): gain = grade; relevant = grade >= 1; P@k divides by k even when fewer
were retrieved; judged@k = share of the retrieved top k (min(k, retrieved)) that has any grade
(0 included). A query with no
judgment at all is not scored (it is "unjudged", not 0).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

def measure_names(k: int = 10) -> dict[str, str]:
    """Our metric name -> the ir-measures measure it is computed by."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return {f"ndcg@{k}": f"nDCG@{k}", f"recall@{k}": f"R@{k}", "mrr": "RR", f"p@{k}": f"P@{k}",
            f"judged@{k}": f"Judged@{k}"}


METRICS = tuple(measure_names(10))


def _run(ranked: Sequence[str]) -> dict[str, float]:
    """A ranking as trec_eval scores: strictly decreasing, so its tie-break (by doc id) never applies."""
    ids = list(dict.fromkeys(ranked))
    return {d: float(len(ids) - i) for i, d in enumerate(ids)}


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
             k: int = 10) -> dict[str, dict[str, float]]:
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
    return out


def mean_metrics(per_query: Mapping[str, Mapping[str, float]], k: int = 10) -> dict[str, float]:
    """Mean of each metric over the scored queries (0.0 when none was scored)."""
    names = measure_names(k)
    vals = list(per_query.values())
    return {n: (sum(v[n] for v in vals) / len(vals) if vals else 0.0) for n in names}
