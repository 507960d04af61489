"""Vector index choice at 100k × 384 (hashing vectors: unclustered, the hard case for IVF):
recall@30 vs exact search and latency for IVF-HNSW-SQ, IVF-PQ and IVF-FLAT, plus exact search —
unscoped, and scoped to one of 100 users (a 1% prefilter, as the app's scoped queries are).

Run: .venv/bin/python scripts/bench_ann.py [--out docs/bench_ann.json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from bench_retrieve import build, queries_for  # noqa: E402


def main() -> int:
    from lancedb.index import IvfFlat, IvfHnswSq, IvfPq

    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--out", default="docs/bench_ann.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ann-"))
    rows = []
    try:
        r, _ = build(args.docs, root)
        st = r.memory_store
        tbl = st.table()
        vs = [st.embed_query(q) for q in queries_for(30, seed=9)]

        def run(q):
            return set(q.limit(30).select(["id"]).to_arrow()["id"].to_pylist())

        scope = "scope = 'user' AND scope_id = 'u7'"
        t_exact, exact = [], []
        for v in vs:
            t0 = time.perf_counter()
            exact.append(run(tbl.search(v).distance_type("cosine").bypass_vector_index()))
            t_exact.append((time.perf_counter() - t0) * 1000)
        exact_scoped = [run(tbl.search(v).distance_type("cosine").where(scope, prefilter=True).bypass_vector_index())
                        for v in vs]
        rows.append({"index": "none (exact)", "recall_at_30": 1.0, "scoped_recall_at_30": 1.0,
                     "p50_ms": round(statistics.median(t_exact), 1)})
        configs = [("IVF_HNSW_SQ", IvfHnswSq(distance_type="cosine", num_partitions=316), [32, 128]),
                   ("IVF_PQ", IvfPq(distance_type="cosine", num_partitions=316, num_sub_vectors=48), [32, 128]),
                   ("IVF_FLAT", IvfFlat(distance_type="cosine", num_partitions=64), [32, 48])]
        for name, cfg, probes in configs:
            t0 = time.perf_counter()
            tbl.create_index("vector", config=cfg, replace=True)
            build_s = time.perf_counter() - t0
            for nprobes in probes:
                ts, hits = [], 0.0
                for v, e in zip(vs, exact):
                    t0 = time.perf_counter()
                    got = run(tbl.search(v).distance_type("cosine").nprobes(nprobes).refine_factor(10))
                    ts.append((time.perf_counter() - t0) * 1000)
                    hits += len(got & e) / len(e)
                scoped = 0.0
                for v, e in zip(vs, exact_scoped):
                    got = run(tbl.search(v).distance_type("cosine").where(scope, prefilter=True)
                              .nprobes(nprobes).refine_factor(10))
                    scoped += len(got & e) / len(e)
                rows.append({"index": name, "partitions": getattr(cfg, "num_partitions", None), "nprobes": nprobes,
                             "build_s": round(build_s, 1), "recall_at_30": round(hits / len(vs), 3),
                             "scoped_recall_at_30": round(scoped / len(vs), 3),
                             "p50_ms": round(statistics.median(ts), 1)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    Path(args.out).write_text(json.dumps({"docs": args.docs, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
