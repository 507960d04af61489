"""Store-level CLI: which store and table to open (and how), `reembed`, `analyzer`, `context` and
`statistics`.

`--embedder` defaults to the one the store records (SPEC §15); `--table NAME --columns id=…,text=…`
inspects an existing LanceDB table in place (read-only); `--sparse fts` searches with LanceDB's
full-text index instead of the in-memory BM25.
"""
from __future__ import annotations

import sys
from pathlib import Path
import time

from retrieval.cli.distributed import add_ray_flags, reembed_on_ray
from retrieval.cli.gate import writer
from retrieval.sparse.build import SPARSE_BACKENDS
from retrieval.bm25.scoped import STATISTICS
from retrieval.bm25.tokenizer import ANALYZERS
from retrieval.models.registry import EMBEDDERS


def add_store_flags(sp) -> None:
    sp.add_argument("--table", default="traces",
                    help="LanceDB table to open (default traces); another table is inspected in place, read-only")
    sp.add_argument("--columns", default=None, metavar="FIELD=COLUMN,…",
                    help="column mapping for --table: id, text, vector, scope, scope_id, created_at, last_accessed_at "
                         "(and default_scope, default_scope_id); missing fields take documented defaults")
    sp.add_argument("--sparse", choices=SPARSE_BACKENDS, default="bm25",
                    help="bm25: in-memory index (sidecar beside a local store); fts: LanceDB native full-text search")


def embedder_help() -> str:
    return (f"{' | '.join(EMBEDDERS)}; default: the one the store records (minilm for a new store). "
            "Opening a store with another embedder is refused.")


def progress_line(what: str):
    """A progress callback that rewrites one stderr line: `  what done/total`, ending it at the end."""
    def progress(done: int, total: int) -> None:
        print(f"\r  {what} {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return progress


def report_bad_lines(errors, what: str = "bad lines", shown: int = 50, file: str = "") -> None:
    """The first `shown` rejected lines of `file` (each with `.line` and `.reason`) on stderr, then a count."""
    name = f"{Path(file).name} " if file else ""
    for err in errors[:shown]:
        print(f"  {name}line {err.line}: {err.reason}", file=sys.stderr)
    if len(errors) > shown:
        print(f"  … and {len(errors) - shown} more {what}", file=sys.stderr)


def write_refusal(ws, what: str) -> str | None:
    """Why this store must not record `what` here (demo mode, or a table inspected in place), else None."""
    if getattr(ws, "demo_mode", False):
        return f"the store runs read-only (demo mode, RETRIEVAL_MODE=demo); unset RETRIEVAL_MODE to {what}"
    if ws.store.read_only:
        return (f"store {ws.store.display_uri!r} is read-only (a table inspected in place); {what} on a store of "
                "your own, or pass --dry-run to see the result without recording it")
    return None


def open_workspace(args, **kw):
    """The Workspace the flags describe (embedder: named, else recorded)."""
    from retrieval.store.columns import ColumnMap
    from retrieval.models.registry import make_embedder
    from retrieval.workspace.core import Workspace

    spec = getattr(args, "embedder", None)
    table = getattr(args, "table", "traces") or "traces"
    columns = getattr(args, "columns", None)
    cmap = ColumnMap.parse(columns) if (columns or table != "traces") else None
    return Workspace(args.db, embedder=make_embedder(spec) if spec else None, table=table, columns=cmap,
                     sparse=getattr(args, "sparse", "bm25") or "bm25", progress=progress_line("building BM25"), **kw)


def cmd_reembed(args) -> int:
    from retrieval.models.registry import make_embedder
    from retrieval.workspace import Workspace

    if args.ray is not None:  # staged and embedded on Ray (retrieval.distributed)
        return reembed_on_ray(args)
    try:
        # no embedder named: opened as recorded, not checked; the Workspace audits the re-embed
        ws = Workspace(args.db, table=args.table, fact_extractor=None)
        emb = make_embedder(args.embedder)
        t0 = time.perf_counter()
        out = ws.reembed(emb, progress=progress_line("re-embedding"), batch_size=args.batch_size, **writer(args))
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"re-embedded {out['rows']} trace(s) in {time.perf_counter() - t0:.1f}s: {out['from']} -> {out['to']}")
    return 0


def cmd_analyzer(args) -> int:
    try:
        ws = open_workspace(args)
        t0 = time.perf_counter()
        ws.set_analyzer(args.name, progress=progress_line("rebuilding BM25"), **writer(args))
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"BM25 analyzer of {ws.store.display_uri} is now {args.name} ({time.perf_counter() - t0:.1f}s)")
    return 0


def cmd_context(args) -> int:
    from retrieval.store.context import ContextSetting

    try:
        setting = None if args.undo else ContextSetting(window=0 if args.off else args.window, sides=args.sides,
                                                        next=args.next and not args.off, max_chars=args.max_chars)
        ws = open_workspace(args)
        t0 = time.perf_counter()
        out = ws.set_context(setting, progress=progress_line("re-indexing"), undo=args.undo, **writer(args))
    except (ValueError, ImportError, PermissionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"context of {args.db}: {out['from']} -> {out['to']}; {out['rewritten']} trace(s) re-indexed, "
          f"{out['reembedded']} re-embedded ({time.perf_counter() - t0:.1f}s)")
    return 0


def cmd_statistics(args) -> int:
    try:
        ws = open_workspace(args)
        ws.set_bm25_statistics(args.mode, **writer(args))
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    what = "the queried scope's own" if args.mode == "scope" else "every document's (the seed's)"
    print(f"BM25 of {ws.store.display_uri} now scores a scoped query with {what} N, df and avgdl")
    return 0


def add_store_commands(sub, db) -> None:
    sp = sub.add_parser("reembed", help="re-embed every trace with another embedder (atomic swap at the end)")
    sp.add_argument("--embedder", required=True, help=" | ".join(EMBEDDERS))
    sp.add_argument("--db", required=True, help="LanceDB URI")
    sp.add_argument("--table", default="traces")
    sp.add_argument("--batch-size", type=int, default=256)
    add_ray_flags(sp)
    sp.set_defaults(func=cmd_reembed)

    sp = sub.add_parser("analyzer", help="set the store's BM25 analyzer and rebuild BM25")
    sp.add_argument("name", choices=ANALYZERS)
    db(sp)
    sp.set_defaults(func=cmd_analyzer)

    sp = sub.add_parser("context", help="index each trace with the turns before it in its thread (same scope), "
                                        "re-indexing in place; --undo restores the previous setting")
    sp.add_argument("--window", type=int, default=1, help="previous traces of the same thread (0 = none)")
    sp.add_argument("--sides", choices=("bm25", "dense", "both"), default="both", help="which index reads it")
    sp.add_argument("--next", action="store_true", help="the next trace of the thread too")
    sp.add_argument("--max-chars", type=int, default=300, help="characters of context at most")
    sp.add_argument("--off", action="store_true", help="each trace as its own text again (window 0)")
    sp.add_argument("--undo", action="store_true", help="restore the setting the last change replaced")
    db(sp)
    sp.set_defaults(func=cmd_context)

    sp = sub.add_parser("statistics", help="set what a scoped query's BM25 is scored with: the scope's own N, df "
                                           "and avgdl (scope) or every document's (store); no rebuild")
    sp.add_argument("mode", choices=STATISTICS)
    db(sp)
    sp.set_defaults(func=cmd_statistics)
