"""As-of reads, version diffs and log import at scale (SPEC §16), in one run.

A synthetic store of `--docs` traces (Zipf vocabulary, 100 user scopes, the hashing embedder so no model time
hides the machinery) is tagged `base`, then moved on (2 % more traces, 100 edited, 100 deactivated). Measured:
- a latest query (p50 over the queries, the live retriever);
- the first as-of query at `base` (traces checked out; BM25 from the newest sidecar moved to `base` by the rows
  that differ), BM25 rebuilt from `base`'s rows alone (a store without a sidecar), and later as-of queries at
  `base` (cached per version; held, and resolved from the tag each time); target: later ones within 2× a latest
  query;
- a version diff for one query (`base` → latest), warm; target ≤ 1 s;
- importing a `--lines`-line JSONL agent log (target: 100k lines ≤ 30 s).

Run: .venv/bin/python scripts/bench_asof.py --docs 100000 --lines 100000 --out docs/eval/asof.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.history import diff_versions, open_as_of  # noqa: E402
from retrieval.models import HashingEmbedder  # noqa: E402
from retrieval.replay import QueryLog  # noqa: E402
from retrieval.store.versions import create_tag  # noqa: E402
from retrieval.types import MemoryTrace, Scope  # noqa: E402
from retrieval.workspace import Workspace  # noqa: E402

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def vocabulary(n: int = 20_000) -> tuple[list[str], list[float]]:
    words = [f"w{i}" for i in range(n)]
    return words, [1.0 / (i + 1) for i in range(n)]


def traces(rng: random.Random, start: int, n: int, words, weights) -> list[MemoryTrace]:
    out = []
    for i in range(start, start + n):
        text = " ".join(rng.choices(words, weights, k=rng.randint(20, 60)))
        out.append(MemoryTrace(id=f"t{i}", content=text, scope="user", scope_id=f"u{i % 100}",
                               created_at=NOW - timedelta(hours=i % 5000)))
    return out


def build(root: Path, docs: int, rng: random.Random) -> tuple[Workspace, float]:
    words, weights = vocabulary()
    ws = Workspace(str(root / "db"), embedder=HashingEmbedder(384), clock=lambda: NOW, fact_extractor="none")
    t0 = time.perf_counter()
    for start in range(0, docs, 20_000):
        ws.ingest(traces(rng, start, min(20_000, docs - start), words, weights))
        log(f"  built {min(start + 20_000, docs)}/{docs}")
    create_tag(ws.store.table(), "base")
    ws.ingest(traces(rng, docs, docs // 50, words, weights))  # 2 % new
    edited = traces(rng, 0, 100, words, weights)  # same ids, new texts
    ws.ingest(edited)
    ws.set_active([f"t{i}" for i in range(100, 200)], False)
    return ws, time.perf_counter() - t0


def p50(fn, queries, warm: int = 2) -> float:
    for q in queries[:warm]:
        fn(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def query_set(rng: random.Random, n: int) -> list[tuple[str, Scope]]:
    words, weights = vocabulary()
    return [(" ".join(rng.choices(words[:3000], weights[:3000], k=4)), Scope("user", f"u{rng.randrange(100)}"))
            for _ in range(n)]


def measure_reads(ws: Workspace, queries) -> dict:
    live = ws.retriever()
    latest = p50(lambda q: live.retrieve(q[0], scope=q[1]), queries)
    t0 = time.perf_counter()
    view = open_as_of(ws.store, None, "base", sparse="bm25", sidecar=None)  # no sidecar: BM25 from the rows
    rebuilt = (time.perf_counter() - t0) * 1000
    ws.as_of_cache.clear()
    t0 = time.perf_counter()
    then = ws.retriever(as_of="base")  # the newest sidecar, moved to `base` by the rows that differ
    then.retrieve(queries[0][0], scope=queries[0][1])
    first = (time.perf_counter() - t0) * 1000
    later = p50(lambda q: then.retrieve(q[0], scope=q[1]), queries)
    resolved = p50(lambda q: ws.retriever(as_of="base").retrieve(q[0], scope=q[1]), queries)
    diff = p50(lambda q: diff_versions(then, live, q[0], q[1]), queries[:5], warm=1)
    return {"latest_query_p50_ms": round(latest, 1), "first_asof_query_ms": round(first, 1),
            "bm25_source": then.as_of_state.bm25_source, "bm25_rebuilt_from_rows_ms": round(rebuilt, 1),
            "rebuilt_documents": len(view.bm25),
            "later_asof_query_p50_ms": round(later, 1), "later_over_latest": round(later / latest, 2),
            "later_asof_resolved_each_time_p50_ms": round(resolved, 1),
            "diff_warm_p50_ms": round(diff, 1), "queries": len(queries)}


def measure_import(root: Path, lines: int, rng: random.Random) -> dict:
    path = root / "agent.jsonl"
    with path.open("w") as fh:
        for i in range(lines):
            ts = (NOW - timedelta(minutes=i)).isoformat()
            res = [{"id": f"t{rng.randrange(100_000)}", "score": round(1 - k / 10, 2)} for k in range(10)]
            fh.write(json.dumps({"timestamp": ts, "query": f"query {i} about w{i % 977}", "scope": f"user:u{i % 100}",
                                 "results": res, "feedback": "up" if i % 7 == 0 else None}) + "\n")
    t0 = time.perf_counter()
    rep = QueryLog(str(root / "db")).import_file(path)
    secs = time.perf_counter() - t0
    return {"lines": lines, "seconds": round(secs, 1), "lines_per_s": round(lines / secs), "added": rep.added,
            "bad": len(rep.errors)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--out", default=str(ROOT / "docs" / "eval" / "asof.json"))
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws, build_s = build(root, args.docs, rng)
        log(f"built in {build_s:.0f}s; version {ws.store.version()}, tags {ws.store.tags()}")
        out = {"docs": args.docs, "embedder": "hashing-384", "build_seconds": round(build_s, 1),
               "versions": ws.store.version(), **measure_reads(ws, query_set(rng, args.queries)),
               "import": measure_import(root, args.lines, rng)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
