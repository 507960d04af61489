"""BM25 at 100k synthetic Zipf documents: our BM25Index vs bm25s vs rank_bm25, side by side in one run.

Measures build time, top-30 search latency (p50 over the same queries), incremental add throughput,
and checks our scores against the SPEC §3 formula (rank_bm25 given the same idf).

Run: .venv/bin/python scripts/bench_bm25.py [--docs 100000] [--queries 50] [--out docs/bench_bm25.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np


from retrieval.bm25.index import BM25Index, default_tokenizer

VOCAB = 50_000


def zipf_corpus(n_docs: int, seed: int = 0, mean_len: int = 50) -> list[str]:
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    words = np.array([f"w{i}" for i in range(VOCAB)])
    lens = np.clip(rng.poisson(mean_len, n_docs), 5, None)
    flat = words[rng.choice(VOCAB, size=int(lens.sum()), p=p)]
    out, pos = [], 0
    for n in lens:
        out.append(" ".join(flat[pos:pos + n]))
        pos += n
    return out


def queries_for(n: int, seed: int = 1) -> list[str]:
    """2–5 terms drawn from the corpus's own Zipf distribution (frequent terms included: the slow case)."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    return [" ".join(f"w{int(x)}" for x in rng.choice(VOCAB, size=rng.integers(2, 6), p=p)) for _ in range(n)]


def rss_mb() -> float:
    """Resident memory of this process (Linux /proc), MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def p50_ms(fn, items) -> float:
    times = []
    for it in items:
        t0 = time.perf_counter()
        fn(it)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--rank-bm25-queries", type=int, default=10, help="rank_bm25 is slow; fewer queries")
    ap.add_argument("--out", default="docs/bench_bm25.json")
    args = ap.parse_args()

    docs = zipf_corpus(args.docs)
    tokens = [default_tokenizer(d) for d in docs]
    queries = queries_for(args.queries)
    qtok = [default_tokenizer(q) for q in queries]
    res: dict = {"docs": args.docs, "queries": args.queries, "avg_len": float(np.mean([len(t) for t in tokens])),
                 "cpu_count": os.cpu_count()}

    rss0 = rss_mb()
    t0 = time.perf_counter()
    ours = BM25Index()
    ours.add_documents((f"d{i}", d) for i, d in enumerate(docs))
    ours.search("warm up w1")  # merges the pending postings
    res["ours_build_s"] = round(time.perf_counter() - t0, 2)
    res["ours_rss_growth_mb"] = round(rss_mb() - rss0, 1)
    res["ours_p50_ms"] = round(p50_ms(lambda q: ours.search(q, top_k=30), queries), 3)

    # Incremental: add 2,000 new documents one at a time, each followed by a search (worst case).
    extra = zipf_corpus(2000, seed=7)
    t0 = time.perf_counter()
    for i, d in enumerate(extra):
        ours.add_document(f"x{i}", d)
    res["ours_add_docs_per_s"] = round(2000 / (time.perf_counter() - t0))
    t0 = time.perf_counter()
    for i, d in enumerate(extra[:200]):
        ours.add_document(f"y{i}", d)
        ours.search(queries[i % len(queries)], top_k=30)
    res["ours_add_then_search_ms"] = round((time.perf_counter() - t0) / 200 * 1000, 2)
    for i in range(2000):
        ours.remove_document(f"x{i}")
    for i in range(200):
        ours.remove_document(f"y{i}")

    import bm25s

    t0 = time.perf_counter()
    b = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    b.index(tokens, show_progress=False)
    res["bm25s_build_s"] = round(time.perf_counter() - t0, 2)
    res["bm25s_p50_ms"] = round(p50_ms(lambda q: b.retrieve([q], k=30, show_progress=False, n_threads=1), qtok), 3)

    from rank_bm25 import BM25Okapi

    class SameIdf(BM25Okapi):  # SPEC §3 idf (rank_bm25's default floors negatives with epsilon)
        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    t0 = time.perf_counter()
    rb = SameIdf(tokens, k1=1.2, b=0.75)
    res["rank_bm25_build_s"] = round(time.perf_counter() - t0, 2)

    def rb_search(q):
        s = rb.get_scores(q)
        top = np.argpartition(-s, 30)[:30]
        return top[np.argsort(-s[top])]

    res["rank_bm25_p50_ms"] = round(p50_ms(rb_search, qtok[: args.rank_bm25_queries]), 1)

    # Exactness: our top-30 ids and scores equal rank_bm25's (same formula, same idf).
    worst = 0.0
    for q, qt in zip(queries[: args.rank_bm25_queries], qtok[: args.rank_bm25_queries]):
        s = rb.get_scores(qt)
        got = ours.search(q, top_k=30)
        for doc_id, score in got:
            worst = max(worst, abs(score - s[int(doc_id[1:])]))
        top_ref = np.sort(s)[::-1][:30]
        top_ref = top_ref[top_ref > 0]  # we return only documents sharing a term
        assert len(top_ref) == len(got), (len(top_ref), len(got))
        worst = max(worst, float(np.max(np.abs(np.array([sc for _, sc in got]) - top_ref))))
    res["max_abs_score_diff_vs_formula"] = worst
    res["speedup_vs_rank_bm25"] = round(res["rank_bm25_p50_ms"] / res["ours_p50_ms"], 1)
    res["ratio_vs_bm25s"] = round(res["ours_p50_ms"] / res["bm25s_p50_ms"], 2)
    print(json.dumps(res, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
