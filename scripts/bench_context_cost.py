"""What context costs (issue 36): ingest time, index size and query time with the context setting off and on.

A synthetic store of `--docs` traces in threads of `--turns` turns (one scope per 20 threads), ingested through the
Workspace in batches of `--batch` (as an agent writes: each batch continues its threads, so every batch reads the
stored turns before it), with the hashing embedder (MiniLM would measure the model, not the store: its cost per text
is the same with context, only the texts are longer). No fact extractor, so no facts are pending after a write (with
`extract_facts=False` and none pending, the Workspace would re-read the whole table before each next write, in every
setting alike). Then `--queries` scoped hybrid queries, asked of every store in turn (one query to each store, then
the next query), p50/p90. Sizes: the LanceDB directory and the BM25 sidecar. Wall times on a shared machine swing
with the load; CPU times (this process, every thread) are reported beside them and are the steadier comparison; the
1-minute load average is recorded before and after.

Run: HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_context_cost.py --docs 100000 --out docs/bench_context_cost.json
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.models import HashingEmbedder  # noqa: E402
from retrieval.models.registry import make_embedder  # noqa: E402
from retrieval.store.context import NEW_STORE_CONTEXT, OFF, ContextSetting  # noqa: E402
from retrieval.types import MemoryTrace, Scope  # noqa: E402
from retrieval.workspace.core import Workspace  # noqa: E402

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def corpus(n: int, turns: int, seed: int = 0) -> list[MemoryTrace]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = []
    for i in range(n):
        thread, pos = divmod(i, turns)
        scope = f"u{thread // 20}"
        out.append(MemoryTrace(id=f"t{i}", content=" ".join(rng.choices(vocab, weights, k=rng.randint(5, 25))),
                               scope="user", scope_id=scope, thread=f"c{thread}", position=pos,
                               created_at=T0 + timedelta(minutes=i)))
    # interleave threads in time: batch k holds turn k·… of many threads, as agents write concurrently
    return sorted(out, key=lambda t: (t.position, t.thread))


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def load() -> float:
    return round(os.getloadavg()[0], 2)


def ingest(traces: list[MemoryTrace], setting: ContextSetting, batch: int, uri: Path,
           embedder: object = None) -> tuple[Workspace, dict]:
    shutil.rmtree(uri, ignore_errors=True)
    ws = Workspace(str(uri), embedder=embedder or HashingEmbedder(384), fact_extractor=None)
    ws.store.new_context = setting
    before = load()
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, len(traces), batch):
        ws.ingest(traces[start:start + batch])
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    lance = du(uri / "traces.lance") if (uri / "traces.lance").exists() else du(uri)
    side = ws.bm25_path.stat().st_size if ws.bm25_path and ws.bm25_path.exists() else 0
    return ws, {"setting": setting.describe(), "ingest_s": round(took, 1), "ingest_cpu_s": round(cpu, 2),
                "ingest_per_1k_s": round(1000 * took / len(traces), 2), "load_before": before, "load_after": load(),
                "lance_mb": round(lance / 2**20, 1), "bm25_sidecar_mb": round(side / 2**20, 1),
                "with_context": sum(t.context is not None for t in ws.store.get([f"t{i}" for i in range(200)]))}


def query_all(stores: list[Workspace], traces: list[MemoryTrace], queries: int) -> list[dict]:
    """Every query asked of every store in turn (after 20 warm-up queries each), so load swings hit all alike."""
    rng = random.Random(1)
    asked = []
    for _ in range(queries + 20):
        t = traces[rng.randrange(len(traces))]
        asked.append((" ".join(t.content.split()[:3]), Scope(t.scope, t.scope_id)))
    rs = [ws.retriever() for ws in stores]
    wall: list[list[float]] = [[] for _ in rs]
    cpu: list[list[float]] = [[] for _ in rs]
    for n, (q, scope) in enumerate(asked):
        for k, r in enumerate(rs):
            t1, c1 = time.perf_counter(), time.process_time()
            r.retrieve(q, scope=scope)
            if n >= 20:
                wall[k].append(1000 * (time.perf_counter() - t1))
                cpu[k].append(1000 * (time.process_time() - c1))
    return [{"query_cpu_p50_ms": round(statistics.median(c), 2), "query_p50_ms": round(statistics.median(w), 2),
             "query_p90_ms": round(statistics.quantiles(w, n=10)[-1], 2)} for w, c in zip(wall, cpu)]


def pairs(traces: list[MemoryTrace], settings: list[ContextSetting], names: list[str], batch: int, n: int,
          root: Path, embedder: object) -> dict:
    """Ingest CPU seconds only, `n` rounds of every setting, the order turned each round, a fresh store each time
    and the previous one freed first: no store's objects are alive (for the collector to walk) while another
    ingests, and no setting always goes first. Medians, and each round's ratio to the first setting."""
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(n):
        for k in (range(len(settings)) if r % 2 == 0 else reversed(range(len(settings)))):
            ws, row = ingest(traces, settings[k], batch, root / f"p{r}-{k}", embedder)
            cpu[names[k]].append(row["ingest_cpu_s"])
            del ws
            gc.collect()
            shutil.rmtree(root / f"p{r}-{k}", ignore_errors=True)
    med = {name: statistics.median(v) for name, v in cpu.items()}
    first = names[0]
    return {"rounds": n, "ingest_cpu_s": cpu, "median_cpu_s": med,
            "median_ratio": {name: round(med[name] / med[first], 3) for name in names},
            "round_ratios": {name: [round(a / b, 2) for a, b in zip(cpu[name], cpu[first])] for name in names}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--batch", type=int, default=2_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--settings", default="off,default,w1-both",
                    help="comma-separated: off, default (what a new store records), w1-both (previous turn, both)")
    ap.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing",
                    help="minilm: the bundled all-MiniLM-L6-v2 (slow: use a small --docs)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench_context_cost.json"))
    ap.add_argument("--pairs", type=int, default=0,
                    help="N > 0: ingest CPU only, N rounds of the settings in turned order, each store freed before "
                         "the next (no queries, no sizes)")
    args = ap.parse_args()
    traces = corpus(args.docs, args.turns)
    root = Path(tempfile.mkdtemp(prefix="ctxcost-"))
    named = {"off": OFF, "default": NEW_STORE_CONTEXT, "w1-both": ContextSetting(window=1, sides="both")}
    settings = [named[n] for n in args.settings.split(",")]
    started = load()
    try:
        emb = make_embedder("minilm") if args.embedder == "minilm" else HashingEmbedder(384)
        ingest(corpus(200, args.turns, seed=2), OFF, 100, root / "warm-up", emb)  # imports, model load: untimed
        if args.pairs > 0:
            got = pairs(traces, settings, args.settings.split(","), args.batch, args.pairs, root, emb)
            out = {"command": " ".join(["scripts/bench_context_cost.py"] + sys.argv[1:]), "docs": args.docs,
                   "batch": args.batch, "load_start": started, "load_end": load(), "cores": os.cpu_count(), **got}
            Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
            print(json.dumps(out, indent=2))
            return 0
        built = [ingest(traces, s, args.batch, root / f"s{k}", emb) for k, s in enumerate(settings)]
        rows = [{**row, **q} for (_, row), q in zip(built, query_all([ws for ws, _ in built], traces, args.queries))]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = {"command": " ".join(["scripts/bench_context_cost.py"] + sys.argv[1:]), "docs": args.docs,
           "turns_per_thread": args.turns, "batch": args.batch,
           "embedder": "all-MiniLM-L6-v2" if args.embedder == "minilm" else "hashing (384-d)", "runs": rows,
           "load_start": started, "load_end": load(), "cores": os.cpu_count(),
           "ingest_cpu_ratio": {r["setting"]: round(r["ingest_cpu_s"] / rows[0]["ingest_cpu_s"], 2) for r in rows},
           "ingest_ratio": {r["setting"]: round(r["ingest_s"] / rows[0]["ingest_s"], 2) for r in rows}}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
