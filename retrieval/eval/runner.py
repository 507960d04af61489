"""Per-stage evaluation of a retriever on labelled queries and weight sweeps (the CLI is `cli/eval.py`)."""
from __future__ import annotations

import hashlib
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from retrieval.fusion import RRF
from retrieval.hybrid import STAGES
from retrieval.judgments.model import LabelledQuery
from retrieval.metrics import credited, evidence_recall_at_k, mean, mrr, ndcg_at_k, recall_at_k

METRICS = ("recall@10", "ndcg@10", "mrr")


def load_judgments(path: str | Path) -> list[LabelledQuery]:
    """JSONL: {"qid", "query", "scope": "user:x", "relevant": {"id": grade}, "phenomenon"?, "note"?}, read by the one
    judgments parser (`judgments.io.parse_labelled`); a bad line is a ValueError naming the file and the line."""
    from retrieval.judgments.io import parse_labelled

    return parse_labelled(Path(path).read_bytes(), Path(path).name)


def score_ranking(ranked: Sequence[str], qrels: dict[str, float], k: int = 10) -> dict[str, float]:
    return {f"recall@{k}": recall_at_k(ranked, qrels, k), f"ndcg@{k}": ndcg_at_k(ranked, qrels, k),
            "mrr": mrr(ranked, qrels)}


@dataclass
class QueryRun:
    q: LabelledQuery
    result: Any  # RetrievalResult
    per_stage: dict[str, dict[str, float]] = field(default_factory=dict)
    now: datetime | None = None  # the instant the query was scored at, when run with an evaluation clock


def credited_ids(result, stage: str) -> list[str]:
    """A stage's ids with each fact-graph trace credited to the trace it was extracted from (`metrics.credited`).

    Judgments label stored traces; an injected fact carries that trace's information, so it counts
    as retrieving its source (the first time it appears; later duplicates are dropped).
    """
    d = result.diagnostics
    return credited(d.stage_ids[stage], d.credit)


def stage_scores(result, qrels: dict[str, float], k: int = 10) -> dict[str, dict[str, float]]:
    """Metrics for every stage that ran (a stage that did not run is skipped, not scored 0)."""
    d = result.diagnostics
    # merged/reranked that did not run are skipped; an empty dense, sparse or final list scores 0 for this query
    return {s: score_ranking(credited_ids(result, s), qrels, k) for s in STAGES
            if d.stage_ids[s] or s in ("dense", "sparse", "final")}


def run_queries(retriever, queries: Iterable[LabelledQuery], progress: Callable[[int, int], object] | None = None,
                clock: Any = None, **retrieve_kw) -> list[QueryRun]:
    """Every query through `retriever`; with `clock` (a `retrieval.eval.clock.ScopeClock`, the store's clock) each
    query runs under its scope's instant, recorded as `QueryRun.now`."""
    queries = list(queries)
    runs = []
    for i, q in enumerate(queries):
        with clock.scoped(q.scope) if clock is not None else nullcontext(None) as now:
            res = retriever.retrieve(q.query, scope=q.scope, **retrieve_kw)
        runs.append(QueryRun(q, res, stage_scores(res, q.qrels), now))
        if progress:
            progress(i + 1, len(queries))
    return runs


def summarize(runs: Sequence[QueryRun]) -> list[dict[str, Any]]:
    """Mean metrics per stage; `queries` says how many queries that stage ran for."""
    rows = []
    for s in STAGES:
        vals = [r.per_stage[s] for r in runs if s in r.per_stage]
        if vals:
            rows.append({"stage": s, "queries": len(vals), **{m: mean([v[m] for v in vals]) for m in METRICS}})
    return rows


def held_out_split(qid: str) -> str:
    """Deterministic half split by a hash of the query id: 'tune' or 'held-out'."""
    return "tune" if hashlib.blake2b(qid.encode(), digest_size=2).digest()[0] % 2 == 0 else "held-out"


@dataclass
class SweepResult:
    dense_weights: list[float]
    ks: list[int]
    tune: list[list[float]]
    held_out: list[list[float]]
    best: tuple[int, int]
    metric: str

    @property
    def best_params(self) -> dict[str, Any]:
        r, c = self.best
        best = RRF(k=self.ks[c]).balanced(self.dense_weights[r])  # the cell's strategy, as `sweep` fused with it
        return {**best.weight_knobs(), "rrf_k": self.ks[c],
                "fusion": best.spec, "tune": self.tune[r][c], "held_out": self.held_out[r][c]}


def sweep(retriever, runs: Sequence[QueryRun], dense_weights: Sequence[float], ks: Sequence[int],
          metric: str = "ndcg@10", rerank_weight: float | None = None) -> SweepResult:
    """Dense weight (sparse = 1 − dense) × RRF k with RRF fusion, re-fused from cached lists (no new search);
    the fusion lab (`retrieval.eval.lab`) covers the convex functions.

    The best cell is chosen on the 'tune' half of the queries; its 'held-out' half score is reported.
    """
    halves = {"tune": [r for r in runs if held_out_split(r.q.qid) == "tune"],
              "held-out": [r for r in runs if held_out_split(r.q.qid) == "held-out"]}
    grids = {h: [[0.0] * len(ks) for _ in dense_weights] for h in halves}
    for i, w in enumerate(dense_weights):
        for j, k in enumerate(ks):
            for h, rs in halves.items():
                vals = []
                for r in rs:  # the run's settings value with this cell's strategy (and blend weight) in it
                    cell = r.result.diagnostics.settings.with_(fusion=RRF(k=k).balanced(w),
                                                               rerank_weight=rerank_weight)
                    res = retriever.reweight(r.result, cell)
                    vals.append(score_ranking(credited_ids(res, "final"), r.q.qrels)[metric])
                grids[h][i][j] = mean(vals)
    best = max(((i, j) for i in range(len(dense_weights)) for j in range(len(ks))),
               key=lambda ij: (grids["tune"][ij[0]][ij[1]], -abs(dense_weights[ij[0]] - 0.5)))
    return SweepResult(list(dense_weights), list(ks), grids["tune"], grids["held-out"], best, metric)


def per_query_deltas(a: Sequence[QueryRun], b: Sequence[QueryRun], metric: str = "ndcg@10") -> list[dict[str, Any]]:
    """Final-list metric of B minus A per query (A = baseline)."""
    rows = []
    for ra, rb in zip(a, b):
        va = ra.per_stage.get("final", {}).get(metric, 0.0)
        vb = rb.per_stage.get("final", {}).get(metric, 0.0)
        rows.append({"qid": ra.q.qid, "query": ra.q.query, "baseline": va, "config": vb, "delta": vb - va})
    return sorted(rows, key=lambda r: r["delta"])


__all__ = ["LabelledQuery", "QueryRun", "SweepResult", "evidence_recall_at_k", "load_judgments", "per_query_deltas",
           "run_queries", "stage_scores", "summarize", "sweep"]
