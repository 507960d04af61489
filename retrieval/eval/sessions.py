"""The evaluations the app runs on a labelled set, as library functions: Tune's (a configuration per stage, one
fusion search with one best, and per-query wins and losses against a baseline) and Compare's (two configurations,
their final metrics and the paired intervals of B − A). The pages only draw what these return.

A `Side` is a retriever with the arguments its `retrieve` takes for one configuration (recall_top_k,
over_fetch_multiplier), so a page builds it from its settings and this module never sees a widget.
Progress reports as `progress(fraction in [0, 1], text)`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.eval.lab import Candidate, LabResult, fusion_grid, search_fusions
from retrieval.eval.runner import QueryRun, per_query_deltas, run_queries, summarize
from retrieval.judgments.model import LabelledQuery
from retrieval.metrics import PairedInterval, paired_bootstrap
from retrieval.pipeline.records import ESC_SPARSE_EMPTY

Progress = Callable[[float, str], object]
COMPARED = ("ndcg@10", "recall@10", "mrr")  # the final-list metrics Compare shows with an interval


@dataclass(frozen=True)
class Side:
    """One configuration to run: its retriever, what to call it in progress text, and its retrieve arguments."""

    retriever: Any
    name: str
    retrieve_kw: dict[str, Any] = field(default_factory=dict)

    def run(self, queries: Sequence[LabelledQuery], progress: Progress | None, start: float, share: float,
            clock: Any = None) -> list[QueryRun]:
        """Every query through this side; progress moves from `start` by `share` of the whole."""
        report = None if progress is None else (
            lambda d, t: progress(start + share * d / t, f"{self.name}: query {d} of {t}"))
        return run_queries(self.retriever, queries, progress=report, clock=clock, **self.retrieve_kw)


def _need(queries: Sequence[LabelledQuery]) -> list[LabelledQuery]:
    queries = list(queries)
    if not queries:
        raise ValueError("no labelled queries: load or pick a labelled set first")
    return queries


def stage_note(rows: Sequence[dict[str, Any]], runs: Sequence[QueryRun]) -> str:
    """Why a stage ran for fewer queries than the set holds (e.g. "merged ran for 42 of 45 queries: …")."""
    total, notes = len(runs), []
    empty = sum(1 for r in runs if any(e.startswith(ESC_SPARSE_EMPTY) for e in r.result.diagnostics.escalations))
    for r in rows:
        if r["queries"] < total and r["stage"] == "merged":
            notes.append(f"merged ran for {r['queries']} of {total} queries: for {empty}, BM25 matched no word of the "
                         "query (escalation hybrid-retriever:sparse-empty), so nothing was fused and the dense list "
                         "went straight to final")
        elif r["queries"] < total:
            notes.append(f"{r['stage']} ran for {r['queries']} of {total} queries")
    if not any(r["stage"] == "reranked" for r in rows):
        notes.append("reranked is absent: no reranker is set")
    return "; ".join(notes) + "." if notes else f"Every stage ran for all {total} queries."


@dataclass(frozen=True)
class TuneResult:
    """What Tune shows: per-stage metrics of the configuration, why a stage ran for fewer queries, final nDCG@10
    per query against the baseline (worst first), and the fusion search on the configuration's cached lists."""

    stages: list[dict[str, Any]]
    note: str
    deltas: list[dict[str, Any]]
    lab: LabResult

    @property
    def wins_losses_ties(self) -> tuple[int, int, int]:
        wins = sum(1 for d in self.deltas if d["delta"] > 1e-9)
        losses = sum(1 for d in self.deltas if d["delta"] < -1e-9)
        return wins, losses, len(self.deltas) - wins - losses


def tune(config: Side, baseline: Side, queries: Sequence[LabelledQuery], *,
         candidates: Sequence[Candidate] | None = None, progress: Progress | None = None) -> TuneResult:
    """Run the configuration and the baseline over `queries`, then search every fusion candidate (default: the one
    grid, `lab.fusion_grid()`) by re-fusing the configuration's cached lists: one search, one best by the tune
    half, judged on the held-out half."""
    queries = _need(queries)
    runs = config.run(queries, progress, 0.0, 0.5)
    base = baseline.run(queries, progress, 0.5, 0.4)
    report = None if progress is None else (
        lambda d, t: progress(0.9 + 0.1 * d / t, f"Fusion search: setting {d} of {t} (re-fusing cached lists)"))
    lab = search_fusions(runs, list(candidates) if candidates is not None else fusion_grid(), progress=report)
    rows = summarize(runs)
    return TuneResult(rows, stage_note(rows, runs), per_query_deltas(base, runs), lab)


@dataclass(frozen=True)
class SetComparison:
    """What Compare shows on a labelled set: each side's per-stage summary, final nDCG@10 per query (worst Δ for
    B first) and the paired bootstrap interval of B − A for each metric in `COMPARED`."""

    summary_a: list[dict[str, Any]]
    summary_b: list[dict[str, Any]]
    per_query: list[dict[str, Any]]
    intervals: dict[str, PairedInterval]

    def final(self, side: str) -> dict[str, Any]:
        rows = self.summary_a if side == "a" else self.summary_b
        return next(r for r in rows if r["stage"] == "final")


def final_metric(run: QueryRun, metric: str) -> float:
    return run.per_stage.get("final", {}).get(metric, 0.0)


def compare_sets(a: Side, b: Side, queries: Sequence[LabelledQuery], progress: Progress | None = None,
                 resamples: int = 10_000) -> SetComparison:
    """Run A and B over `queries` and pair their final metrics query by query."""
    queries = _need(queries)
    ra = a.run(queries, progress, 0.0, 0.5)
    rb = b.run(queries, progress, 0.5, 0.5)
    per_query: list[dict[str, Any]] = []
    for x, y in zip(ra, rb):
        va, vb = final_metric(x, "ndcg@10"), final_metric(y, "ndcg@10")
        per_query.append({"qid": x.q.qid, "query": x.q.query, "A ndcg@10": va, "B ndcg@10": vb, "Δ": vb - va})
    per_query.sort(key=lambda r: r["Δ"])
    intervals = {m: paired_bootstrap([final_metric(x, m) for x in ra], [final_metric(y, m) for y in rb],
                                     resamples=resamples) for m in COMPARED}
    return SetComparison(summarize(ra), summarize(rb), per_query, intervals)


__all__ = ["COMPARED", "SetComparison", "Side", "TuneResult", "compare_sets", "stage_note", "tune"]
