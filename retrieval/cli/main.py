"""`python -m retrieval …`: ingest files, query with every knob, build the demo index, evaluate."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from retrieval.facts.store import FactStoreError
from retrieval.judgments.store import JudgmentStoreError
from retrieval.models.errors import BackendError
from retrieval.cli.adapt import add_adapt_command
from retrieval.cli.calibrate import add_calibrate_command
from retrieval.cli.cases import add_case_commands, cutoff
from retrieval.cli.doctor import add_doctor_command
from retrieval.cli.gate import (TRACEBACK_ENV, GateParser, admit, audited, failure_line, scrubbed_output, stamp,
                                writer)
from retrieval.cli.judge import add_judge_commands
from retrieval.cli.knobs import EVAL_KNOBS, add_knob_flags, flag_knobs, settings_knobs, with_calibrated
from retrieval.cli.distributed import add_ray_flags, ingest_on_ray
from retrieval.cli.output import print_stages
from retrieval.cli.history import AS_OF_HELP, add_history_commands, as_of_arg, check_readable, default_scope
from retrieval.cli.store import add_store_commands, add_store_flags, embedder_help, report_bad_lines
from retrieval.eval.clock import CLOCK_HELP, clock_arg
from retrieval.pipeline.config import PipelineConfig, generator_fields, reranker_fields
from retrieval.workspace.retrievers import build_retriever
from retrieval.fusion import FusionStrategy
from retrieval.pipeline.settings import SWITCHES
from retrieval.store.calibration import calibrated_fusion
from retrieval.history.view import WorkspaceAsOf
from retrieval.hybrid import PRESETS
from retrieval.models.registry import EMBEDDERS
from retrieval.types import SCOPES, Mood, Scope

DEFAULT_DB = "data/lancedb"


def _scope_arg(text: str) -> Scope:
    try:
        return Scope.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def config_from_args(args, calibrated: FusionStrategy | None = None) -> PipelineConfig:
    """The `query` command's flags as the one `PipelineConfig` the app and evaluation also use; `calibrated` (the
    store's calibrated fusion strategy) is the fusion, as it is, when no fusion flag is given."""

    kw: dict = dict(recall_top_k=args.recall_top_k, over_fetch_multiplier=args.over_fetch_multiplier,
                    facts=not args.no_facts, split_threshold=args.split or 0.0, multi_query_n=args.multi_query,
                    valence=args.valence, arousal=args.arousal, dominance=args.dominance)
    kw.update(flag_knobs(args))
    kw.update(reranker_fields(args.reranker))
    gens = {g for g in (args.hyde if args.hyde != "none" else None,
                        args.multi_query_backend if args.multi_query else None) if g}
    if len(gens) > 1:
        raise ValueError(f"--hyde {args.hyde} and --multi-query-backend {args.multi_query_backend} differ; "
                         "use one text generator for both")
    if gens:
        kw.update(generator_fields(gens.pop()))
    kw["hyde"] = args.hyde != "none"
    kw["adaptive"] = bool(getattr(args, "adaptive", False))
    given = settings_knobs(args, QUERY_OTHERS)
    if given is not None:  # --settings: the whole value, the store's calibration does not apply
        kw.update(given)
        return PipelineConfig.for_preset(kw.pop("preset"), **kw)
    cfg = PipelineConfig.for_preset(args.preset, **kw)
    return with_calibrated(cfg, calibrated, given=kw)



# The query's own flags for knobs the settings value also holds: dest → (knob, the value when not given).
QUERY_OTHERS = {"preset": ("preset", "hybrid"), "recall_top_k": ("recall_top_k", 10),
                "over_fetch_multiplier": ("over_fetch_multiplier", 3), "split": ("split_threshold", None),
                "adaptive": ("adaptive", False)}


def _workspace(args):
    from retrieval.cli.store import open_workspace

    return open_workspace(args)


def cmd_ingest(args) -> int:
    from retrieval.ingest.loaders import load_path

    kw: dict[str, str] = {}
    if args.scope:
        kw.update(scope=args.scope.scope, scope_id=args.scope.scope_id)
    try:
        rep = load_path(args.file, **kw)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report_bad_lines(rep.errors, "rejected lines", file=rep.source)
    if not rep.traces:
        print(f"error: no valid trace in {args.file}; nothing was written", file=sys.stderr)
        return 2
    if args.ray is not None:  # embedded and written on Ray (retrieval.distributed)
        return ingest_on_ray(args, rep.traces)
    ws = _workspace(args)
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        print(f"\r  embedding {done}/{total}", end="", file=sys.stderr, flush=True)

    rep2 = ws.ingest(rep.traces, progress=progress, extract_facts=not args.no_facts, **writer(args))
    print(file=sys.stderr)
    print(f"{rep.summary()}; wrote {rep2.written} to {ws.store.display_uri} in {time.perf_counter() - t0:.1f}s, "
          f"{rep2.facts} new fact(s)")
    if rep2.duplicates:
        print(f"  duplicate ids in the file (last kept): {', '.join(rep2.duplicates[:20])}")
    return 0


def cmd_query(args) -> int:
    ws = _workspace(args)
    if ws.store.count() == 0:
        print(f"error: the store at {ws.store.display_uri} is empty; run `python -m retrieval build-demo` or "
              "`ingest` first", file=sys.stderr)
        return 2
    access = getattr(args, "access", None)  # the visitor the gate admitted (None: the local operator)
    try:
        check_readable(access, args.scope, args.all_scopes)
        cfg = config_from_args(args, calibrated_fusion(ws.store, args.preset))
        retriever = build_retriever(WorkspaceAsOf(ws, args.as_of), cfg, access=access)  # as_of None: the live store
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scope = args.scope
    if scope is None and not args.all_scopes:
        scope, where = default_scope(retriever, access)  # of the version read, as a store built to that state
        if scope is None and access is not None and access.limited:  # never "every scope" for a limited visitor
            print(f"error: no scope you may read holds traces in {where}; pass --scope", file=sys.stderr)
            return 2
        if scope is not None and not args.json:
            print(f"scope: {scope} (the first in {where}; pass --scope or --all-scopes)")
    result = retriever.retrieve(args.text, mood=Mood(cfg.valence, cfg.arousal, cfg.dominance), scope=scope)
    d = result.diagnostics
    if args.json:
        print(json.dumps({"scope": str(scope) if scope is not None else None,
                          "final": [{"id": t.id, "score": t.retrieval_score, "content": t.content}
                                    for t in result.traces], "stage_ids": d.stage_ids,
                          "escalations": d.escalations, "timings_ms": d.timings_ms, "hyde": d.hyde,
                          "adaptive": d.adaptive.as_dict() if d.adaptive is not None else None,
                          "settings": str(cfg.settings),
                          "as_of": retriever.as_of_state.pinned.label if retriever.as_of_state else None}, indent=2))
        return 0
    print(f"query: {args.text!r}   preset: {cfg.settings.preset_name}   {retriever!r}")
    if retriever.as_of_state is not None:
        print(retriever.as_of_state.banner_for([str(scope)] if scope is not None else None))
    if d.hyde:
        print(f"HyDE hypothesis: {d.hyde}")
    if d.multi_query:
        print(f"multi-query variants: {d.multi_query}")
    if d.adaptive is not None:
        print(f"adaptive weights: {d.adaptive['summary']}")
    print_stages(result, limit=args.rows)
    print()
    print("final:")
    for i, t in enumerate(result.traces, 1):
        extra = ""
        ex = d.explain(t.id)
        if ex.fact:
            extra = f"  [fact from {', '.join(ex.fact['source_trace_ids'])}]"
        print(f"{i:>3}. {t.id}  {t.retrieval_score:.3f}  {t.content[:100]!r}{extra}")
    if d.escalations:
        print("escalations: " + "; ".join(d.escalations))
    print("timings (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in d.timings_ms.items()))
    for tid in args.explain or []:
        ex = d.explain(tid, retriever.lookup(scope))  # an id the query never touched: its stored row
        print(f"\nexplain {tid}: {ex.reason}")
        print(json.dumps({k: v for k, v in ex.to_dict().items() if v is not None and k != "trace_id"},
                         indent=2, default=str))
    return 0


def cmd_build_demo(args) -> int:
    from retrieval.ingest.demo import build_demo_index
    from retrieval.models.registry import make_embedder

    try:
        status = build_demo_index(args.db, force=args.force, log=lambda m: print(m, flush=True),
                                  embedder=make_embedder(args.embedder))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2))
    return 0


def cmd_status(args) -> int:
    ws = _workspace(args)
    try:  # --as-of: the store as it was then (SPEC §16), read only
        access = getattr(args, "access", None)  # a visitor limited to some scopes: their scopes' counts only
        print(json.dumps(ws.status(access) if args.as_of is None
                         else ws.retriever(as_of=args.as_of).as_of_state.status(access), indent=2))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_eval(args) -> int:
    from retrieval.cli.eval import run_eval_cli

    return run_eval_cli(args)


def db_flags(sp: argparse.ArgumentParser) -> None:
    """`--db`, `--embedder` and the store flags every store-reading command takes."""
    sp.add_argument("--db", default=os.environ.get("RETRIEVAL_DB", DEFAULT_DB),
                    help=f"LanceDB URI (default {DEFAULT_DB}; env RETRIEVAL_DB)")
    sp.add_argument("--embedder", default=None, help=embedder_help())
    add_store_flags(sp)


def add_ingest_command(sub) -> None:
    sp = sub.add_parser("ingest", help="load a .jsonl/.csv/.txt file or a BEIR folder into the store")
    sp.add_argument("file")
    db_flags(sp)
    sp.add_argument("--scope", type=_scope_arg,
                    help=f"default scope for lines without one, e.g. user:u1 ({', '.join(SCOPES)})")
    sp.add_argument("--no-facts", action="store_true", help="skip fact extraction")
    add_ray_flags(sp)
    sp.set_defaults(func=cmd_ingest)


def add_query_command(sub) -> None:
    sp = sub.add_parser("query", help="run the pipeline and print the five stage lists")
    sp.add_argument("text")
    db_flags(sp)
    sp.add_argument("--scope", type=_scope_arg)
    sp.add_argument("--all-scopes", action="store_true", help="search every scope (no fact graph)")
    sp.add_argument("--preset", choices=PRESETS, default="hybrid")
    sp.add_argument("--recall-top-k", "--top-k", dest="recall_top_k", type=int, default=10)
    sp.add_argument("--over-fetch-multiplier", "--over-fetch", dest="over_fetch_multiplier", type=int, default=3)
    add_knob_flags(sp)  # --settings STRING and --fusion, --dense-weight, …: generated from the declarations
    sp.add_argument("--adaptive", action="store_true", help=SWITCHES["adaptive"])
    sp.add_argument("--reranker", default="none", help="none | embedding | cohere | cross-encoder:PATH")
    sp.add_argument("--hyde", default="none", help="none | gemma | cohere | openai:BASE_URL[#MODEL]")
    sp.add_argument("--multi-query", type=int, default=0, metavar="N", help="N query variants (0 = off)")
    sp.add_argument("--multi-query-backend", default="gemma")
    sp.add_argument("--split", type=float, default=None, help="split-on-ambiguous threshold in (0, 1]")
    sp.add_argument("--no-facts", action="store_true")
    sp.add_argument("--valence", type=float, default=0.0)
    sp.add_argument("--arousal", type=float, default=0.0)
    sp.add_argument("--dominance", type=float, default=0.0)
    sp.add_argument("--rows", type=cutoff, default=15, help="how many rows of each stage to print (1 to 1000)")
    sp.add_argument("--explain", action="append", metavar="ID")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--as-of", type=as_of_arg, default=None, metavar="VERSION|TAG|ISO-TIME", help=AS_OF_HELP)
    sp.set_defaults(func=cmd_query)


def add_build_demo_command(sub) -> None:
    sp = sub.add_parser("build-demo", help="build the demo index from data/demo (skipped when present)")
    db_flags(sp)
    sp.add_argument("--force", action="store_true")
    sp.set_defaults(func=cmd_build_demo)


def add_status_command(sub) -> None:
    sp = sub.add_parser("status", help="traces, BM25 documents, facts and index state, version and tags (JSON)")
    db_flags(sp)
    sp.add_argument("--json", action="store_true", help="accepted for symmetry: status always prints JSON")
    sp.add_argument("--as-of", type=as_of_arg, default=None, metavar="VERSION|TAG|ISO-TIME", help=AS_OF_HELP)
    sp.set_defaults(func=cmd_status)


def add_eval_command(sub) -> None:
    sp = sub.add_parser("eval", help="per-stage metrics on a labelled dataset")
    sp.add_argument("--dataset", required=True, help="beir:PATH | locomo:PATH | demo")
    sp.add_argument("--preset", action="append", choices=PRESETS,
                    help="repeatable; default both. Dense-only and BM25-only rows are the dense and sparse stages")
    sp.add_argument("--sweep", action="store_true")
    sp.add_argument("--lab", action="store_true", help="fusion lab: every fusion function × normalisation × weight")
    add_knob_flags(sp, EVAL_KNOBS, notes={"dense_weight": "sets sparse = 1 − dense",
                                          "settings": "one preset; eval measures at recall_top_k=10"})
    sp.add_argument("--adaptive", action="store_true", help=SWITCHES["adaptive"])
    sp.add_argument("--reranker", default="none")
    sp.add_argument("--hyde", default="none")
    sp.add_argument("--max-queries", type=int)
    sp.add_argument("--cache-dir", default=".cache/eval")
    sp.add_argument("--embedder", default="minilm", help=" | ".join(EMBEDDERS))
    sp.add_argument("--out", help="write the results as JSON here")
    sp.add_argument("--clock", type=clock_arg, metavar="now|end|ISO-TIME", help=CLOCK_HELP)
    sp.set_defaults(func=cmd_eval)


def build_parser() -> argparse.ArgumentParser:
    p = GateParser(prog="python -m retrieval", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    add_ingest_command(sub)
    add_query_command(sub)
    add_build_demo_command(sub)
    add_status_command(sub)
    add_eval_command(sub)
    add_case_commands(sub)
    add_judge_commands(sub)
    add_calibrate_command(sub, db_flags, _scope_arg)
    add_adapt_command(sub, db_flags)
    add_store_commands(sub, db_flags)
    add_history_commands(sub, db_flags, _scope_arg)
    add_doctor_command(sub, db_flags)
    return stamp(p)  # every command knows its name; `main` looks it up in the command table (cli/gate.py)


# What a command may fail with on bad input or a bad environment: one `error:` line, exit code 2. Anything else
# is a bug: one line too (exit code 1), or its traceback with RETRIEVAL_TRACEBACK=1.
# BackendError: a model server or API that cannot be reached or refuses (its message says how to fix it).
EXPECTED = (ValueError, OSError, ImportError, OverflowError, RecursionError, JudgmentStoreError, FactStoreError,
            BackendError)


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command line; `parser` is `build_parser()`'s (built here when None: a caller running many command
    lines in one process, as the generated CLI tests do, builds it once — parsing never changes a parser)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = (parser or build_parser()).parse_args(argv)
    with scrubbed_output(args):  # no command prints a URI's credentials, whatever it prints
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        args.access = admit(args)  # the one gate, before the command runs: demo mode, access, identity
        rc = args.func(args)
        if rc == 0:
            audited(args)
        return rc
    except BrokenPipeError:  # `| head`
        return 0
    except EXPECTED as exc:  # incl. ReadOnlyError, AccessDenied, ENOSPC, a damaged side table
        print(failure_line(exc, args), file=sys.stderr)
        return 2
    except Exception as exc:
        if str(exc).startswith("lance error:"):  # LanceDB refusing an input (a ref, a filter): bad input
            print(failure_line(exc, args), file=sys.stderr)
            return 2
        if os.environ.get(TRACEBACK_ENV, "").strip() not in ("", "0"):
            raise
        print(failure_line(RuntimeError(f"internal error ({type(exc).__name__}: {exc}); this is a bug: rerun with "
                                        f"{TRACEBACK_ENV}=1 for its traceback and report it"), args), file=sys.stderr)
        return 1
