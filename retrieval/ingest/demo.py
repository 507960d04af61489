"""The bundled demo corpus (data/demo): build its index once, reuse it afterwards."""
from __future__ import annotations

import json
import time
from pathlib import Path
from collections.abc import Callable

DEMO_DIR = Path(__file__).resolve().parents[2] / "data" / "demo"
TRACES = DEMO_DIR / "traces.jsonl"
JUDGMENTS = DEMO_DIR / "judgments.jsonl"
EXAMPLES = DEMO_DIR / "examples.json"


def load_demo_traces():
    from retrieval.ingest.loaders import load_path

    if not TRACES.is_file():
        raise FileNotFoundError(f"the demo corpus {TRACES} is missing; restore data/demo from git")
    rep = load_path(TRACES)
    if rep.errors:
        raise ValueError(f"demo corpus has bad lines: {rep.errors[:3]}")
    return rep.traces


def load_examples() -> list[dict]:
    return json.loads(EXAMPLES.read_text()) if EXAMPLES.is_file() else []


def build_demo_index(uri: str, force: bool = False, log: Callable[[str], None] = print, embedder=None) -> dict:
    """Embed + BM25 + facts for the demo corpus into `uri`; skipped when the store already has data."""
    from retrieval.workspace.core import Workspace

    ws = Workspace(uri, embedder=embedder)
    if ws.store.count() and not force:
        log(f"demo index at {uri} already has {ws.store.count()} traces; reusing it (--force rebuilds)")
        _demo_case(uri, log)
        _demo_snapshots(ws, log)
        return ws.status()
    traces = load_demo_traces()
    if force and ws.store.count():
        ws.delete([t.id for t in ws.store.all_traces()])
    log(f"building the demo index at {uri}: {len(traces)} traces (embedding, BM25, facts)…")
    t0 = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 1 or done == total:
            last[0] = time.perf_counter()
            log(f"  embedded {done}/{total}")

    rep = ws.ingest(traces, progress=progress)
    log(f"done in {time.perf_counter() - t0:.1f}s: {rep.written} traces, {rep.facts} facts")
    _demo_case(uri, log)
    _demo_snapshots(ws, log)
    return ws.status()


def _demo_case(uri: str, log: Callable[[str], None]) -> None:
    """The demo judgments ship as case `demo` (imported once; an existing case is kept)."""
    from retrieval.judgments.io import ensure_demo_case

    rep = ensure_demo_case(uri, JUDGMENTS)
    if rep is not None:
        log(f"case 'demo': {rep.queries} judged queries, {rep.judgments} grades")


# What a stakeholder opening Snapshots on a read-only demo sees compared: the seed against today's default.
DEMO_SNAPSHOTS = (("agentos", "AgentOS (the seed): RRF 0.7/0.3, k 60"),
                  ("hybrid", "hybrid (default): convex theoretical 0.5/0.5"))


def _demo_snapshots(ws, log: Callable[[str], None]) -> None:
    """Run the case `demo` once under each of DEMO_SNAPSHOTS when it has no snapshot yet, so that a read-only
    demo (which may not run one) opens Snapshots on a diff, not on "run one"."""
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.judgments.store import JudgmentStore
    from retrieval.pipeline.config import PipelineConfig

    js = JudgmentStore(ws.uri)
    if "demo" not in js.case_names() or js.snapshots("demo"):
        return
    for preset, label in DEMO_SNAPSHOTS:
        snap = run_snapshot(ws, "demo", PipelineConfig.for_preset(preset), js, label=label)
        log(f"snapshot {label!r} of case 'demo': nDCG@10 {snap.metrics.get('ndcg@10', 0):.3f}")
