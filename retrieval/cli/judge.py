"""`python -m retrieval judge …`: a case's raters from the command line — export and import ratings (TREC qrels
per rater or combined, CSV, JSONL), agreement between raters (and the machine rater's calibration), the case's
combination policy and k.

Every command prints one JSON object on stdout and exits 2 with an `error: …` line on bad input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from retrieval.cli.cases import _db, _guard, _print, cutoff

FORMATS = ("trec", "csv", "jsonl")


def cmd_export(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.exchange import export_ratings

    text = export_ratings(judgments(args), args.case, args.format, args.rater)
    Path(args.out).write_text(text, encoding="utf-8")
    return _print({"case": args.case, "format": args.format, "rater": args.rater or "combined",
                   "out": args.out, "lines": text.count("\n")})


def _renames(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        old, sep, new = p.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"--rename {p!r} is not OLD=NEW; e.g. --rename alice=alice@example.com")
        out[old] = new
    return out


def cmd_import(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.exchange import import_ratings
    from retrieval.access import known_ids
    from retrieval.store.memory import MemoryStore

    store, access = MemoryStore(args.db), getattr(args, "access", None)
    known = None if args.no_id_check else known_ids(store, access)
    rep = import_ratings(judgments(args), args.case, Path(args.file).read_bytes(), Path(args.file).name,
                         rename=_renames(args.rename), known_ids=known, rater=args.rater or "", access=access)
    for e in rep.errors[:50]:
        print(f"  skipped {e}", file=sys.stderr)
    return _print(rep.to_dict())


def cmd_agreement(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.agreement import calibration, case_agreement

    js = judgments(args)
    case = js.case(args.case)
    found = js.case_judgments(case)
    hashes = js.hashes_now(found)  # stale grades left out, as in `snapshot run` and on the Judge page
    agg = case_agreement(found, case.scale, hashes)
    return _print({"case": case.name, "scale": case.scale, "policy": json.loads(js.policy(case.name).to_json()),
                   **agg, "items_by_raters": {str(k): v for k, v in agg["items_by_raters"].items()},
                   "machine_calibration": calibration(found, case.scale, hashes)})


def cmd_policy(args) -> int:
    from retrieval.cli.gate import judgments
    from retrieval.judgments.agreement import calibration
    from retrieval.judgments.raters import CasePolicy

    js = judgments(args)
    old = js.policy(args.case)
    found = js.case_judgments(args.case)
    cal = calibration(found, js.case(args.case).scale, js.hashes_now(found)) if args.machine else []
    if args.machine and not cal:
        raise ValueError("the machine rater has no grade in common with a human rater on this case: nothing to "
                         "calibrate it against; grade some of its results first")
    combine = args.combine or old.combine
    pol = CasePolicy(combine, args.rater or (old.rater if combine == "rater" else ""), args.k or old.k,
                     bool(args.machine), {"rows": cal} if args.machine else {})
    js.set_policy(args.case, pol, access=getattr(args, "access", None))
    return _print({"case": args.case, "policy": json.loads(pol.to_json()), "describe": pol.describe()})


def add_judge_commands(sub) -> None:
    """Register `judge` on the main parser's subparsers."""
    judge = sub.add_parser("judge", help="raters of a case: export, import, agreement, combination policy")
    js = judge.add_subparsers(dest="judge_cmd", required=True)
    sp = js.add_parser("export", help="ratings as TREC qrels (one rater or combined), CSV or JSONL")
    sp.add_argument("case")
    sp.add_argument("--format", choices=FORMATS, default="jsonl")
    sp.add_argument("--rater", default=None, help="one rater's ratings (default: every rater; TREC: combined)")
    sp.add_argument("--out", required=True)
    _db(sp)
    sp.set_defaults(func=_guard(cmd_export))
    sp = js.add_parser("import", help="ratings exported by `judge export` (JSONL or CSV), each back to its rater")
    sp.add_argument("case")
    sp.add_argument("file")
    sp.add_argument("--rename", action="append", default=[], metavar="OLD=NEW", help="map a rater's name")
    sp.add_argument("--no-id-check", action="store_true", help="keep ratings of ids not (yet) in the store")
    sp.add_argument("--rater", default=None, help="the rater of rows that name none (default: local, the local "
                    "operator; `machine` and `implicit` are reserved)")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_import))
    sp = js.add_parser("agreement", help="raters per item, pairwise kappa, alpha, the machine rater's calibration")
    sp.add_argument("case")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_agreement))
    sp = js.add_parser("policy", help="how the case combines its raters (mean | majority | rater) and its k")
    sp.add_argument("case")
    sp.add_argument("--combine", choices=("mean", "majority", "rater"))
    sp.add_argument("--rater", help="with --combine rater: whose grades")
    sp.add_argument("--k", type=cutoff)
    sp.add_argument("--machine", action="store_true", help="count the machine rater (its calibration is printed)")
    _db(sp)
    sp.set_defaults(func=_guard(cmd_policy))
