"""`python -m retrieval calibrate`: label-free calibration of a store's fusion defaults (and its undo).

    calibrate --db URI [--scope S] [--sample N] [--seed 0] [--llm] [--dry-run] [--undo] [--json]

Pseudo-queries cropped from the store's own traces run through the fusion lab at the `end` clock
(`retrieval.eval.calibrate`); the winner is recorded in the store's metadata (`retrieval.store.calibration`)
only when its held-out gain over the default has a paired 95 % interval above zero. `--undo` restores the
calibration the last one replaced (or removes it). `--dry-run` reports without recording.
"""
from __future__ import annotations

import getpass
import json
import sys
from typing import Any

from retrieval.cli.store import write_refusal
from retrieval.eval.calibrate import DEFAULT_SAMPLE


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in a container: still say it was the command line
        return "cli"


def _progress(quiet: bool):
    def report(fraction: float, text: str) -> None:
        if not quiet:
            end = "\n" if fraction >= 1 else ""
            print(f"\r  calibrating {fraction:4.0%} · {text:<40}", end=end, file=sys.stderr, flush=True)
    return report


def cmd_undo(ws: Any, args) -> int:
    from retrieval.store.calibration import read_calibration, undo_calibration

    refusal = write_refusal(ws, "calibrate")
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    before = read_calibration(ws.store)
    now = undo_calibration(ws.store)
    out = {"undone": before.describe() if before else None, "now": now.describe() if now else None,
           "defaults": now.knobs() if now else "the hybrid preset's"}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"undone: {out['undone']}; the store's defaults are now "
              f"{'the calibration ' + now.describe() if now else 'the hybrid preset’s fixed defaults'}")
    return 0


def cmd_calibrate(args) -> int:
    from retrieval.cli.store import open_workspace
    from retrieval.eval.calibrate import calibrate, generator_writer
    from retrieval.store.calibration import write_calibration

    try:
        ws = open_workspace(args)
        if args.undo:
            return cmd_undo(ws, args)
        refusal = None if args.dry_run else write_refusal(ws, "calibrate")
        if refusal:
            print(f"error: {refusal}", file=sys.stderr)
            return 2
        writer = None
        if args.llm:
            from retrieval.models.registry import make_generator

            writer = generator_writer(make_generator("gemma"))
        result = calibrate(ws.store, ws.bm25, sample=args.sample, seed=args.seed, scope=args.scope,
                           question_writer=writer, progress=_progress(args.json))
        recorded = None
        if result.adopt and not args.dry_run:
            recorded = result.record(by=_who())
            write_calibration(ws.store, recorded)
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = {**result.to_dict(), "recorded": recorded is not None, "dry_run": args.dry_run}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(result.verdict)
    print(f"{result.queries} pseudo-queries from {result.traces} traces in {result.scopes} scope(s), "
          f"{len(result.lab.scores)} candidates, {result.seconds:.1f}s")
    if result.adopt:
        print("note: pseudo-queries are phrase lookups and favour BM25 (on SciFact a calibration lost 0.03 nDCG@10 "
              "on real queries; docs/BENCHMARKS.md); check with labelled queries when you have them")
    if recorded is not None:
        print(f"recorded: the store's hybrid defaults are now {recorded.describe()}; "
              f"undo with `python -m retrieval calibrate --undo --db {ws.store.display_uri}`")
    elif result.adopt:
        print("dry run: nothing recorded")
    else:
        print("nothing recorded: the store keeps the hybrid preset's fixed defaults")
    return 0


def add_calibrate_command(sub, db_flags, scope_arg) -> None:
    sp = sub.add_parser("calibrate", help="choose this store's fusion defaults from pseudo-queries made from its "
                                          "own traces (no labels); --undo restores the previous ones")
    db_flags(sp)
    sp.add_argument("--scope", type=scope_arg, help="make pseudo-queries from this scope only (default: all)")
    sp.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help=f"pseudo-queries (default {DEFAULT_SAMPLE})")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--llm", action="store_true", help="the local Gemma model writes each pseudo-query as a question")
    sp.add_argument("--dry-run", action="store_true", help="report the result, record nothing")
    sp.add_argument("--undo", action="store_true", help="restore the calibration the last one replaced (or none)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_calibrate)


__all__ = ["add_calibrate_command", "cmd_calibrate"]
