"""Per-query adaptive fusion weights (`adaptive`) against the fixed `hybrid` weights, on development data.

For each set — LoCoMo dev at every `--clock` given (default `end`, then `now`), SciFact, the 45 demo queries —
every query is searched once with the `hybrid` preset (facts off, as `eval` runs it) and its final list scored
three ways: the fixed weights, `adaptive` on (the rules as shipped, re-fused through the real pipeline), and
the rule strengths learned on the 'tune' half of the queries (`retrieval.eval.adaptive.held_out`, scored on the
'held-out' half). Each against the fixed weights with a paired bootstrap 95 % interval. The headline metric is
the dataset's (`eval`'s): LoCoMo evidence recall@10, nDCG@10 otherwise. Query texts of the licensed sets are
never written; the demo's (ours) are, as examples of the reasons.

Run: .venv/bin/python scripts/bench_adaptive.py --locomo ../shared/eval/locomo-dev/locomo-dev.json \\
        --beir ../shared/eval/scifact --cache-dir /tmp/issue24/cache --out docs/eval/adaptive.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from retrieval.cli.eval import open_clocked_set
from retrieval.eval.adaptive import held_out
from retrieval.eval.clock import clock_arg
from retrieval.eval.runner import credited_ids, run_queries
from retrieval.metrics import mean, paired_bootstrap
from retrieval.pipeline.assemble import reweight
from retrieval.pipeline.config import PipelineConfig
from retrieval.workspace.retrievers import build_retriever


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def measure(spec: str, clock, cache_dir: str, resamples: int, examples: bool) -> dict:
    t0 = time.perf_counter()
    ws, queries, metric, score, sc = open_clocked_set(spec, cache_dir, clock, log=log)
    r = build_retriever(ws, PipelineConfig.for_preset("hybrid", facts=False))
    runs = run_queries(r, queries, clock=sc, recall_top_k=10)
    log(f"  {spec} @ {sc.mode}: {len(runs)} queries searched in {time.perf_counter() - t0:.0f}s")
    fixed, on, dense, sparse, moved = [], [], [], [], 0
    shown: list[dict] = []
    for run in runs:
        adapted = reweight(run.result, adaptive=True)
        a = adapted.diagnostics.adaptive
        fixed.append(score(credited_ids(run.result, "final"), run.q))
        on.append(score(credited_ids(adapted, "final"), run.q))
        dense.append(score(credited_ids(run.result, "dense"), run.q))
        sparse.append(score(credited_ids(run.result, "sparse"), run.q))
        if a is not None and a["reasons"]:
            moved += 1
            if examples and len(shown) < 8:
                shown.append({"query": run.q.query, "weights": a["summary"], "delta": round(on[-1] - fixed[-1], 4)})
    learned = held_out(runs, score, resamples=resamples)
    out = {"dataset": spec.split(":")[0] if spec != "demo" else "demo", "metric": metric, "clock": sc.describe(),
           "queries": len(runs), "moved": moved, "dense_alone": round(mean(dense), 4),
           "bm25_alone": round(mean(sparse), 4), "fixed": round(mean(fixed), 4), "adaptive": round(mean(on), 4),
           "adaptive_vs_fixed": paired_bootstrap(fixed, on, resamples=resamples).as_dict(),
           "wins": sum(b > a + 1e-9 for a, b in zip(fixed, on)), "losses": sum(b < a - 1e-9 for a, b in zip(fixed, on)),
           "learned": learned, "seconds": round(time.perf_counter() - t0, 1)}
    if shown:
        out["examples"] = shown
    iv = out["adaptive_vs_fixed"]
    log(f"  fixed {out['fixed']:.4f} adaptive {out['adaptive']:.4f} Δ {iv['delta']:+.4f} [{iv['lo']:+.4f}, "
        f"{iv['hi']:+.4f}]; learned {learned['learned']['strengths']} held-out "
        f"{learned['learned'].get('vs_fixed')}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", required=True, help="the LoCoMo dev JSON")
    ap.add_argument("--beir", help="a BEIR folder (SciFact)")
    ap.add_argument("--clock", type=clock_arg, action="append", metavar="now|end|ISO-TIME",
                    help="LoCoMo's clock(s); default end, then now")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--out", default="docs/eval/adaptive.json")
    args = ap.parse_args()
    sets = [(f"locomo:{args.locomo}", c) for c in (args.clock or ["end", "now"])]
    sets += ([(f"beir:{args.beir}", None)] if args.beir else []) + [("demo", None)]
    results = [measure(spec, clock, args.cache_dir, args.resamples, spec == "demo") for spec, clock in sets]
    cmd = "scripts/bench_adaptive.py " + " ".join(sys.argv[1:])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"command": cmd, "preset": "hybrid", "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
