"""How the `hybrid` preset's defaults were chosen: a grid on development data only.

For each switch the preset has (rank completion on/off) and each fusion setting (dense weight,
sparse = 1 − dense; RRF k), the final-list metric on LoCoMo conversations 1–5 (evidence recall@10)
and on the demo judgments (nDCG@10). SciFact is a reported test set and is not used here.

`--clock now|end|ISO-TIME` is the instant recency is scored at (retrieval.eval.clock; default `end` for a
dataset with real timestamps — LoCoMo, the demo — else `now`); every JSON written records it.

`--designs` compares the designs of `retrieval.eval.designs` instead — today's default, RRF,
cosine-only dense, a bounded prior, each with the english-stem analyser, and the single sides — on LoCoMo
dev and (with --beir) SciFact, at every --clock given (repeatable), with paired bootstrap 95 % intervals
against BM25 alone and today's default, and the design that maximises the worst-case gain over the better
single side across LoCoMo at `end` and SciFact.

Run: .venv/bin/python scripts/choose_hybrid_defaults.py --locomo ../shared/eval/locomo-dev/locomo-dev.json
     [--clock end] [--out docs/eval/hybrid-choice.json]
     .venv/bin/python scripts/choose_hybrid_defaults.py --designs --locomo ../shared/eval/locomo-dev/locomo-dev.json \
        --beir ../shared/eval/scifact --clock end --clock now --out /tmp/issue24/designs.json
"""
from __future__ import annotations

import argparse
from typing import Any
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.fusion import FusionStrategy, strategy_for  # noqa: E402
from retrieval.pipeline.presets import AGENTOS_PRESET, HYBRID_PRESET  # noqa: E402
from retrieval.cli.eval import open_clocked_set, open_eval_workspace  # noqa: E402
from retrieval.eval.clock import CLOCK_HELP, clock_arg, make_clock  # noqa: E402
from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.designs import (BM25_LABEL, DEFAULT_LABEL, Design, compare, issue24_designs,  # noqa: E402
                                    recommend, run_variant, score_designs, variant_index, worst_case_gain)
from retrieval.metrics import evidence_recall_at_k, mean, ndcg_at_k, paired_bootstrap  # noqa: E402
from retrieval.eval.runner import credited_ids  # noqa: E402
from retrieval.eval.lab import DENSE_WEIGHTS, RRF_KS  # noqa: E402

WEIGHTS = [w for w in DENSE_WEIGHTS if 0.3 <= w <= 0.7]  # the lab's grid, its extremes left out of this study
KS = list(RRF_KS)
SINGLE_TODAY = (BM25_LABEL, "f. dense alone (cognitive score)")  # the single sides as the product ships them


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def grid_strategies(base: FusionStrategy) -> list[list[FusionStrategy]]:
    """The grid around a variant's own fusion `base`, one row per dense weight (`FusionStrategy.balanced`: sparse =
    1 − dense), one column per RRF k (a strategy without k keeps its own parameters, so its columns agree)."""
    return [[strategy_for(base.knobs(), rrf_k=k).balanced(w) for k in KS] for w in WEIGHTS]


def grid(spec: str, metric_name: str, cache_dir: str, clock=None) -> dict:
    name, traces, queries = load_dataset(spec)
    sc = make_clock(clock, traces)
    ws = open_eval_workspace(name, traces, cache_dir, log=log, clock=sc)

    def metric(ids, q):
        if metric_name == "recall@10":
            return evidence_recall_at_k(ids, list(q.qrels), 10)
        return ndcg_at_k(ids, q.qrels, 10)

    out: dict[str, Any] = {"dataset": spec, "metric": metric_name, "clock": sc.describe(), "weights": WEIGHTS,
                           "ks": KS, "grids": {}}
    # Variants are new frozen presets passed to the retriever; nothing global changes.
    variants = {"agentos": AGENTOS_PRESET, "hybrid": replace(HYBRID_PRESET, complete_ranks=False),
                "hybrid+completion": replace(HYBRID_PRESET, complete_ranks=True)}
    for label, preset in variants.items():
        r = ws.retriever(preset=preset, fact_store=None)
        runs = []
        for q in queries:
            with sc.scoped(q.scope):
                runs.append((q, r.retrieve(q.query, scope=q.scope, recall_top_k=10)))
        out["grids"][label] = [[round(mean([metric(credited_ids(r.reweight(x, x.diagnostics.settings.with_(fusion=f)),
                                                                "final"), q) for q, x in runs]), 4) for f in row]
                               for row in grid_strategies(r.retrieval_settings.strategy)]
        log(f"{label} {out['grids'][label]}")
    return out


def stem_twin(d: Design, by_label: dict[str, Design]) -> Design | None:
    """The plain-analyser design with the same knobs as an english-stem one."""
    if d.variant.analyzer != "english-stem":
        return None
    want = replace(d, label="", variant=replace(d.variant, analyzer="plain"))
    return next((p for p in by_label.values() if replace(p, label="") == want), None)


def designs_at(spec: str, clock, cache_dir: str, resamples: int, bm25_cache: dict, seen: set) -> dict | None:
    """Every design's per-query scores on one dataset at one clock, with paired intervals; None when the clock is
    one already run on this dataset (`end` on a dataset without real timestamps is `now`)."""
    designs = issue24_designs()
    ws, queries, metric, score, sc = open_clocked_set(spec, cache_dir, clock, log=log)
    key = (spec, sc.mode, sc.default, tuple(sorted(sc.describe()["by_scope"].items())))
    if key in seen:
        log(f"  {spec}: clock {clock} is {sc.mode} here, already run")
        return None
    seen.add(key)
    variants = list(dict.fromkeys(d.variant for d in designs))
    runs = {}
    for v in variants:
        if (spec, v.analyzer) not in bm25_cache:
            bm25_cache[(spec, v.analyzer)] = variant_index(ws.store, v.analyzer)
        t0 = time.perf_counter()
        runs[v] = run_variant(ws.store, bm25_cache[(spec, v.analyzer)], queries, v, clock=sc)
        log(f"  {spec} @ {sc.mode}: {v.label}: {len(queries)} queries in {time.perf_counter() - t0:.0f}s")
    per_query = score_designs(runs, designs, score)
    cmp = compare(per_query, [BM25_LABEL, DEFAULT_LABEL], resamples=resamples)
    by_label = {d.label: d for d in designs}
    stem = {}
    for d in designs:
        twin = stem_twin(d, by_label)
        if twin is not None:
            stem[d.label] = {"plain": twin.label, **paired_bootstrap(per_query[twin.label], per_query[d.label],
                                                                    resamples=resamples).as_dict()}
    return {"dataset": spec, "metric": metric, "queries": len(queries), "clock": sc.describe(),
            "designs": {d.label: {**d.as_dict(), **cmp[d.label]} for d in designs}, "stem_vs_plain": stem,
            "qids": [q.qid for q in queries], "categories": [q.category for q in queries],
            "per_query": {k: [round(x, 6) for x in v] for k, v in per_query.items()}}


def choose(results: list[dict]) -> dict:
    """The worst-case gain over the better single side across LoCoMo at `end` and SciFact (ties by the mean)."""
    picked: dict[str, dict] = {}
    for r in results:
        kind = "locomo" if r["dataset"].startswith("locomo") else "beir"
        if kind == "beir" or r["clock"]["mode"] == "end":
            picked.setdefault(f"{kind} @ {r['clock']['mode']}", r)
    means = {k: {lb: d["mean"] for lb, d in r["designs"].items() if d["stage"] == "final"} for k, r in picked.items()}
    out: dict[str, Any] = {"datasets": list(picked), "criterion": "max over designs of min over datasets of "
                           "(design − better single side), ties by the mean gain"}
    for name, singles in (("today", SINGLE_TODAY),
                          ("strict", tuple(lb for lb, d in next(iter(picked.values()))["designs"].items()
                                           if d["stage"] != "final"))):
        better = {k: max(r["designs"][lb]["mean"] for lb in singles) for k, r in picked.items()}
        gains = worst_case_gain(means, better)
        best = recommend(gains)
        out[name] = {"single_sides": list(singles), "better_single": better, "recommended": best,
                     "gain": gains[best], "ranking": sorted(gains.items(), key=lambda kv: (-kv[1]["worst"],
                                                                                           -kv[1]["mean"]))[:15]}
    return out


def print_table(results: list[dict]) -> None:
    cols = [f"{r['dataset'].split(':')[0]} @ {r['clock']['mode']}" for r in results]
    print("| design | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for label in results[0]["designs"]:
        cells = []
        for r in results:
            d = r["designs"][label]
            vs = d["vs"].get(BM25_LABEL)
            cells.append(f"{d['mean']:.4f}" + (f" [{vs['lo']:+.3f}, {vs['hi']:+.3f}]" if vs else ""))
        print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--beir", help="a BEIR folder (SciFact); with --designs only")
    ap.add_argument("--designs", action="store_true", help="compare retrieval.eval.designs instead of the grid")
    ap.add_argument("--clock", type=clock_arg, action="append", metavar="now|end|ISO-TIME",
                    help=CLOCK_HELP + "; repeatable with --designs")
    ap.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (--designs)")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--out", default="docs/eval/hybrid-choice.json")
    args = ap.parse_args()
    clocks = args.clock or [None]
    if args.designs:
        results: list[dict] = []
        seen: set = set()
        bm25_cache: dict = {}
        specs = [f"locomo:{args.locomo}"] + ([f"beir:{args.beir}"] if args.beir else [])
        for spec in specs:
            for clock in clocks:
                r = designs_at(spec, clock, args.cache_dir, args.resamples, bm25_cache, seen)
                if r is not None:
                    results.append(r)
        res: dict[str, Any] = {"command": "scripts/choose_hybrid_defaults.py " + " ".join(sys.argv[1:]),
                               "results": results, "choice": choose(results)}
        print_table(results)
        print(json.dumps({k: v for k, v in res["choice"].items() if k != "datasets"}, indent=1)[:3000])
    else:
        if len(clocks) > 1 or args.beir:
            ap.error("the grid takes one --clock and no --beir (SciFact is reported, not tuned on); see --designs")
        res = {"locomo": grid(f"locomo:{args.locomo}", "recall@10", args.cache_dir, clocks[0]),
               "demo": grid("demo", "ndcg@10", args.cache_dir, clocks[0])}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
