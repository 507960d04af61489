"""Model latencies on this machine: MiniLM embedding throughput, the offline reranker on 30 passages,
and a HyDE hypothesis from the local Gemma 3 270M.

Run: .venv/bin/python scripts/bench_models.py [--out docs/bench_models.json]
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

from retrieval.ingest.demo import load_demo_traces  # noqa: E402
from retrieval.models import EmbeddingReranker, HydeGenerator, LocalGemmaGenerator, SentenceTransformerEmbedder  # noqa: E402

QUERIES = ["what happened with the washing machine?", "where do I live now?", "how did the marathon go?",
           "what did the physio say about my knee?", "when is the Portrait Awards deadline?",
           "who has been complaining about the driver app?", "did the bank fix the connection drops?",
           "what medication do I take?", "status of ticket FX-209847", "how has life in Berlin been?"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/bench_models.json")
    args = ap.parse_args()
    texts = [t.content for t in load_demo_traces()]
    res: dict = {"cpu_count": os.cpu_count()}

    t0 = time.perf_counter()
    emb = SentenceTransformerEmbedder()
    emb.embed(["warm up"])
    res["minilm_load_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    emb.embed(texts)
    res["minilm_sentences_per_s"] = round(len(texts) / (time.perf_counter() - t0))
    one = []
    for q in QUERIES:
        t0 = time.perf_counter()
        emb.embed([q])
        one.append((time.perf_counter() - t0) * 1000)
    res["minilm_one_query_ms_p50"] = round(statistics.median(one), 1)

    rr = EmbeddingReranker(emb)
    times = []
    for i, q in enumerate(QUERIES):
        passages = texts[i * 30:(i + 1) * 30]
        t0 = time.perf_counter()
        rr.score(q, passages)
        times.append((time.perf_counter() - t0) * 1000)
    res["embedding_reranker_30_passages_ms_p50"] = round(statistics.median(times), 1)

    t0 = time.perf_counter()
    gen = LocalGemmaGenerator()
    hyde = HydeGenerator(gen)
    hyde.hypothesis("warm up question?")
    res["gemma_load_s"] = round(time.perf_counter() - t0, 2)
    times, samples = [], {}
    for q in QUERIES:
        t0 = time.perf_counter()
        samples[q] = hyde.hypothesis(q)
        times.append((time.perf_counter() - t0) * 1000)
    res["hyde_gemma_ms_p50"] = round(statistics.median(times), 1)
    res["hyde_samples"] = samples
    print(json.dumps(res, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
