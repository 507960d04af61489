"""`tag`, `diff-versions` and `import-log`: the flight recorder on the command line (SPEC §16).

`query TEXT --as-of VERSION|TAG|ISO-TIME` lives with `query` (cli/main.py) and reads through
`retrieval.history.WorkspaceAsOf`; `status --json` shows `version` and `tags`.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

AS_OF_HELP = "VERSION (an int), TAG, or ISO-TIME with a zone (e.g. 2026-03-01T12:00:00Z): read the store as it was then"


def as_of_arg(text: str) -> Any:
    """An `--as-of` value (None for 'latest'); argparse reports a ValueError as a usage error."""
    import argparse

    from retrieval.store.versions import parse_as_of

    try:
        return parse_as_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def default_scope(retriever: Any, access: Any = None) -> tuple[Any, str]:
    """The scope a command without --scope searches: the first scope of the version `retriever` reads (an as-of
    retriever: that version's, so the answer is what a store built to that state gives) that the visitor
    (`access`, None: the operator) may read, and where it is from."""
    state = getattr(retriever, "as_of_state", None)
    scopes = [s for s in retriever.memory_store.scopes() if access is None or access.sees(s)]
    where = "the store" if state is None else f"version {state.pinned.version}"
    return (scopes[0] if scopes else None), where


def check_readable(access: Any, scope: Any, all_scopes: bool) -> None:
    """A visitor limited to some scopes reads only those: `--all-scopes` or another scope is refused (ValueError)."""
    if access is None or not access.limited:
        return
    mine = ", ".join(sorted(access.scopes or ()))
    if all_scopes:
        raise ValueError(f"--all-scopes reads every scope; you may read only {mine}: pass --scope")
    if scope is not None and not access.sees(scope):
        raise ValueError(f"you may not read scope {scope}; you may read {mine}")


def _workspace(args) -> Any:
    from retrieval.cli.store import open_workspace

    return open_workspace(args)


def cmd_tag(args) -> int:
    from retrieval.store.versions import create_tag, list_versions

    ws = _workspace(args)
    tbl = ws.store.table()
    if tbl is None:
        print(f"error: the store at {ws.store.display_uri} has no table yet; ingest something first", file=sys.stderr)
        return 2
    if args.list or not args.name:
        tags = ws.store.tags()
        times = dict(list_versions(tbl))
        out = {"version": ws.store.version(),
               "tags": {n: {"version": v, "committed": times[v].isoformat() if v in times else None}
                        for n, v in tags.items()}}
        print(json.dumps(out, indent=2))
        return 0
    if ws.demo_mode or ws.store.read_only:
        print(f"error: {ws.store.display_uri} is read-only here (demo mode or a table inspected in place); "
              "tags are written into the table", file=sys.stderr)
        return 2
    try:
        v = create_tag(tbl, args.name, args.version)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"tagged version {v} of {ws.store.display_uri} as {args.name!r}; it is never cleaned up by this project")
    return 0


def _retrievers(args) -> tuple[Any, Any, Any]:
    from retrieval.history.view import WorkspaceAsOf
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.retrievers import build_retriever
    from retrieval.cli.knobs import with_calibrated
    from retrieval.store.calibration import calibrated_fusion

    from retrieval.cli.knobs import flag_knobs, settings_knobs

    given = settings_knobs(args, {"preset": ("preset", "hybrid"), "recall_top_k": ("recall_top_k", 10),
                                  "over_fetch_multiplier": ("over_fetch_multiplier", 3)})
    ws = _workspace(args)
    if given is not None:  # --settings: every retrieval knob; the store's calibration does not apply
        cfg = PipelineConfig.for_preset(given.pop("preset"), facts=not args.no_facts, **given)
    else:
        knobs = flag_knobs(args)
        cfg = PipelineConfig.for_preset(args.preset, recall_top_k=args.recall_top_k, facts=not args.no_facts,
                                        over_fetch_multiplier=args.over_fetch_multiplier, **knobs)
        cfg = with_calibrated(cfg, calibrated_fusion(ws.store, args.preset), given=knobs)
    access = getattr(args, "access", None)  # the visitor the gate admitted (None: the local operator)
    then = build_retriever(WorkspaceAsOf(ws, args.from_), cfg, access=access)
    now = build_retriever(WorkspaceAsOf(ws, args.to), cfg, access=access)
    return ws, cfg, (then, now)


def cmd_diff_versions(args) -> int:
    from retrieval.history.diff import diff_versions
    from retrieval.types import Mood

    t0 = time.perf_counter()
    try:
        ws, cfg, (then, now) = _retrievers(args)
        scope, access = args.scope, getattr(args, "access", None)
        check_readable(access, scope, args.all_scopes)
        if scope is None and not args.all_scopes:  # the first scope of version A (of B when A had none)
            scope = default_scope(then, access)[0] or default_scope(now, access)[0]
            if scope is None and access is not None and access.limited:  # never "every scope" for them
                raise ValueError("no scope you may read holds traces at either version; pass --scope")
        out = diff_versions(then, now, args.text, scope, mood=Mood(),
                            recall_top_k=cfg.settings.recall_top_k,
                            over_fetch_multiplier=cfg.settings.over_fetch_multiplier)
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print_diff(out)
    return 0


def print_diff(out: dict, file=None) -> None:
    file = file or sys.stdout
    print(f"query {out['query']!r} in {out['scope'] or 'every scope'}", file=file)
    print(f"A: {out['from']['label']}\nB: {out['to']['label']}", file=file)
    n = out.get("shown", 10)
    for stage, s in out["stages"].items():
        if s["entered"] or s["left"]:
            print(f"  {stage:<9} entered the top {n}: {', '.join(s['entered']) or '-'}   left the top {n}: "
                  f"{', '.join(s['left']) or '-'}", file=file)
    for d in out["displaced"]:
        print(f"{d['id']} left the top {out['k']} (was #{d['rank_a']}): {d['why']}", file=file)
        for y in d["displaced_by"]:
            print(f"    displaced by {y['id']} (#{y['rank_b']}): {'; '.join(y['reasons'])}", file=file)
    for m in out["idf"]:
        print(f"  {m['sentence']}", file=file)


def cmd_import_log(args) -> int:
    from retrieval.cli.store import progress_line, report_bad_lines
    from retrieval.cli.gate import judgments
    from retrieval.replay.store import QueryLog, import_log

    access = getattr(args, "access", None)  # a writer limited to some scopes imports only their lines
    try:
        rep, grades = import_log(QueryLog(args.db), judgments(args), args.file,
                                 source=str(args.file).rsplit("/", 1)[-1], grades=not args.no_grades,
                                 access=access, allowed=access.sees if access else None,
                                 progress=progress_line("importing"))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report_bad_lines(rep.errors, file=args.file)
    rate = (rep.added + rep.already + len(rep.errors)) / rep.seconds if rep.seconds else 0.0
    print(f"{rep.summary()}; {grades} implicit grade(s); {rep.seconds:.1f}s ({rate:,.0f} lines/s)")
    if rep.added or rep.already or not rep.errors:
        return 0
    print(f"error: no line of {args.file} is a logged query ({len(rep.errors)} bad line(s), listed above); "
          "fix them (one JSON object per line: timestamp, query, results) and import again", file=sys.stderr)
    return 2


def add_history_commands(sub, db_flags, scope_arg) -> None:
    """Register `tag`, `diff-versions` and `import-log` on the `python -m retrieval` parser."""
    sp = sub.add_parser("tag", help="tag a table version (never cleaned up by this project), or --list the tags")
    sp.add_argument("name", nargs="?")
    sp.add_argument("--version", type=int, help="the version to tag (default: the newest)")
    sp.add_argument("--list", action="store_true", help="print the tags and the current version as JSON")
    db_flags(sp)
    sp.set_defaults(func=cmd_tag)
    sp = sub.add_parser("diff-versions", help="one query at two versions: stage lists, what entered and left, why")
    sp.add_argument("text")
    sp.add_argument("--from", dest="from_", type=as_of_arg, required=True, metavar="A", help=AS_OF_HELP)
    sp.add_argument("--to", type=as_of_arg, default=None, metavar="B", help="as --from (default: latest)")
    sp.add_argument("--scope", type=scope_arg)
    sp.add_argument("--all-scopes", action="store_true")
    sp.add_argument("--json", action="store_true")
    db_flags(sp)
    _query_knobs(sp)
    sp.set_defaults(func=cmd_diff_versions)
    sp = sub.add_parser("import-log", help="import an agent's retrieval log (JSONL or OpenInference RETRIEVER spans)")
    sp.add_argument("file")
    sp.add_argument("--no-grades", action="store_true", help="do not turn feedback into implicit grades")
    db_flags(sp)
    sp.set_defaults(func=cmd_import_log)


def _query_knobs(sp) -> None:
    """The pipeline flags of `diff-versions` (the rest of the configuration is the preset's, or the store's
    calibration): the knob flags generated from their declarations and `--settings STRING` (`cli/knobs.py`)."""
    from retrieval.cli.knobs import add_knob_flags
    from retrieval.hybrid import PRESETS

    sp.add_argument("--preset", choices=PRESETS, default="hybrid")
    sp.add_argument("--recall-top-k", "--top-k", dest="recall_top_k", type=int, default=10)
    sp.add_argument("--over-fetch-multiplier", dest="over_fetch_multiplier", type=int, default=3)
    sp.add_argument("--no-facts", action="store_true")
    add_knob_flags(sp)
