"""Scale: a store of N traces (default 1,000,000) with synthetic 384-d vectors — no model anywhere.

Two processes, as a deployment has them. The build process: bulk ingest rate (Arrow batches into
the traces table), IVF-SQ index build, BM25 build from the store (streamed) and its sidecar size, its
peak resident memory. The serving process (started fresh, as the app would be): BM25 sidecar open
time, the in-memory row copy's build time, retrieve() p50/p95 scoped and unscoped with each stage's
median, ANN recall@30 vs exact (the store's own dense plan), the Corpus browse (a LanceDB filter),
an upsert of 2,000 existing traces and the first query after it, and its peak resident memory.

Vectors: 2,000 random unit centroids, each trace a centroid plus Gaussian noise (clustered, like
real embeddings); a query is a stored trace's vector plus noise, looked up by its text.

Run (2 cores, idle: ~12 min at 1M):
  nohup .venv/bin/python scripts/bench_scale.py --n 1000000 --out docs/bench_scale.json > /tmp/bench_scale.log 2>&1 &
"""
from __future__ import annotations

import argparse
from typing import Any
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, UTC
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from bench_bm25 import queries_for, rss_mb, zipf_corpus  # noqa: E402

from retrieval.types import Scope  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 384
USERS = 100
CENTROIDS = 2000
CHUNK = 50_000


class SyntheticEmbedder:
    """Query vectors looked up by text (registered by the benchmark); no model."""

    name = "synthetic"
    dim = DIM

    def __init__(self):
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts):
        if not texts:
            return np.zeros((0, DIM), np.float32)
        return np.stack([self.table[t] if t in self.table else self._doc(t) for t in texts])

    @staticmethod
    def _doc(text: str) -> np.ndarray:  # a stored trace re-written: any unit vector (upsert timing only)
        return unit(np.random.default_rng(abs(hash(text)) % 2**32).normal(size=DIM).astype(np.float32))

    embed_query = embed


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ms_stats(times: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def ingest(store, n: int, centroids: np.ndarray, log) -> dict:
    import pyarrow as pa

    tbl = store.table(create=True)
    sch = tbl.schema
    t0 = time.perf_counter()
    ts = pa.array([NOW] * CHUNK, pa.timestamp("us", tz="UTC"))
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        rng = np.random.default_rng(start)
        texts = zipf_corpus(m, seed=start)
        cid = rng.integers(0, CENTROIDS, m)
        vecs = unit(centroids[cid] + rng.normal(0, 0.08, (m, DIM)).astype(np.float32))
        ids = [f"t{i}" for i in range(start, start + m)]
        cols = {
            "id": ids, "content": texts, "scope": ["user"] * m, "scope_id": [f"u{i % USERS}" for i in range(start,
                                                                                                            start + m)],
            "type": ["episodic"] * m, "tags": [[]] * m, "entities": [[]] * m, "source_type": ["user_statement"] * m,
            "confidence": np.ones(m), "created_at": ts[:m], "last_accessed_at": ts[:m],
            "encoding_strength": np.full(m, 0.5), "stability_ms": np.full(m, 3.6e6),
            "retrieval_count": np.zeros(m, np.int64), "valence": np.zeros(m), "arousal": np.zeros(m),
            "dominance": np.zeros(m), "is_active": np.ones(m, bool),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
        }
        tbl.add(pa.Table.from_pydict(cols, schema=sch))
        log(f"  ingested {start + m}/{n} ({(start + m) / (time.perf_counter() - t0):.0f} rows/s, rss {rss_mb():.0f} "
            f"MB)")
    secs = time.perf_counter() - t0
    return {"bulk_ingest_s": round(secs, 1), "bulk_ingest_rows_per_s": round(n / secs)}


def query_vectors(n: int, centroids: np.ndarray, count: int) -> list[np.ndarray]:
    """Each query: the centroid of a random stored trace plus fresh noise (as its trace was made)."""
    qrng = np.random.default_rng(11)
    out = []
    for s in qrng.integers(0, n, count).tolist():
        cid = np.random.default_rng(s - s % CHUNK).integers(0, CENTROIDS, CHUNK)[s % CHUNK]
        out.append(unit(centroids[cid] + qrng.normal(0, 0.08, DIM).astype(np.float32)))
    return out


def probe_sweep(uri: str, n: int, count: int, probes: list[int], log) -> dict:
    """The store's own unscoped dense search (MemoryStore.query_vector, top 30) on an existing store:
    latency and recall@30 vs exact, per number of IVF partitions probed."""
    from retrieval.store.memory import MemoryStore

    store = MemoryStore(uri, embedder=SyntheticEmbedder(), clock=lambda: NOW)
    tbl = store.table()
    store.row_copy.current()
    centroids = unit(np.random.default_rng(0).normal(size=(CENTROIDS, DIM)).astype(np.float32))
    qvecs = query_vectors(n, centroids, count)
    exact = [set(tbl.search(v).distance_type("cosine").where("is_active = true", prefilter=True)
                 .bypass_vector_index().select(["id", "_distance"]).limit(30).to_arrow()["id"].to_pylist())
             for v in qvecs]
    partitions, _, refine = store.ann.plan()
    out: dict[str, Any] = {"partitions": partitions, "queries": count, "sweep": []}
    store.ann.pin_probes(max(probes))
    for v in qvecs:  # warm LanceDB's index cache first, so that the first row is not a cold one
        store.query_vector(v, top_k=30)
    for p in probes:
        store.ann.pin_probes(p)  # this many probes
        store.query_vector(qvecs[0], top_k=30)
        times, rec = [], []
        for v, e in zip(qvecs, exact):
            t0 = time.perf_counter()
            got = {h.id for h in store.query_vector(v, top_k=30)}
            times.append((time.perf_counter() - t0) * 1000)
            rec.append(len(got & e) / 30)
        out["sweep"].append({"nprobes": p, **ms_stats(times), "recall_at_30": round(float(np.mean(rec)), 4)})
        log(json.dumps(out["sweep"][-1]))
    return out


def recall_vs_exact(store, qvecs, scopes, k: int = 30) -> float:
    from retrieval.store.rows import scope_filter

    tbl = store.table()
    hits = 0.0
    for i, v in enumerate(qvecs):
        sc = [scopes[i]] if scopes else None
        got = {h.id for h in store.query_vector(v, top_k=k, scopes=sc)}
        where = "is_active = true" + (f" AND ({scope_filter(sc)})" if sc else "")
        exact = tbl.search(v).distance_type("cosine").where(where, prefilter=True).bypass_vector_index()
        e = set(exact.select(["id", "_distance"]).limit(k).to_arrow()["id"].to_pylist())
        hits += len(got & e) / max(1, len(e))
    return round(hits / len(qvecs), 4)


def build(root: Path, n: int, logf) -> dict:
    """Ingest, index and build BM25 in this process; the numbers of the build side."""
    from retrieval.store.memory import MemoryStore
    from retrieval.workspace.core import Workspace

    uri = str(root / "db")
    emb = SyntheticEmbedder()
    centroids = unit(np.random.default_rng(0).normal(size=(CENTROIDS, DIM)).astype(np.float32))
    store = MemoryStore(uri, embedder=emb, clock=lambda: NOW)
    res = ingest(store, n, centroids, logf)
    t0 = time.perf_counter()
    store.ensure_ann_index(force=True)
    res["ivf_build_s"] = round(time.perf_counter() - t0, 1)
    res["ann_plan"] = dict(zip(("partitions", "nprobes", "refine_factor"), store.ann.plan()))
    res["rss_after_ingest_mb"] = round(rss_mb())
    logf(f"IVF-SQ index in {res['ivf_build_s']}s: {res['ann_plan']}")
    t0 = time.perf_counter()
    ws = Workspace(uri, embedder=emb, clock=lambda: NOW, fact_extractor=None)
    ws.progress = lambda d, t: logf(f"  BM25 {d}/{t} rss {rss_mb():.0f} MB") if d % 200_000 == 0 or d == t else None
    assert len(ws.bm25) == n
    res["bm25_build_s"] = round(time.perf_counter() - t0, 1)
    sidecar = ws.bm25_path
    assert sidecar is not None, "a local store has a sidecar path"
    res["bm25_sidecar_mb"] = round(sidecar.stat().st_size / 2**20, 1)
    res["build_peak_rss_mb"] = round(peak_rss_mb())
    logf(f"BM25 built in {res['bm25_build_s']}s, sidecar {res['bm25_sidecar_mb']} MB")
    return res


def serve(root: Path, n: int, count: int, logf) -> dict:
    """A fresh process over the built store: open, query, write once, query again."""
    from retrieval.workspace.core import Workspace

    uri = str(root / "db")
    emb = SyntheticEmbedder()
    centroids = unit(np.random.default_rng(0).normal(size=(CENTROIDS, DIM)).astype(np.float32))
    res: dict = {}
    t0 = time.perf_counter()
    ws = Workspace(uri, embedder=emb, clock=lambda: NOW, fact_extractor=None)
    assert len(ws.bm25) == n
    res["bm25_open_s"] = round(time.perf_counter() - t0, 1)
    store = ws.store
    t0 = time.perf_counter()
    assert store.row_copy.current() is not None
    res["row_copy_build_s"] = round(time.perf_counter() - t0, 1)
    res["rss_after_open_mb"] = round(rss_mb())
    logf(f"sidecar opened in {res['bm25_open_s']}s, row copy in {res['row_copy_build_s']}s, rss "
         f"{res['rss_after_open_mb']} MB")
    rng = random.Random(5)
    queries = [f"{q} #{i}" for i, q in enumerate(queries_for(count, seed=9))]  # unique: one vector each
    emb.table.update(zip(queries, query_vectors(n, centroids, len(queries))))
    scopes = [Scope("user", f"u{rng.randrange(USERS)}") for _ in queries]
    r = ws.retriever(fact_store=None)
    for label, sc_list in (("scoped", scopes), ("unscoped", [None] * len(queries))):
        r.retrieve(queries[0], scope=sc_list[0])
        times: list[float] = []
        stages: dict[str, list[float]] = {}
        for q, sc in zip(queries, sc_list):
            t0 = time.perf_counter()
            out = r.retrieve(q, scope=sc)
            times.append((time.perf_counter() - t0) * 1000)
            for k, v in out.diagnostics.timings_ms.items():
                stages.setdefault(k, []).append(v)
        res[f"retrieve_{label}"] = ms_stats(times)
        res[f"stages_{label}_median_ms"] = {k: round(statistics.median(v), 1) for k, v in stages.items()}
        logf(f"retrieve {label}: {res[f'retrieve_{label}']} stages {res[f'stages_{label}_median_ms']}")
    res["peak_rss_mb_after_queries"] = round(peak_rss_mb())
    qvecs = [emb.table[q] for q in queries[:50]]
    for label, sc_list in (("dense_unscoped", [None] * 50), ("dense_scoped", scopes[:50])):
        dense_t = []
        for v, sc in zip(qvecs, sc_list):
            t0 = time.perf_counter()
            store.query_vector(v, top_k=30, scopes=[sc] if sc else None)
            dense_t.append((time.perf_counter() - t0) * 1000)
        res[label] = ms_stats(dense_t)
    browse_t = []
    for i in range(10):
        t0 = time.perf_counter()
        page = store.browse(scope=scopes[i], contains=f"w{100 + i}", limit=50)
        browse_t.append((time.perf_counter() - t0) * 1000)
    res["browse_scoped_contains"] = {**ms_stats(browse_t), "rows": len(page)}
    again = store.get([f"t{i}" for i in range(0, n, max(1, n // 2000))][:2000])
    t0 = time.perf_counter()
    ws.ingest(again)
    res["upsert_2000_existing_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    r.retrieve(queries[1], scope=scopes[1])
    res["first_retrieve_after_a_write_s"] = round(time.perf_counter() - t0, 2)
    res["serve_peak_rss_mb"] = round(peak_rss_mb())  # open, 200 queries, a write and the queries after it
    # Another writer's commit (a second store object: as another process would) cannot be applied
    # to the row copy: the next read rebuilds it. The store level only: a Workspace would also
    # re-sync BM25 from that process's journal.
    from retrieval.store.memory import MemoryStore

    MemoryStore(uri, embedder=emb, clock=lambda: NOW).add(store.get(["t7"]))
    store.version()  # checks out the latest version, as a Workspace does before reading
    t0 = time.perf_counter()
    store.query_vector(qvecs[0], top_k=30)
    res["row_copy_rebuild_after_another_writer_s"] = round(time.perf_counter() - t0, 2)
    res["peak_rss_mb_after_copy_rebuild"] = round(peak_rss_mb())
    logf(f"own write: first retrieve {res['first_retrieve_after_a_write_s']}s, peak {res['serve_peak_rss_mb']} MB; "
         f"another writer: copy rebuilt in {res['row_copy_rebuild_after_another_writer_s']}s, "
         f"peak {res['peak_rss_mb_after_copy_rebuild']} MB")
    res["ann_recall_at_30_unscoped"] = recall_vs_exact(store, qvecs, None)
    res["recall_at_30_scoped"] = recall_vs_exact(store, qvecs, scopes[:50])
    res["peak_rss_mb_with_exact_scans"] = round(peak_rss_mb())  # the exact searches recall needs read every vector
    logf(f"recall unscoped {res['ann_recall_at_30_unscoped']} scoped {res['recall_at_30_scoped']}")
    logf(json.dumps(res))
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--root", default=None, help="where to build the store (default a temp dir, removed after)")
    ap.add_argument("--out", default="docs/bench_scale.json")
    ap.add_argument("--serve-only", action="store_true", help="only the serving process, on the store at --root")
    ap.add_argument("--probe-sweep", type=int, nargs="*", metavar="NPROBES",
                    help="only sweep IVF nprobes (unscoped dense latency, recall@30) on the store already at --root")
    args = ap.parse_args()
    logf = lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True)
    root = Path(args.root or tempfile.mkdtemp(prefix="bench-scale-"))
    if args.probe_sweep:
        prior = json.loads(Path(args.out).read_text()) if Path(args.out).is_file() else {}
        prior["probe_sweep"] = {"command": "python " + " ".join(sys.argv),
                                **probe_sweep(str(root / "db"), args.n, 50, args.probe_sweep, logf)}
        Path(args.out).write_text(json.dumps(prior, indent=2) + "\n")
        return 0
    if args.serve_only:
        Path(args.out).write_text(json.dumps(serve(root, args.n, args.queries, logf), indent=2) + "\n")
        return 0
    res: dict = {"command": "python " + " ".join(sys.argv), "traces": args.n, "dim": DIM, "cpu_count": os.cpu_count(),
                 "queries": args.queries, "users": USERS}
    try:
        res.update(build(root, args.n, logf))
        served = root / "serve.json"
        subprocess.run([sys.executable, __file__, "--serve-only", "--root", str(root), "--n", str(args.n),
                        "--queries", str(args.queries), "--out", str(served)], check=True)
        res.update(json.loads(served.read_text()))
    finally:
        if not args.root:
            shutil.rmtree(root, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
