"""`python -m retrieval doctor --db URI [--repair] [--json]` (SPEC §18): is everything the store derives from its
traces table (BM25, facts, audit) in step with it, are there duplicate ids or pending work; `--repair` fixes them.

Exit codes: 0 healthy (after a repair: healthy now), 1 problems found (or left after a repair), 2 an error.
Without `--repair` nothing is written (the store is opened as a read-only demo would open it).
"""
from __future__ import annotations

import argparse
import json
import sys


def add_doctor_command(sub, db_flags) -> None:
    sp = sub.add_parser("doctor", help="check that BM25, facts and audit follow the traces table; --repair fixes")
    db_flags(sp)
    sp.add_argument("--repair", action="store_true",
                    help="remove duplicate ids, catch BM25, facts and audit up, re-extract facts that differ")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from retrieval.cli.store import open_workspace
    from retrieval.store.remote import StoreLocationError
    from retrieval.workspace import doctor

    try:
        ws = open_workspace(args)
        if not args.repair:
            ws.demo_mode = True  # a check writes nothing: no sidecar, facts or audit catch-up
        if ws.root is not None and not ws.root.exists():
            print(f"error: no store at {ws.store.display_uri}; check --db", file=sys.stderr)
            return 2
        if args.repair and ws.read_only:
            print(f"error: {ws.store.display_uri} is read-only here (a table inspected in place); nothing to repair",
                  file=sys.stderr)
            return 2
        rep = doctor.repair(ws) if args.repair else doctor.check(ws)
    except (ValueError, OSError, RuntimeError) as exc:
        kind = "" if isinstance(exc, StoreLocationError) else f"{type(exc).__name__}: "
        print(f"error: {kind}{str(exc).splitlines()[0][:300] if str(exc) else ''}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"uri": ws.store.display_uri, **rep.as_dict()}, indent=2))
    else:
        print(f"{ws.store.display_uri}: table version {rep.version}, {rep.rows} row(s)")
        for name in rep.checked:
            what = rep.problems.get(name)
            print(f"  {'ok     ' if not what else 'PROBLEM'} {name}" + (f": {'; '.join(what)}" if what else ""))
        print("healthy" if rep.healthy else ("problems left after the repair" if args.repair else
                                             "problems found; run again with --repair to fix them"))
    return 0 if rep.healthy else 1
