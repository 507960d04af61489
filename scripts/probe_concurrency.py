"""Probe the write path and the BM25 index the way a tester would: print a table of
category, inputs tried, failures, for docs/RELIABILITY.md.

Uses only APIs that existed before the fixes (Workspace.ingest/delete/status, BM25Index.search),
so `PYTHONPATH=OLD_CHECKOUT` can point it at an older checkout to get the "before" column.

Run: .venv/bin/python scripts/probe_concurrency.py [--scale 1]
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
from datetime import datetime, UTC
from pathlib import Path

NOW = datetime(2026, 3, 1, tzinfo=UTC)
TOKENLESS = ["👍", "!!!", "…", "—", "😀😀", "\u200b", "?!", "- - -", "🙂 🙃", "(((", "§", "* * *", "¡¿", "👍🏽", "~"]


def main() -> int:  # noqa: C901 (a probe: one table of cases, read top to bottom)
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=1, help="multiply the number of inputs")
    args = ap.parse_args()
    import logging

    logging.disable(logging.WARNING)
    from retrieval import BM25Index, MemoryTrace, Scope
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    tmp = Path(tempfile.mkdtemp(prefix="probe-conc-"))
    rows: list[tuple[str, int, int]] = []

    def tr(i, text, sid="u1", active=True):
        return MemoryTrace(id=str(i), content=text, scope="user", scope_id=sid, created_at=NOW, is_active=active)

    def ws_at(name):
        return Workspace(str(tmp / name), embedder=HashingEmbedder(32), clock=lambda: NOW)

    # 1. token-less traces after a normal one; then reopen after deleting everything
    fails = 0
    for n, text in enumerate(TOKENLESS * args.scale):
        try:
            ws = ws_at(f"tl{n}")
            ws.ingest([tr("a", "refund")])
            ws.ingest([tr("b", text)])
            ok = ws.store.count() == 2 and ws.status()["in_step"] and [i for i, _ in ws.bm25.search("refund")] == ["a"]
            ws.delete(["a", "b"])
            ok = ok and ws_at(f"tl{n}").status()["in_step"] and ws_at(f"tl{n}").status()["in_step"]
            fails += not ok
        except Exception:
            fails += 1
    rows.append(("token-less trace, then emptied store reopened twice", len(TOKENLESS) * args.scale, fails))

    # 2. damaged sidecars: every truncation point class, garbage, empty
    base = ws_at("side")
    base.ingest([tr(f"t{i}", f"alpha beta {i}") for i in range(20)])
    good = (tmp / "side" / "bm25.npz").read_bytes()
    cuts = sorted({int(len(good) * f / (20 * args.scale)) for f in range(20 * args.scale)} | {len(good) - 1})
    damages = [good[:c] for c in cuts] + [b"garbage", b""]
    fails = 0
    for d in damages:
        (tmp / "side" / "bm25.npz").write_bytes(d)
        try:
            w = ws_at("side")
            fails += not (len(w.bm25.search("alpha", top_k=50)) == 20 and w.status()["in_step"])
        except Exception:
            fails += 1
    rows.append(("truncated / corrupt BM25 sidecar on open", len(damages), fails))

    # 3. the index alone: one writer, four readers; every snapshot whole; equal to a rebuild after
    idx, errors, checks = BM25Index(), [0], [0]
    corpus: dict[str, str] = {}
    stop = threading.Event()

    def writer():
        rng = random.Random(1)
        try:
            for _ in range(200 * args.scale):
                batch = [(f"d{rng.randrange(400)}",
                          f"common w{rng.randrange(50)} w{rng.randrange(50)}") for _ in range(10)]
                idx.add_documents(batch)
                corpus.update(batch)
                gone = f"d{rng.randrange(400)}"
                idx.remove_document(gone)
                corpus.pop(gone, None)
        except Exception:
            errors[0] += 1
        stop.set()

    def reader():
        while not stop.is_set():
            checks[0] += 1
            try:
                n = len(idx)
                hits = idx.search("common", top_k=100_000)
                if not hits and n:
                    errors[0] += 1
                idx.search("w3 w7", top_k=10)
            except Exception:
                errors[0] += 1

    ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    fresh = BM25Index()
    fresh.add_documents(corpus.items())
    queries = [f"w{i} w{(i * 7) % 50} common" for i in range(50)]
    diff = sum(idx.search(q, top_k=400) != fresh.search(q, top_k=400) for q in queries)
    rows.append(("BM25 index: 4 readers during batch writes (exceptions)", checks[0], errors[0]))
    rows.append(("BM25 index: queries scoring differently from a rebuild after", len(queries), diff))

    # 4. shared Workspace: one writer, four readers; scope leaks and exceptions
    ws = ws_at("shared")
    ws.ingest([tr(f"u{s}-{i}", f"alpha{i % 5} topic refund {i}", f"u{s}") for i in range(30) for s in (1, 2)])
    stop.clear()
    bad, tried = [0], [0]

    def wwriter():
        rng = random.Random(2)
        for g in range(8 * args.scale):
            try:
                s = rng.choice((1, 2))
                ws.ingest([tr(f"u{s}-{rng.randrange(40)}", f"alpha{g % 5} topic new {g}", f"u{s}") for _ in range(5)])
                ws.delete([f"u{rng.choice((1, 2))}-{rng.randrange(40)}"])
            except Exception:
                bad[0] += 1
        stop.set()

    def wreader(n):
        rng = random.Random(n)
        while not stop.is_set():
            s = rng.choice((1, 2))
            tried[0] += 1
            try:
                res = ws.retriever().retrieve("alpha1 topic", scope=Scope("user", f"u{s}"))
                bad[0] += any(t.trace.scope_id != f"u{s}" for t in res.traces)
                bad[0] += any(not i.startswith(f"u{s}-") for i, _ in ws.bm25.search("topic", 20, [Scope("user",
                                                                                                        f"u{s}")]))
            except Exception:
                bad[0] += 1

    ts = [threading.Thread(target=wwriter)] + [threading.Thread(target=wreader, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    rows.append(("shared Workspace: retrieve()+search during ingest/delete (exceptions, scope leaks)", tried[0],
                 bad[0]))

    # 5. concurrent first ingest of the same traces into an empty store
    tried_n = fails = 0
    for r in range(3 * args.scale):
        w = ws_at(f"first{r}")
        batch = [tr(f"t{i}", f"note {i}") for i in range(100)]
        errs: list[BaseException] = []
        ts = [threading.Thread(target=_safe, args=(w.ingest, batch, errs)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        ids = [t.id for t in ws_at(f"first{r}").store.all_traces()]
        tried_n += 1
        fails += bool(errs) or len(ids) != 100 or len(set(ids)) != 100
    rows.append(("concurrent first ingest of one batch (duplicate ids or errors)", tried_n, fails))

    # 6. two Workspaces on one store: a stale sidecar must never look in step
    tried_n = fails = 0
    for r in range(3 * args.scale):
        app = ws_at(f"two{r}")
        app.ingest([tr(f"t{i}", f"old {i}") for i in range(20)])
        cli = ws_at(f"two{r}")
        cli.ingest([tr(f"t{i}", f"zebra {i}") for i in range(10)])
        app.delete(["t19"])
        again = ws_at(f"two{r}")
        tried_n += 1
        fails += not (again.status()["in_step"] and len(again.bm25.search("zebra", top_k=50)) == 10)
    rows.append(("second Workspace rewrote traces; reopened index in step and correct", tried_n, fails))

    # 7. status on a mistyped path
    tried_n = fails = 0
    for r in range(3 * args.scale):
        p = tmp / f"typo{r}" / "db"
        try:
            ws_at(f"typo{r}/db").status()
        except ValueError:
            pass
        except Exception:
            fails += 1
        tried_n += 1
        fails += p.exists()
    rows.append(("status on a mistyped path (created it or crashed)", tried_n, fails))

    shutil.rmtree(tmp, ignore_errors=True)
    print("| category | inputs tried | failures |")
    print("|---|---:|---:|")
    for cat, n, f in rows:
        print(f"| {cat} | {n} | {f} |")
    return 0


def _safe(fn, batch, errs):
    try:
        fn(batch, extract_facts=False)
    except Exception as exc:
        errs.append(exc)


if __name__ == "__main__":
    sys.exit(main())
