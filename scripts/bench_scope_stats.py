"""Per-scope BM25 statistics against store-wide ones, on development data, side by side in one run.

A scoped query's BM25 can be scored with N, df and avgdl over every document (`store`, the seed's) or
over the queried scope only (`scope`, what a new store records and what a visitor limited by a policy
always gets). This measures both on the same store, queries and clock:

- quality: LoCoMo dev (each conversation is a scope; evidence recall@10 at the `end` clock) and the
  demo judgments (nDCG@10), for BM25 alone and for the `hybrid` default, with paired bootstrap 95 %
  intervals (scope − store);
- speed: BM25 search p50 over a synthetic store of `--docs` documents spread over many small scopes and
  over two large ones, a scope's first query on a version (its view made, df counted) and later ones,
  against store-wide statistics on the same scoped query.

Run: .venv/bin/python scripts/bench_scope_stats.py --locomo ../shared/eval/locomo-dev/locomo-dev.json \
        --cache /tmp/issue24/cache --docs 100000 --out docs/eval/scope-stats.json
(`--locomo` is a path; it is read as locomo:PATH.)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.bm25.index import BM25Index  # noqa: E402
from retrieval.bm25.tokenizer import make_tokenizer  # noqa: E402
from retrieval.cli.eval import open_clocked_set  # noqa: E402
from retrieval.metrics import mean, paired_bootstrap  # noqa: E402
from retrieval.eval.runner import credited_ids, run_queries  # noqa: E402
from retrieval.hybrid import HybridRetriever  # noqa: E402
from retrieval.types import Scope  # noqa: E402


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def quality(spec: str, cache: str, clock: str | None) -> dict:
    ws, queries, metric, score, scope_clock = open_clocked_set(spec, cache, clock, log=log)
    store = ws.store
    bm25 = BM25Index(tokenizer=make_tokenizer("english-stem"))
    bm25.sync([t for t in store.all_traces() if t.is_active])
    out: dict = {"dataset": spec.split("/")[-1].split(":")[-1], "metric": metric, "queries": len(queries),
                 "clock": scope_clock.describe() if hasattr(scope_clock, "describe") else str(clock)}
    per: dict[str, list[float]] = {}
    for mode in ("store", "scope"):
        r = HybridRetriever(store, bm25=bm25, bm25_statistics=mode, fact_store=None)
        runs = run_queries(r, queries, clock=scope_clock)
        for stage in ("sparse", "final"):
            per[f"{stage}/{mode}"] = [score(credited_ids(x.result, stage), x.q) for x in runs]
        log(f"  {spec}: {mode} done")
    for stage in ("sparse", "final"):
        a, b = per[f"{stage}/store"], per[f"{stage}/scope"]
        out[stage] = {"store": round(mean(a), 4), "scope": round(mean(b), 4),
                      "scope_minus_store": paired_bootstrap(a, b).as_dict()}
    return out


def speed(n_docs: int, n_scopes: int, reps: int) -> dict:
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like
    scopes = [Scope("user", f"u{i}") for i in range(n_scopes)]
    idx = BM25Index()
    batch = []
    for i in range(n_docs):
        batch.append((f"d{i}", " ".join(rng.choices(vocab, weights, k=30)), scopes[i % n_scopes]))
        if len(batch) == 10_000:
            idx.add_documents(batch)
            batch = []
    idx.add_documents(batch)
    queries = [" ".join(rng.choices(vocab[:3000], k=4)) for _ in range(reps)]

    def p50(fn) -> float:
        ts = []
        for q in queries:
            t0 = time.perf_counter()
            fn(q)
            ts.append((time.perf_counter() - t0) * 1000)
        return round(statistics.median(ts), 3)

    snap = idx.snapshot()
    first = []
    for s in scopes[:20]:  # a scope's first query: its view is made and its df counted
        t0 = time.perf_counter()
        snap.scoped([s]).search(queries[0], 30)
        first.append((time.perf_counter() - t0) * 1000)
    return {"docs": n_docs, "scopes": n_scopes, "queries": reps, "top_k": 30,
            "store_wide_scoped_p50_ms": p50(lambda q: snap.search(q, 30, [scopes[1]])),
            "per_scope_first_query_median_ms": round(statistics.median(first), 3),
            "per_scope_later_p50_ms": p50(lambda q: snap.scoped([scopes[1]]).search(q, 30)),
            "unscoped_p50_ms": p50(lambda q: snap.search(q, 30))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--locomo", help="LoCoMo dev JSON (evaluation only: never copied into the repo)")
    ap.add_argument("--demo", default="demo", help="the demo judgments ('' to skip)")
    ap.add_argument("--cache", default="/tmp/scope-stats-cache")
    ap.add_argument("--clock", default=None, help="now | end | ISO time (default: the dataset's, end for LoCoMo)")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--scopes", type=int, nargs="+", default=[200, 2], help="scope counts of the speed runs")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res: dict = {"command": " ".join(["scripts/bench_scope_stats.py", *sys.argv[1:]]), "quality": []}
    for spec in [s for s in (args.locomo and f"locomo:{args.locomo}", args.demo) if s]:
        res["quality"].append(quality(spec, args.cache, args.clock))
    res["speed"] = [speed(args.docs, n, args.reps) for n in args.scopes]
    res["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
