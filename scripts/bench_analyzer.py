"""BM25 analysers side by side: `plain` (SPEC §3) vs `english-stem` (Snowball), on the same stores.

For each dataset, BM25 is built in memory with each analyser over the cached evaluation store (the
same MiniLM vectors), and the sparse stage and the `hybrid` preset's final list are scored, plus any
extra fusion configurations (--config LABEL=JSON). The `hybrid` default is chosen from the
development sets (LoCoMo dev, the demo judgments); SciFact is reported, not tuned on. `--clock now|end|ISO-TIME`
is the instant recency is scored at (default `end` for LoCoMo and the demo, else `now`; recorded in the JSON).

Run: .venv/bin/python scripts/bench_analyzer.py --beir ../shared/eval/scifact \
        --locomo ../shared/eval/locomo-dev/locomo-dev.json --demo [--out docs/bench_analyzer.json]
"""
from __future__ import annotations

import argparse
from typing import Any
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.bm25.index import BM25Index  # noqa: E402
from retrieval.bm25.tokenizer import ANALYZERS, make_tokenizer  # noqa: E402
from retrieval.cli.eval import open_clocked_set  # noqa: E402
from retrieval.eval.clock import CLOCK_HELP, clock_arg  # noqa: E402
from retrieval.metrics import mean  # noqa: E402
from retrieval.eval.runner import credited_ids  # noqa: E402
from retrieval.hybrid import HybridRetriever  # noqa: E402


def run(spec: str, configs: dict[str, dict], cache_dir: str, clock=None) -> dict:
    ws, queries, metric, score, sc = open_clocked_set(spec, cache_dir, clock, log=lambda m: print(m, file=sys.stderr))
    stored = ws.store.all_traces()

    out = {"dataset": spec, "metric": metric, "queries": len(queries), "clock": sc.describe(), "analyzers": {}}
    for analyzer in ANALYZERS:
        t0 = time.perf_counter()
        bm25 = BM25Index(tokenizer=make_tokenizer(analyzer))
        bm25.sync(stored)
        build_s = time.perf_counter() - t0
        row: dict[str, Any] = {"build_s": round(build_s, 2)}
        for label, knobs in configs.items():
            r = HybridRetriever(ws.store, bm25=bm25, **knobs)
            sparse, final = [], []
            for q in queries:
                with sc.scoped(q.scope):
                    res = r.retrieve(q.query, scope=q.scope, recall_top_k=10)
                sparse.append(score(credited_ids(res, "sparse"), q))
                final.append(score(credited_ids(res, "final"), q))
            row[label] = {"final": round(mean(final), 4), "sparse": round(mean(sparse), 4)}
            print(f"{spec} {analyzer} {label}: final {mean(final):.4f} sparse {mean(sparse):.4f}",
                  file=sys.stderr, flush=True)
        out["analyzers"][analyzer] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beir")
    ap.add_argument("--locomo")
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--config", action="append", default=[], metavar="LABEL=JSON",
                    help="HybridRetriever keyword arguments, e.g. 'convex=" + '{"fusion": "convex"}' + "'")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--out", default="docs/bench_analyzer.json")
    ap.add_argument("--clock", type=clock_arg, metavar="now|end|ISO-TIME", help=CLOCK_HELP)
    args = ap.parse_args()
    configs: dict[str, dict] = {"hybrid defaults": {}}
    for item in args.config:
        label, _, knobs = item.partition("=")
        configs[label] = json.loads(knobs)
    results = []
    if args.locomo:
        results.append(run(f"locomo:{args.locomo}", configs, args.cache_dir, args.clock))
    if args.demo:
        results.append(run("demo", configs, args.cache_dir, args.clock))
    if args.beir:
        results.append(run(f"beir:{args.beir}", configs, args.cache_dir, args.clock))
    Path(args.out).write_text(json.dumps({"command": "scripts/bench_analyzer.py " + " ".join(sys.argv[1:]),
                                          "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
