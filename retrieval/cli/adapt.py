"""`python -m retrieval adapt`: learn the adaptive rules' strengths from graded queries and report their effect.

    adapt --db URI --case NAME [--preset hybrid] [--dry-run] [--json]     a case's graded queries in a store
    adapt --db URI --undo                                                 restore the previous record (or none)
    adapt --dataset beir:PATH|locomo:PATH|demo [--clock end] [--cache-dir DIR] [--json]     report only

Every query is searched once (facts off); `retrieval.eval.adaptive.held_out` fits the four rule strengths on the
'tune' half and prints them with the 'held-out' half's effect against the fixed weights (a paired bootstrap 95 %
interval), beside the rules as shipped. With `--case`, the learned strengths are recorded in the store's metadata
(`retrieval.store.adaptive`; used whenever `adaptive` is on) only when that interval lies above zero; otherwise
the store keeps the shipped rules and the output says so.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from retrieval.eval.clock import CLOCK_HELP, clock_arg
from retrieval.pipeline.presets import PRESETS


def _runs(args) -> tuple[list[Any], Any, str]:
    from retrieval.eval.runner import run_queries
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.retrievers import build_retriever

    cfg = PipelineConfig.for_preset(args.preset, facts=False)
    if args.dataset:
        from retrieval.cli.eval import open_clocked_set

        ws, queries, metric, score, clock = open_clocked_set(args.dataset, args.cache_dir, args.clock,
                                                             log=lambda m: print(m, file=sys.stderr))
        return run_queries(build_retriever(ws, cfg), queries, clock=clock, recall_top_k=10), score, metric
    from retrieval.cli.store import open_workspace
    from retrieval.cli.gate import judgments
    from retrieval.metrics import ndcg_at_k

    ws = open_workspace(args)
    queries = judgments(args).labelled(args.case)
    if len(queries) < 4:
        raise ValueError(f"case {args.case!r} has {len(queries)} graded queries; learning needs at least 4 "
                         "(grade more on Inspect or Judge)")
    runs = run_queries(build_retriever(ws, cfg), queries, recall_top_k=10)
    return runs, (lambda ranked, q: ndcg_at_k(ranked, q.qrels, 10)), "ndcg@10"


def _iv(d: dict[str, Any] | None) -> str:
    return "—" if not d else f"{d['delta']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}]"


def _undo(args) -> int:
    from retrieval.cli.store import open_workspace, write_refusal
    from retrieval.store.adaptive import undo_adaptive

    ws = open_workspace(args)
    refusal = write_refusal(ws, "undo learned strengths")
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    try:
        now = undo_adaptive(ws.store)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"undone; adaptive now uses {now.describe() if now else 'the shipped rules'}")
    return 0


def _record(args, out: dict[str, Any]) -> str:
    """Write the learned strengths to the store when their held-out interval lies above zero; what was done."""
    from datetime import UTC, datetime

    import getpass

    from retrieval.cli.store import open_workspace, write_refusal
    from retrieval.store.adaptive import AdaptiveRecord, write_adaptive

    learned = out["learned"]
    iv = learned.get("vs_fixed") or {}
    if not iv.get("lo", 0) > 0:
        return "not recorded: the learned strengths do not beat the fixed weights on the held-out half (interval " \
               "includes zero or is below it); adaptive keeps the shipped rules"
    if args.dry_run:
        return "dry run: the learned strengths would be recorded"
    ws = open_workspace(args)
    refusal = write_refusal(ws, "record learned strengths")
    if refusal:
        raise ValueError(refusal)
    try:
        who = getpass.getuser()
    except Exception:  # no login name in a container
        who = "cli"
    record = AdaptiveRecord(learned["strengths"], args.case, who, datetime.now(UTC).isoformat(), out["metric"],
                            learned["held_out_fixed"], learned["held_out_adaptive"], iv, out["queries"])
    write_adaptive(ws.store, record)
    return f"recorded: {record.describe()}; undo with `python -m retrieval adapt --undo --db {ws.store.display_uri}`"


def cmd_adapt(args) -> int:
    from retrieval.eval.adaptive import held_out

    if args.undo:
        return _undo(args)
    if bool(args.dataset) == bool(args.case):
        print("error: give --case NAME (with --db) or --dataset SPEC, one of them", file=sys.stderr)
        return 2
    try:
        runs, score, metric = _runs(args)
        out = {"metric": metric, **held_out(runs, score, resamples=args.resamples)}
        out["recorded"] = _record(args, out) if args.case else "not recorded: a dataset is reported, never recorded"
    except (ValueError, KeyError, FileNotFoundError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    rules, learned = out["rules"], out["learned"]
    print(f"{out['queries']} queries ({out['tune']} tune, {out['held_out']} held-out), {metric}")
    print(f"rules as shipped {rules['strengths']}: fixed {rules['fixed']:.4f} → adaptive {rules['adaptive']:.4f}, "
          f"{_iv(rules['vs_fixed'])}, {rules['moved']} queries moved")
    print(f"learned on the tune half {learned['strengths']}: held-out fixed {learned['held_out_fixed']:.4f} → "
          f"{learned['held_out_adaptive']:.4f}, {_iv(learned.get('vs_fixed'))}")
    print(f"best dense share per query (a ceiling, not reachable by rules): {out['oracle_share']:.4f}")
    print(out["recorded"])
    return 0


def add_adapt_command(sub, db_flags) -> None:
    sp = sub.add_parser("adapt", help="learn the adaptive weights' rule strengths from graded queries (a case or a "
                                      "dataset) and print their held-out effect")
    db_flags(sp)
    sp.add_argument("--case", help="a case in the store at --db")
    sp.add_argument("--dataset", help="beir:PATH | locomo:PATH | demo (the eval harness's cached store)")
    sp.add_argument("--clock", type=clock_arg, metavar="now|end|ISO-TIME", help="with --dataset: " + CLOCK_HELP)
    sp.add_argument("--cache-dir", default=".cache/eval")
    sp.add_argument("--preset", choices=PRESETS, default="hybrid")
    sp.add_argument("--resamples", type=int, default=10_000)
    sp.add_argument("--dry-run", action="store_true", help="with --case: report, record nothing")
    sp.add_argument("--undo", action="store_true", help="restore the learned strengths the last record replaced")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_adapt)


__all__ = ["add_adapt_command", "cmd_adapt"]
