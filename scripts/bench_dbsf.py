"""DBSF (distribution-based score fusion, `retrieval/fusion/dbsf.py`) against the default `hybrid` fusion, on
development data, with paired bootstrap 95 % intervals.

Each set is searched once with the `hybrid` preset (facts off, as `eval` runs it); each query's final list is
scored as searched (the preset's fusion: convex, theoretical normalisation, dense 0.5 / sparse 0.5) and re-fused
with DBSF at the same weights (`reweight(result, fusion="dbsf")`: the same cached lists, no new search). SciFact
is scored by nDCG@10; LoCoMo dev by evidence recall@10 at the `end` clock (one day after each conversation). The
interval is DBSF − default over the queries (paired, 10,000 resamples, seed 0). Query texts are never written.

Run: .venv/bin/python scripts/bench_dbsf.py --beir ../shared/eval/scifact \\
        --locomo ../shared/eval/locomo-dev/locomo-dev.json --cache-dir .cache/eval --out docs/eval/dbsf.json
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
from retrieval.eval.runner import credited_ids, run_queries
from retrieval.metrics import mean, paired_bootstrap
from retrieval.pipeline.assemble import reweight
from retrieval.pipeline.config import PipelineConfig
from retrieval.workspace.retrievers import build_retriever


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def measure(spec: str, clock: str | None, cache_dir: str, resamples: int) -> dict:
    t0 = time.perf_counter()
    ws, queries, metric, score, sc = open_clocked_set(spec, cache_dir, clock, log=log)
    r = build_retriever(ws, PipelineConfig.for_preset("hybrid", facts=False))
    runs = run_queries(r, queries, clock=sc, recall_top_k=10)
    log(f"  {spec} @ {sc.mode}: {len(runs)} queries searched in {time.perf_counter() - t0:.0f}s")
    default, dbsf = [], []
    for run in runs:
        default.append(score(credited_ids(run.result, "final"), run.q))
        dbsf.append(score(credited_ids(reweight(run.result, fusion="dbsf"), "final"), run.q))
    s = runs[0].result.diagnostics.settings
    iv = paired_bootstrap(default, dbsf, resamples=resamples).as_dict()
    out = {"dataset": spec.split(":")[0], "metric": metric, "clock": sc.describe(), "queries": len(runs),
           "default": str(s.strategy), "candidate": str(s.with_(fusion="dbsf").strategy),
           "default_score": round(mean(default), 4), "dbsf_score": round(mean(dbsf), 4), "dbsf_vs_default": iv,
           "wins": sum(b > a + 1e-9 for a, b in zip(default, dbsf)),
           "losses": sum(b < a - 1e-9 for a, b in zip(default, dbsf)), "seconds": round(time.perf_counter() - t0, 1)}
    log(f"  default {out['default_score']:.4f} DBSF {out['dbsf_score']:.4f} Δ {iv['delta']:+.4f} "
        f"[{iv['lo']:+.4f}, {iv['hi']:+.4f}]")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beir", help="a BEIR folder (SciFact)")
    ap.add_argument("--locomo", help="the LoCoMo dev JSON")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--out", default="docs/eval/dbsf.json")
    args = ap.parse_args()
    if not (args.beir or args.locomo):
        ap.error("give --beir, --locomo or both")
    results = ([measure(f"beir:{args.beir}", None, args.cache_dir, args.resamples)] if args.beir else []) + \
        ([measure(f"locomo:{args.locomo}", "end", args.cache_dir, args.resamples)] if args.locomo else [])
    above = len(results) == 2 and all(r["dbsf_vs_default"]["lo"] > 0 for r in results)
    cmd = "scripts/bench_dbsf.py " + " ".join(sys.argv[1:])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"command": cmd, "preset": "hybrid", "results": results,
                                          "adopt": above}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
