"""`--ray [ADDRESS]` for `ingest` and `reembed`: the same commands, embedded and written on Ray (retrieval.distributed).

No ADDRESS starts a local Ray for the command (`--workers` CPUs, loopback only); `auto` joins a cluster started
on this machine with `ray start --head`; `ray://HOST:10001` joins a remote one through Ray Client.
"""
from __future__ import annotations

import sys

RAY_HELP = ("embed and write on Ray (needs `pip install '.[ray]'`): no ADDRESS starts a local Ray on loopback; "
            "`auto` joins this machine's cluster, `ray://HOST:10001` a remote one")


def add_ray_flags(sp) -> None:
    sp.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS", help=RAY_HELP)
    sp.add_argument("--workers", type=int, default=2,
                    help="with --ray: Ray workers (and CPUs of a local Ray); rows per fragment = N / workers")


def _fail(exc: BaseException) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def ingest_on_ray(args, traces: list) -> int:
    """`ingest FILE --ray`: parse here, embed and write on Ray (upsert by id); BM25, facts and audit catch up
    from the table when the store is next opened."""
    from retrieval.distributed import ray_ingest
    from retrieval.models.registry import make_embedder

    try:
        emb = make_embedder(args.embedder) if args.embedder else None
        if getattr(args, "table", "traces") != "traces" or getattr(args, "columns", None):
            raise ValueError("--ray writes the store's own traces table; drop --table/--columns")
        rep = ray_ingest(args.db, traces, embedder=emb, address=args.ray or None, workers=args.workers)
    except (ValueError, ImportError, RuntimeError) as exc:
        return _fail(exc)
    print(f"wrote {rep.written} trace(s) ({rep.replaced} replaced) to {args.db} on Ray with {rep.workers} worker(s), "
          f"embedder {rep.embedder}, {rep.fragments} new fragment(s), table version {rep.version}, "
          f"in {rep.seconds:.1f}s; BM25, facts and audit catch up when the store is opened")
    if rep.duplicates:
        print(f"  duplicate ids in the file (last kept): {', '.join(rep.duplicates[:20])}")
    return 0


def reembed_on_ray(args) -> int:
    from retrieval.distributed import ray_reembed
    from retrieval.models.registry import make_embedder

    try:
        out = ray_reembed(args.db, make_embedder(args.embedder), address=args.ray or None, workers=args.workers,
                          table=args.table, batch_size=args.batch_size)
    except (ValueError, ImportError, RuntimeError) as exc:
        return _fail(exc)
    print(f"re-embedded {out['rows']} trace(s) on Ray with {args.workers} worker(s) in {out['seconds']:.1f}s: "
          f"{out['from']} -> {out['to']}")
    return 0
