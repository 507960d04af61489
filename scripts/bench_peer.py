"""Side by side in one run: LanceDB's own hybrid search vs this inspector's `hybrid` preset.

The peer a user would pick instead is LanceDB's `query_type="hybrid"` (native stemmed full-text
search + vector search, fused by `RRFReranker`, or `LinearCombinationReranker`), over the very
same table and the same MiniLM vectors. Ours runs the `hybrid` preset with its defaults, plus any
extra configurations given with --config (JSON knobs, e.g. '{"fusion": "convex"}'). `--clock now|end|ISO-TIME`
is the instant our recency is scored at (default `end` for LoCoMo, else `now`; recorded in the JSON).

Run: .venv/bin/python scripts/bench_peer.py --beir ../shared/eval/scifact \
        --locomo ../shared/eval/locomo-dev/locomo-dev.json --demo [--out docs/bench_peer.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.pipeline.config import PipelineConfig  # noqa: E402
from retrieval.cli.eval import open_clocked_set  # noqa: E402
from retrieval.eval.clock import CLOCK_HELP, clock_arg  # noqa: E402
from retrieval.metrics import mean  # noqa: E402
from retrieval.eval.runner import credited_ids  # noqa: E402
from retrieval.workspace.retrievers import build_retriever  # noqa: E402
from retrieval.store import scope_filter  # noqa: E402


def peer_search(tbl, reranker, qvec, text: str, scope, k: int = 10) -> list[str]:
    q = (tbl.search(query_type="hybrid", vector_column_name="vector", fts_columns="content")
         .vector(qvec).text(text).rerank(reranker).limit(k).select(["id"]))
    where = ["is_active = true"] + ([f"({scope_filter([scope])})"] if scope is not None else [])
    q = q.where(" AND ".join(where), prefilter=True)
    return [r["id"] for r in q.to_list()]


def run(spec: str, configs: dict[str, dict], cache_dir: str, clock=None) -> dict:
    from lancedb.index import FTS
    from lancedb.rerankers import LinearCombinationReranker, RRFReranker

    ws, queries, metric, score, sc = open_clocked_set(spec, cache_dir, clock, log=lambda m: print(m, file=sys.stderr))
    tbl = ws.store.table()
    if not any(getattr(ix, "name", "") == "content_idx" for ix in tbl.list_indices()):
        tbl.create_index("content", config=FTS(), replace=True)  # LanceDB defaults: stem, stopwords, ascii-fold
    tbl.optimize()

    embedder = ws.store.embedder
    qvecs = embedder.embed_query([q.query for q in queries])
    out = {"dataset": spec, "metric": metric, "queries": len(queries), "clock": sc.describe(), "systems": {}}
    peers = {"LanceDB hybrid (native FTS + vector, RRFReranker)": RRFReranker(),
             "LanceDB hybrid (native FTS + vector, LinearCombinationReranker)": LinearCombinationReranker()}
    per_query: dict[str, list[float]] = {}
    for label, rr in peers.items():
        vals, times = [], []
        for q, v in zip(queries, qvecs):
            t0 = time.perf_counter()
            ids = peer_search(tbl, rr, v, q.query, q.scope)
            times.append((time.perf_counter() - t0) * 1000)
            vals.append(score(ids, q))
        per_query[label] = vals
        out["systems"][label] = {"score": round(mean(vals), 4), "ms_p50": round(statistics.median(times), 1)}
        print(f"{label}: {mean(vals):.4f}", file=sys.stderr, flush=True)
    for label, knobs in configs.items():
        r = build_retriever(ws, PipelineConfig.for_preset("hybrid", facts=False, **knobs))
        vals, times = [], []
        for q in queries:
            t0 = time.perf_counter()
            with sc.scoped(q.scope):
                res = r.retrieve(q.query, scope=q.scope, recall_top_k=10)
            times.append((time.perf_counter() - t0) * 1000)
            vals.append(score(credited_ids(res, "final"), q))
        per_query[label] = vals
        out["systems"][label] = {"score": round(mean(vals), 4), "ms_p50": round(statistics.median(times), 1),
                                 "knobs": knobs}
        print(f"{label}: {mean(vals):.4f}", file=sys.stderr, flush=True)
    peer = per_query["LanceDB hybrid (native FTS + vector, RRFReranker)"]
    for label in configs:
        wins = sum(a > b + 1e-12 for a, b in zip(per_query[label], peer))
        losses = sum(a + 1e-12 < b for a, b in zip(per_query[label], peer))
        out["systems"][label]["vs_lancedb_rrf"] = {"wins": wins, "losses": losses,
                                                   "ties": len(peer) - wins - losses}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beir", help="a BEIR folder (SciFact)")
    ap.add_argument("--locomo", help="locomo-dev.json")
    ap.add_argument("--demo", action="store_true", help="the bundled demo judgments")
    ap.add_argument("--config", action="append", default=[], metavar="LABEL=JSON",
                    help="extra configuration of ours, e.g. 'convex=" + '{"fusion": "convex"}' + "'")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--out", default="docs/bench_peer.json")
    ap.add_argument("--clock", type=clock_arg, metavar="now|end|ISO-TIME", help=CLOCK_HELP)
    args = ap.parse_args()
    configs: dict[str, dict] = {"ours: hybrid preset (defaults)": {}}
    for item in args.config:
        label, _, knobs = item.partition("=")
        configs[f"ours: {label}"] = json.loads(knobs)
    results = []
    if args.beir:
        results.append(run(f"beir:{args.beir}", configs, args.cache_dir, args.clock))
    if args.locomo:
        results.append(run(f"locomo:{args.locomo}", configs, args.cache_dir, args.clock))
    if args.demo:
        results.append(run("demo", configs, args.cache_dir, args.clock))
    cmd = "scripts/bench_peer.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps({"command": cmd, "results": results}, indent=2) + "\n")
    for r in results:
        print(f"\n{r['dataset']} ({r['metric']}, {r['queries']} queries, clock {r['clock']['mode']})")
        for label, s in r["systems"].items():
            print(f"  {s['score']:.4f}  {s['ms_p50']:>6.1f} ms  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
