"""`python -m retrieval case …` and `snapshot …` (SPEC §14): cases, snapshots and their diffs.

Every command prints one JSON object on stdout (progress goes to stderr) and exits 2 with an
`error: …` line on bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from retrieval.cli.knobs import FLAG_KNOBS, add_knob_flags, flag_knobs, settings_knobs
from retrieval.pipeline.config import PipelineConfig, reranker_fields
from retrieval.pipeline.presets import PRESETS
from retrieval.types import Scope

DEFAULT_DB = "data/lancedb"


def _db(sp, embedder: bool = False) -> None:
    sp.add_argument("--db", default=os.environ.get("RETRIEVAL_DB", DEFAULT_DB),
                    help=f"LanceDB URI (default {DEFAULT_DB}; env RETRIEVAL_DB)")
    if embedder:
        sp.add_argument("--embedder", default=None, help="the embedder the store was built with "
                        "(minilm | hashing | st:PATH | cohere:MODEL | openai:BASE_URL#MODEL)")


def _scope(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


MAX_K = 1000


def cutoff(text: str) -> int:
    """A rank cut-off `--k`: a whole number from 1 to 1000 (ir_measures fails on a larger one)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if not 1 <= k <= MAX_K:
        raise argparse.ArgumentTypeError(f"{text[:40]} is out of range: give 1 to {MAX_K}")
    return k


def _print(obj) -> int:
    print(json.dumps(obj, indent=2, default=str))
    return 0


def cmd_case_import(args) -> int:
    from retrieval.access import known_ids
    from retrieval.cli.gate import judgments
    from retrieval.judgments.io import import_files
    from retrieval.store.memory import MemoryStore

    store, access = MemoryStore(args.db), getattr(args, "access", None)  # only `get`: no embedder is loaded
    known = None if args.no_id_check else known_ids(store, access)
    rep = import_files(judgments(args), args.name, queries=args.queries, qrels=args.qrels, jsonl=args.jsonl,
                       scope=args.scope, scale=args.scale, known_ids=known, replace=args.replace, access=access)
    for e in rep.errors[:50]:
        print(f"  skipped {e}", file=sys.stderr)
    if rep.unknown_ids:
        print(f"  {len(rep.unknown_ids)} judged id(s) are not in {store.display_uri} and were skipped: "
              f"{', '.join(rep.unknown_ids[:20])}", file=sys.stderr)
    if rep.unknown_queries:
        print(f"  {len(rep.unknown_queries)} qrels query id(s) have no text and were skipped: "
              f"{', '.join(rep.unknown_queries[:20])}", file=sys.stderr)
    return _print(rep.to_dict())


def cmd_case_list(args) -> int:
    from retrieval.cli.gate import judgments

    return _print({"cases": judgments(args).cases()})


def cmd_case_export(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.io import export_case

    paths = export_case(judgments(args), args.name, args.out)
    return _print({"case": args.name, "files": [str(p) for p in paths]})


def snapshot_config(args) -> PipelineConfig:
    kw = flag_knobs(args, ("recall_top_k", "over_fetch_multiplier", *FLAG_KNOBS))
    given = settings_knobs(args, {"preset": ("preset", "hybrid"), "recall_top_k": ("recall_top_k", None),
                                  "over_fetch_multiplier": ("over_fetch_multiplier", None)})
    if given is not None:  # --settings: every retrieval knob (its preset too), over the config file's or the preset's
        kw = dict(given)
    kw.update(reranker_fields(args.reranker))
    if args.no_facts:
        kw["facts"] = False
    base = PipelineConfig.from_json(Path(args.config).read_text(encoding="utf-8")) if args.config else None
    if base is not None:
        return base.with_(**kw)
    return PipelineConfig.for_preset(kw.pop("preset", args.preset), **kw)


def cmd_snapshot_run(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.cli.store import open_workspace, progress_line

    cfg = snapshot_config(args)
    ws = open_workspace(args)  # the named embedder, else the one the store records
    if ws.store.count() == 0:
        raise ValueError(f"the store at {ws.store.display_uri} is empty; run `python -m retrieval build-demo` or "
                         "`ingest` first")

    js = judgments(args)
    snap = run_snapshot(ws, args.case, cfg, js, progress=progress_line("query"), label=args.label,
                        as_of=_as_of(js, args.as_of), access=getattr(args, "access", None))
    errors = {q.qid: q.error for q in snap.queries if q.error}
    return _print({"snapshot": snap.id, "case": snap.case, "metrics": snap.metrics, "queries": len(snap.queries),
                   "judged_queries": snap.judged_queries, "elapsed_ms": round(snap.elapsed_ms, 1),
                   "stage_metrics": snap.stage_metrics, **({"errors": errors} if errors else {})})


def _as_of(js, text: str | None):
    """`--as-of`: a snapshot id means the store version that snapshot ran against; else a version, tag or time."""
    from retrieval.store.versions import parse_as_of

    if text and text.strip() in {r["id"] for r in js.snapshot_rows()}:
        version = js.snapshot(text.strip()).store_version
        if version is None:
            raise ValueError(f"snapshot {text.strip()} was run before snapshots recorded their store version; "
                             "give a version, tag or time instead")
        return version
    return parse_as_of(text)


def cmd_snapshot_list(args) -> int:
    from retrieval.cli.gate import judgments

    js = judgments(args)
    return _print({"snapshots": [{"snapshot": r["id"], "case": r["case_name"], "label": r["label"],
                                  "created_at": r["created_at"], "metrics": json.loads(r["metrics"])}
                                 for r in js.snapshot_rows(args.case)]})


def cmd_snapshot_diff(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.diff import diff_snapshots

    from retrieval.judgments.fresh import case_qrels, traces_now

    js = judgments(args)
    a, b = js.snapshot(args.a), js.snapshot(args.b)
    # today's grades as the Snapshots page scores them: the case's policy, stale grades left out
    qrels = None if args.stored_grades or not js.find_case(b.case) else case_qrels(js, traces_now(args.db),
                                                                                   js.case(b.case))[0]
    return _print(diff_snapshots(a, b, qrels, k=args.k, metric=args.metric).to_dict())


def cmd_snapshot_grade(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.machine import machine_grade
    from retrieval.models.registry import make_generator
    from retrieval.store.memory import MemoryStore

    if not args.generator.strip():  # an empty spec would silently load the local Gemma model
        raise ValueError("--generator is empty; name one: cohere | openai:BASE_URL#MODEL | gemma")
    js = judgments(args)
    store = MemoryStore(args.db)
    rep = machine_grade(js, js.snapshot(args.snapshot), make_generator(args.generator),
                        lambda ids: {t.id: t.content for t in store.get(ids)}, k=args.k, regrade=args.regrade,
                       access=getattr(args, "access", None))
    _print(rep.to_dict())
    if rep.stopped is not None:  # the backend failed: what was graded is kept, the report says how far it got
        print(f"error: machine grading stopped: {rep.stopped}; {rep.graded} grade(s) kept", file=sys.stderr)
        return 2
    return 0


def _guard(fn):
    def run(args) -> int:
        try:
            return fn(args)
        except (ValueError, OSError, ImportError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return run


def add_case_commands(sub) -> None:
    """Register `case` and `snapshot` on the main parser's subparsers."""
    case = sub.add_parser("case", help="judged query sets: import, list, export (SPEC §14)")
    cs = case.add_subparsers(dest="case_cmd", required=True)
    _add_case_import(cs)
    sp = cs.add_parser("list", help="cases with their query, judged-query and snapshot counts")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_case_list))
    sp = cs.add_parser("export", help="write queries.jsonl, qrels/test.tsv, qrels.trec and NAME.jsonl")
    sp.add_argument("name")
    sp.add_argument("--out", required=True)
    _db(sp)
    sp.set_defaults(func=_guard(cmd_case_export))

    snap = sub.add_parser("snapshot", help="run a configuration over a case; diff two runs (SPEC §14)")
    ss = snap.add_subparsers(dest="snapshot_cmd", required=True)
    _add_snapshot_run(ss)
    sp = ss.add_parser("list", help="snapshots (of one case), oldest first")
    sp.add_argument("case", nargs="?")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_snapshot_list))
    _add_snapshot_diff(ss)
    _add_snapshot_grade(ss)


def _add_case_import(cs) -> None:
    sp = cs.add_parser("import", help="BEIR queries.jsonl + TREC or BEIR qrels, or a JSONL file, as a case")
    sp.add_argument("name")
    sp.add_argument("--queries", help="BEIR queries.jsonl")
    sp.add_argument("--qrels", help="TREC (qid 0 docid grade) or BEIR (query-id, corpus-id, score) qrels")
    sp.add_argument("--jsonl", help='JSONL lines {"qid", "query", "scope", "relevant": {id: grade}}')
    sp.add_argument("--scope", type=_scope, help="scope of BEIR queries, e.g. organization:beir (default: all)")
    sp.add_argument("--scale", choices=("graded", "binary"), default="graded", help="graded 0-3 or binary 0/1")
    sp.add_argument("--replace", action="store_true", help="replace the case's queries instead of adding")
    sp.add_argument("--no-id-check", action="store_true", help="keep grades of ids not (yet) in the store")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_case_import))


def _add_snapshot_run(ss) -> None:
    sp = ss.add_parser("run", help="search every query of a case and store all stage lists and metrics")
    sp.add_argument("case")
    sp.add_argument("--config", help="a config JSON exported from the app (flags override it)")
    sp.add_argument("--preset", choices=PRESETS, default="hybrid")
    add_knob_flags(sp)  # --settings STRING and --fusion, --dense-weight, …: generated from the declarations
    sp.add_argument("--reranker", default="none", help="none | embedding | cohere | cross-encoder:PATH")
    sp.add_argument("--recall-top-k", "--top-k", dest="recall_top_k", type=int)
    sp.add_argument("--over-fetch-multiplier", "--over-fetch", dest="over_fetch_multiplier", type=int)
    sp.add_argument("--no-facts", action="store_true")
    sp.add_argument("--label", default="")
    sp.add_argument("--as-of", dest="as_of", default=None,
                    help="run on the store as it was: a table version, a tag, or an ISO time with a zone; "
                         "`--as-of SNAPSHOT_ID` re-runs at the version that snapshot recorded")
    _db(sp, embedder=True)
    sp.set_defaults(func=_guard(cmd_snapshot_run))


def _add_snapshot_diff(ss) -> None:
    sp = ss.add_parser("diff", help="B minus A: metric deltas with a paired t-test, per-query deltas, moves")
    sp.add_argument("a")
    sp.add_argument("b")
    sp.add_argument("--k", type=cutoff, default=10)
    sp.add_argument("--metric", default=None, help="headline metric for per-query deltas (default ndcg@K)")
    sp.add_argument("--stored-grades", action="store_true", help="score with the grades each run used, not today's")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_snapshot_diff))


def _add_snapshot_grade(ss) -> None:
    sp = ss.add_parser("grade", help="machine-grade the ungraded top k of a snapshot (stored apart from human grades)")
    sp.add_argument("snapshot")
    sp.add_argument("--generator", required=True, help="cohere | openai:BASE_URL#MODEL | gemma (weak)")
    sp.add_argument("--k", type=cutoff, default=10)
    sp.add_argument("--regrade", action="store_true")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_snapshot_grade))
