"""Run a `PipelineConfig` over a case and keep everything a later diff needs (search phase: I/O).

A snapshot keeps the configuration, all five stage lists (ids and scores) per query, the human
grades it was scored with, and the metrics of every stage. Queries are searched once each with
one retriever; a failed query is recorded on its row, never dropped.
"""
from __future__ import annotations

import time
import uuid
from datetime import datetime, UTC
from collections.abc import Callable
from typing import TYPE_CHECKING

from retrieval.history.view import WorkspaceAsOf
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import STAGES
from retrieval.types import Mood
from retrieval.metrics import evaluate, mean_metrics
from retrieval.judgments.fresh import current_hashes
from retrieval.judgments.model import SCALES, Case, Snapshot, SnapshotQuery
from retrieval.judgments.store import JudgmentStore

if TYPE_CHECKING:
    from retrieval.access import Access

Progress = Callable[[int, int], object]


def new_snapshot_id(now: float | None = None) -> str:
    """Sortable and unique: s20261130-142501-3fa2c1."""
    stamp = datetime.fromtimestamp(now if now is not None else time.time(), tz=UTC)
    return f"s{stamp:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def snapshot_query(q, result) -> SnapshotQuery:
    """The five stage lists of one `RetrievalResult`, with fact-graph traces credited to their source."""
    d = result.diagnostics
    credit = d.credit
    ids = {s: tuple(d.stage_ids[s]) for s in STAGES}
    scores = {s: tuple(float(d.stage_scores[s].get(i, 0.0)) for i in ids[s]) for s in STAGES}
    return SnapshotQuery(q.qid, q.query, q.scope, ids, scores, credit)


def score_queries(queries: tuple[SnapshotQuery, ...], qrels, k: int = 10, stages: tuple[str, ...] = STAGES,
                  max_grade: int = 3):
    """(queries with their final-list metrics, mean metrics per stage in `stages`). Pure."""
    stages = tuple(dict.fromkeys(stages + ("final",)))
    per_stage = {s: evaluate({q.qid: q.credited(s) for q in queries}, qrels, k, max_grade) for s in stages}
    scored = tuple(SnapshotQuery(q.qid, q.query, q.scope, q.stage_ids, q.stage_scores, q.credit,
                                 per_stage["final"].get(q.qid, {}), q.error) for q in queries)
    stage_means = {s: mean_metrics(per_stage[s], k) for s in stages
                   if any(q.stage_ids.get(s) for q in queries)}
    return scored, stage_means


def run_snapshot(ws, case: Case | str, cfg: PipelineConfig, js: JudgmentStore | None = None, models=None,
                 progress: Progress | None = None, label: str = "", save: bool = True, k: int | None = None, *,
                 access: Access | None = None, as_of=None) -> Snapshot:
    """Search every query of `case` with `cfg` over workspace `ws`; score with the grades the case's policy
    combines (stale grades left out) at the case's k (or `k`); store it. It records the store version it ran
    against; `as_of` (a version, tag or aware time) runs on the store as it was then (SPEC §16) — a snapshot
    re-run at its `store_version` reproduces its lists.

    `progress(done, total)` is called after each query. Raises ValueError for an unknown case or a
    config the factory rejects (before any search).
    """
    from retrieval.workspace.retrievers import build_retriever

    js = js or JudgmentStore(ws.uri)
    case = js.case(case) if isinstance(case, str) else case
    cfg = cfg.validate()
    retriever = build_retriever(ws if as_of is None else WorkspaceAsOf(ws, as_of), cfg, models)
    version = ws.store.version() if as_of is None else retriever.as_of_state.pinned.version
    mood = Mood(cfg.valence, cfg.arousal, cfg.dominance)
    t0 = time.perf_counter()
    rows = []
    for n, q in enumerate(case.queries, 1):
        try:
            res = retriever.retrieve(q.query, mood=mood, scope=q.scope)  # top k and over-fetch: cfg.settings
            rows.append(snapshot_query(q, res))
        except (ValueError, RuntimeError, OSError) as exc:  # one bad query must not lose the others
            rows.append(SnapshotQuery(q.qid, q.query, q.scope, {s: () for s in STAGES}, {s: () for s in STAGES},
                                      error=f"{type(exc).__name__}: {exc}"))
        if progress:
            progress(n, len(case.queries))
    policy = js.policy(case.name)
    k = k or policy.k
    hashes = current_hashes(js.case_judgments(case), retriever.memory_store.get)  # the store as it ran
    qrels = js.qrels(case, policy=policy, hashes=hashes)
    queries, stage_means = score_queries(tuple(rows), qrels, k, max_grade=max(SCALES[case.scale]))
    now = time.time()
    snap = Snapshot(new_snapshot_id(now), case.name, now, cfg, queries, stage_means.get("final", mean_metrics({}, k)),
                    stage_means, qrels, label, (time.perf_counter() - t0) * 1000,
                    getattr(ws.store.embedder, "name", type(ws.store.embedder).__name__), store_version=version)
    return js.save_snapshot(snap, access=access) if save else snap


def rescore(snap: Snapshot, qrels, k: int = 10, stages: tuple[str, ...] = STAGES) -> Snapshot:
    """The same stage lists scored with other grades (e.g. today's judgments). Pure; not stored."""
    queries, stage_means = score_queries(snap.queries, qrels, k, stages)
    return Snapshot(snap.id, snap.case, snap.created_at, snap.config, queries,
                    stage_means.get("final", mean_metrics({}, k)), stage_means, qrels, snap.label, snap.elapsed_ms,
                    snap.embedder)
