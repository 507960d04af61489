"""A case, re-fused live (issue 35): each query of a case searched once, sent to the browser as plain data, and the
case's mean nDCG@k and recall@k of a setting as the library computes them.

`search_case` searches every query of a case once (a query whose search key did not change is re-fused from what the
caller holds, never searched again); `case_payload` is what the browser receives once per search: per query its
record (`retrieval.pipeline.browser.fusion_payload`), its grades (the case's policy, stale grades left out) and how
fact-graph traces are credited to their source — the same credit snapshots score with. `case_scores` is the metric:
per query `metrics.ndcg_at_k` and `metrics.recall_at_k` of the credited final list, the mean over the graded queries
(a graded query whose search failed scores 0). The browser's twin (`ui/refuse/case.mjs`) is held to it by
tests/test_refuse_case_parity.py.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval.judgments.model import Case, scope_text
from retrieval.metrics import credited, mean, ndcg_at_k, recall_at_k
from retrieval.pipeline.browser import fusion_payload

K = 10
Held = Mapping[str, Any]  # qid -> (cache key, RetrievalResult) or an error sentence


def case_scores(finals: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, float]],
                credit: Mapping[str, Mapping[str, str]] | None = None, k: int = K) -> dict[str, Any]:
    """{"ndcg", "recall": the means over the graded queries, "judged": how many, "queries": {qid: {"ndcg",
    "recall"}}} of each query's final list in `finals` (a graded query missing from `finals` scores 0)."""
    credit = credit or {}
    per: dict[str, dict[str, float]] = {}
    for qid, grades in qrels.items():
        if not grades:
            continue
        ids = credited(finals.get(qid, ()), credit.get(qid, {}))
        per[qid] = {"ndcg": ndcg_at_k(ids, grades, k), "recall": recall_at_k(ids, grades, k)}
    return {"ndcg": mean([v["ndcg"] for v in per.values()]), "recall": mean([v["recall"] for v in per.values()]),
            "judged": len(per), "queries": per}


def search_case(ws, case: Case, cfg, models=None, access=None, held: Held | None = None,
                progress: Callable[[int, int], object] | None = None) -> dict[str, Any]:
    """{qid: (cache key, result) or "an error sentence"} for every query of `case` under `cfg`: searched once, or
    re-fused from `held` when only fusion knobs changed (`factory.run_config`). One bad query loses no other."""
    from retrieval.pipeline.factory import cache_key
    from retrieval.workspace.retrievers import run_config

    held = held or {}
    out: dict[str, Any] = {}
    for n, q in enumerate(case.queries, 1):
        before = held.get(q.qid)
        try:
            result, _ = run_config(ws, cfg, q.query, q.scope, models, before if isinstance(before, tuple) else None,
                                   access)
            out[q.qid] = (cache_key(q.query, q.scope, cfg), result)
        except (ValueError, RuntimeError, OSError) as exc:
            out[q.qid] = f"{type(exc).__name__}: {exc}"
        if progress:
            progress(n, len(case.queries))
    return out


def saved_scores(case: Case, searched: Held, qrels: Mapping[str, Mapping[str, float]], k: int = K) -> dict[str, Any]:
    """`case_scores` of the finals the server assembled (the saved setting)."""
    finals, credit = {}, {}
    for qid, got in searched.items():
        if isinstance(got, tuple):
            d = got[1].diagnostics
            finals[qid], credit[qid] = list(d.stage_ids["final"]), d.credit
    return case_scores(finals, {q.qid: qrels.get(q.qid, {}) for q in case.queries}, credit, k)


def case_payload(case: Case, searched: Held, qrels: Mapping[str, Mapping[str, float]], k: int = K) -> dict[str, Any]:
    """The case as the browser re-fuses it, sent once per search: each query with its record (None when its search
    failed), grades and credit; the saved setting's scores as the library computes them."""
    queries: list[dict[str, Any]] = []
    for q in case.queries:
        got = searched.get(q.qid)
        diag = got[1].diagnostics if isinstance(got, tuple) else None
        queries.append({"qid": q.qid, "query": q.query, "scope": scope_text(q.scope),
                        "grades": {t: float(g) for t, g in qrels.get(q.qid, {}).items()},
                        "record": fusion_payload(diag) if diag is not None else None,
                        "credit": diag.credit if diag is not None else {},
                        "error": "" if diag is not None else str(got or "not searched")})
    adaptive = any(x["record"] is not None and x["record"]["adaptive"] for x in queries)
    return {"v": 1, "case": case.name, "k": k, "queries": queries, "adaptive": adaptive,
            "saved": saved_scores(case, searched, qrels, k)}
