"""Vector index types on a large store: build time, unscoped latency and recall@30 vs exact.

Runs on a store that scripts/bench_scale.py built and kept (`--root`); it replaces that store's
vector index with each type in turn (the store stays usable; rebuild ours after with
`MemoryStore(...).ensure_ann_index(force=True)`). Exact neighbours are computed once in numpy.

  python scripts/bench_ann_scale.py --db /tmp/bench_scale_1m/db --kinds sq flat pq rq --out docs/bench_ann_scale.json
"""
from __future__ import annotations

import argparse
from typing import Any
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from bench_scale import CENTROIDS, DIM, query_vectors, unit  # noqa: E402

SWEEPS: dict[str, tuple[list[int], list[int | None]]] = {  # kind -> (probes, refine factors)
    "sq": ([20, 100, 200, 300], [None, 2]),
    "flat": ([20, 40, 100, 200], [None]),
    "pq": ([20, 40], [None, 10, 20]),
    "rq": ([20, 40], [None, 10, 20]),
}


def exact_top(tbl, qv: np.ndarray, k: int = 30) -> list[list[str]]:
    best: list[list[tuple[float, str]]] = [[] for _ in qv]
    for b in tbl.search().select(["id", "vector"]).limit(None).to_batches(100_000):
        ids = np.asarray(b["id"].to_pylist())
        m = b["vector"].flatten().to_numpy(zero_copy_only=False).reshape(-1, DIM)
        sims = qv @ m.T / np.linalg.norm(m, axis=1)
        for i in range(len(qv)):
            top = np.argpartition(-sims[i], k)[:k]
            best[i] = sorted(best[i] + list(zip(sims[i][top].tolist(), ids[top].tolist())), reverse=True)[:k]
    return [[x[1] for x in row] for row in best]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--kinds", nargs="+", default=list(SWEEPS), choices=list(SWEEPS))
    ap.add_argument("--partitions", type=int, default=None, help="default sqrt(rows)")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--out", default="docs/bench_ann_scale.json")
    args = ap.parse_args()
    import lancedb
    from lancedb.index import IvfFlat, IvfPq, IvfRq, IvfSq

    tbl = lancedb.connect(args.db).open_table("traces")
    n = tbl.count_rows()
    parts = args.partitions or round(n ** 0.5)
    qv = np.stack(query_vectors(n, unit(np.random.default_rng(0).normal(size=(CENTROIDS, DIM)).astype(np.float32)),
                                args.queries))
    exact = exact_top(tbl, qv)
    res: dict[str, Any] = {"command": "python " + " ".join(sys.argv), "rows": n, "partitions": parts,
                           "queries": args.queries, "indexes": {}}
    configs: dict[str, Any] = {"sq": lambda: IvfSq(distance_type="cosine", num_partitions=parts),
               "flat": lambda: IvfFlat(distance_type="cosine", num_partitions=parts),
               "pq": lambda: IvfPq(distance_type="cosine", num_partitions=parts, num_sub_vectors=48),
               "rq": lambda: IvfRq(distance_type="cosine", num_partitions=parts)}
    for kind in args.kinds:
        t0 = time.perf_counter()
        tbl.create_index("vector", config=configs[kind](), replace=True)
        entry: dict[str, Any] = {"build_s": round(time.perf_counter() - t0, 1), "sweep": []}
        print(kind, "build", entry["build_s"], "s", flush=True)
        probes, refines = SWEEPS[kind]
        for p in probes:
            for rf in refines:
                times: list[float] = []
                rec: list[float] = []
                for v, e in zip(qv, exact):
                    q: Any = tbl.search(v)
                    q = q.distance_type("cosine").nprobes(p)
                    q = q.refine_factor(rf) if rf else q
                    t1 = time.perf_counter()
                    got = q.select(["id", "_distance"]).limit(30).to_arrow()["id"].to_pylist()
                    times.append((time.perf_counter() - t1) * 1000)
                    rec.append(len(set(got) & set(e)) / 30)
                entry["sweep"].append({"nprobes": p, "refine": rf, "p50_ms": round(float(np.median(times)), 1),
                                       "recall_at_30": round(float(np.mean(rec)), 3)})
                print(kind, json.dumps(entry["sweep"][-1]), flush=True)
        res["indexes"][kind] = entry
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")  # after each kind: a stopped run keeps its rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
