"""Sparse backends side by side on SciFact (BEIR): our in-memory BM25 vs LanceDB's native full-text index.

Parity: nDCG@10 of each backend against the qrels, and overlap@10 (|top-10 ∩ top-10| / 10) between
the two backends with the same analyzer (`plain`: no stemming; `english-stem`: Snowball). Speed:
per-query search p50/p95 (top-10 and top-90, the pipeline's recall_top_k × over-fetch), scoped as
the pipeline searches, plus build/open time.

Sparse search does not use vectors, so the store is reused from `--db` when it holds the corpus
(e.g. the eval cache .cache/eval/beir-scifact, opened with its recorded embedder); otherwise the
corpus is written once to `--build-dir` with the model-free hashing embedder (no re-embedding).
Reusing a store adds (replaces) its FTS index: one new table version; its BM25 sidecar is rebuilt once.

Run: .venv/bin/python scripts/bench_sparse_fts.py [--db .cache/eval/beir-scifact] [--out docs/bench_sparse_fts.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from retrieval.sparse.build import build_bm25  # noqa: E402
from retrieval.eval.datasets import load_beir  # noqa: E402
from retrieval.metrics import ndcg_at_k  # noqa: E402
from retrieval.models import HashingEmbedder  # noqa: E402
from retrieval.sparse.fts import LanceFtsSparse  # noqa: E402
from retrieval.store.memory import MemoryStore  # noqa: E402


def timed(fn, queries) -> tuple[list, dict]:
    out, times = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(fn(q))
        times.append((time.perf_counter() - t0) * 1000)
    return out, {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def open_store(args, traces) -> tuple[MemoryStore, str]:
    if args.db:
        s = MemoryStore(args.db)
        if s.count() == len(traces):
            ident = s.identity()
            return s, f"reused {args.db} ({ident.describe() if ident else 'no recorded identity'})"
    s = MemoryStore(args.build_dir, embedder=HashingEmbedder(64))
    if s.count() != len(traces):
        s.add(traces, batch_size=2048)
    return s, f"built {args.build_dir} with the hashing embedder (vectors unused here)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default=str(ROOT.parent / "shared" / "eval" / "scifact"))
    ap.add_argument("--db", default=str(ROOT / ".cache" / "eval" / "beir-scifact"))
    ap.add_argument("--build-dir", default="/tmp/bench-sparse-scifact")
    ap.add_argument("--out", default="docs/bench_sparse_fts.json")
    args = ap.parse_args()
    traces, queries = load_beir(args.dataset)
    store, how = open_store(args, traces)
    scope = [queries[0].scope] if queries[0].scope else None
    res: dict = {"command": "python " + " ".join(sys.argv), "dataset": "SciFact (BEIR test)", "documents": len(traces),
                 "queries": len(queries), "store": how, "analyzers": {}}
    texts = [q.query for q in queries]
    for analyzer in ("plain", "english-stem"):
        row: dict = {}
        t0 = time.perf_counter()
        bm25 = build_bm25(store, analyzer)
        row["bm25_build_s"] = round(time.perf_counter() - t0, 2)
        fts = LanceFtsSparse(store, analyzer)
        t0 = time.perf_counter()
        fts.ensure_index(replace=True)
        row["fts_index_build_s"] = round(time.perf_counter() - t0, 2)
        runs = {}
        for name, idx in (("bm25", bm25), ("lancedb-fts", fts)):
            idx.search(texts[0], top_k=10, scopes=scope)  # warm
            runs[name], row[f"{name}_top10"] = timed(lambda q, idx=idx: idx.search(q, top_k=10, scopes=scope), texts)
            _, row[f"{name}_top90"] = timed(lambda q, idx=idx: idx.search(q, top_k=90, scopes=scope), texts)
            row[f"{name}_ndcg@10"] = round(statistics.mean(
                ndcg_at_k([i for i, _ in hits], q.qrels, 10) for hits, q in zip(runs[name], queries)), 4)
        row["overlap@10"] = round(statistics.mean(
            len({i for i, _ in a} & {i for i, _ in b}) / 10 for a, b in zip(runs["bm25"], runs["lancedb-fts"])), 4)
        row["top1_agreement"] = round(statistics.mean(
            float(bool(a) and bool(b) and a[0][0] == b[0][0]) for a, b in zip(runs["bm25"], runs["lancedb-fts"])), 4)
        res["analyzers"][analyzer] = row
        print(analyzer, json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
