"""Does label-free calibration beat the fixed `hybrid` default? And how long does it take at 10k traces?

For each development set (LoCoMo dev at the `end` clock, SciFact): calibrate on the dataset's corpus only
(`retrieval.eval.calibrate`: pseudo-queries cropped from its own traces, no labels), then evaluate with the
dataset's labels — the fixed default, what calibration chose (the default when its criterion kept it) and the
tune-half winner it found (whether or not adopted) — each against the default with a paired bootstrap 95 %
interval over the labelled queries. The stores are the cached MiniLM stores the other scripts use.

`--scale N` times a calibration of an N-trace MiniLM store (SciFact + LoCoMo traces, topped up with copies of
SciFact abstracts under other ids; built once, cached) end to end: reading the traces, embedding the
pseudo-queries with MiniLM, searching, the lab and the bootstrap, with the time of each phase.

Run: .venv/bin/python scripts/bench_calibrate.py --locomo ../shared/eval/locomo-dev/locomo-dev.json \\
        --beir ../shared/eval/scifact --scale 10000 --out docs/bench_calibrate.json
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from retrieval.cli.eval import open_clocked_set, open_eval_workspace
from retrieval.eval.calibrate import DEFAULT_SAMPLE, calibrate
from retrieval.eval.datasets import load_dataset
from retrieval.metrics import mean, paired_bootstrap
from retrieval.eval.runner import credited_ids, run_queries
from retrieval.hybrid import HybridRetriever
from retrieval.pipeline.assemble import reweight
from retrieval.pipeline.presets import HYBRID_PRESET


VARIANTS = ((0.0, False), (0.25, False), (0.5, False), (0.25, True), (0.5, True))


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


def scored(runs, score, knobs=None, stage="final") -> list[float]:
    out = []
    for r in runs:
        res = reweight(r.result, **knobs) if knobs else r.result
        out.append(score(credited_ids(res, stage), r.q))
    return out


def variant(ws, runs, score, default: list[float], sample: int, seed: int, drop: float, rare: bool) -> dict:
    """One pseudo-query generator (`drop` share of words left out, at random or the rarest) → labelled outcome."""
    cal = calibrate(ws.store, ws.bm25, sample=sample, seed=seed, drop=drop, rare=rare, resamples=2000)
    iv = paired_bootstrap(default, scored(runs, score, cal.chosen.knobs()), resamples=2000)
    win = paired_bootstrap(default, scored(runs, score, cal.winner.knobs()), resamples=2000)
    log(f"  drop {drop} {'rarest' if rare else 'random'} seed {seed}: {cal.chosen.label} → {iv.delta:+.4f} "
        f"[{iv.lo:+.4f}, {iv.hi:+.4f}]; tune-half winner {cal.winner.label} → {win.delta:+.4f}")
    return {"drop": drop, "rarest": rare, "seed": seed, "adopt": cal.adopt, "chosen": cal.chosen.label,
            "pseudo_interval": cal.interval.as_dict(), "labelled_vs_default": iv.as_dict(),
            "winner": cal.winner.label, "winner_labelled_vs_default": win.as_dict()}


def one_set(spec: str, cache_dir: str, sample: int, seed: int, variants=()) -> dict:
    ws, queries, metric, score, clock = open_clocked_set(spec, cache_dir, "end", log=log)
    log(f"{spec}: calibrating on {ws.store.count()} traces, no labels (sample {sample}, seed {seed})")
    cal = calibrate(ws.store, ws.bm25, sample=sample, seed=seed)
    log(f"  {cal.verdict} ({cal.seconds:.1f}s)")
    log(f"  evaluating {len(queries)} labelled queries at the end clock")
    retriever = HybridRetriever(ws.store, bm25=ws.bm25, preset=HYBRID_PRESET, fact_store=None)
    runs = run_queries(retriever, queries, clock=clock, recall_top_k=10)
    default = scored(runs, score)
    rows = {"default (fixed)": default, "calibrated (as chosen)": scored(runs, score, cal.chosen.knobs()),
            f"winner on pseudo-queries: {cal.winner.label}": scored(runs, score, cal.winner.knobs()),
            "BM25 alone": scored(runs, score, stage="sparse"), "dense alone": scored(runs, score, stage="dense")}
    table = {label: {"mean": round(mean(v), 4),
                     "vs_default": paired_bootstrap(default, v).as_dict() if label != "default (fixed)" else None}
             for label, v in rows.items()}
    found = [variant(ws, runs, score, default, sample, s, drop, rare)
             for drop, rare in variants for s in (seed, seed + 1)]
    return {"variants": found,
            "dataset": spec.split(":")[0] + ":" + Path(spec.split(":", 1)[1]).name, "metric": metric,
            "queries": len(queries), "clock": clock.describe()["mode"], "calibration": cal.to_dict(),
            "pseudo_lab": {"default_held_out": round(cal.lab.baseline.held_out, 4),
                           "winner_held_out": round(cal.lab.best.held_out, 4)},
            "labelled": table}


class CachedVectors:
    """MiniLM's vectors for texts the cached evaluation stores already embedded (the same model, the same vectors):
    building the timing store costs no second embedding pass. Named `minilm`, so the store records MiniLM."""

    name, dim = "minilm", 384

    def __init__(self, stores):
        import numpy as np

        self.vec: dict[str, np.ndarray] = {}
        for store in stores:
            tbl = store.table().to_arrow()
            self.vec.update(zip(tbl["content"].to_pylist(), np.asarray(tbl["vector"].to_pylist(), np.float32)))

    def embed(self, texts):
        import numpy as np

        return np.stack([self.vec[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    embed_query = embed


def scale_store(n: int, locomo: str, beir: str, cache_dir: str):
    """An n-trace store (built once): SciFact + LoCoMo traces, topped up with copies of SciFact abstracts under other
    ids, with the cached stores' MiniLM vectors; reopened with the real MiniLM for the timed calibration."""
    from retrieval.models.registry import make_embedder
    from retrieval.workspace.core import Workspace

    sets = [load_dataset(f"beir:{beir}"), load_dataset(f"locomo:{locomo}")]
    traces = sets[0][1] + sets[1][1]
    extra = [replace(t, id=f"copy-{t.id}", scope_id="copies") for t in traces[: max(0, n - len(traces))]]
    traces = (traces + extra)[:n]
    name = f"calibrate-scale-{n}"
    uri = Path(cache_dir) / name
    if Workspace(str(uri), fact_extractor=None).store.count() != n:
        cached = CachedVectors([open_eval_workspace(nm, tr, cache_dir, log=log).store for nm, tr, _ in sets])
        open_eval_workspace(name, traces, cache_dir, embedder=cached, log=log)
    return Workspace(str(uri), embedder=make_embedder("minilm"), fact_extractor=None)


def timing(ws, sample: int, seed: int) -> dict:
    phases: dict[str, float] = {}
    last: list[Any] = [time.perf_counter(), "start"]

    def progress(_fraction: float, text: str) -> None:
        phase = text.split(" ")[0]
        if phase != last[1]:
            now = time.perf_counter()
            phases[last[1]] = round(phases.get(last[1], 0.0) + now - last[0], 2)
            last[:] = [now, phase]

    t0 = time.perf_counter()
    cal = calibrate(ws.store, ws.bm25, sample=sample, seed=seed, progress=progress)
    total = time.perf_counter() - t0
    phases.pop("start", None)
    load = os.getloadavg()[0]
    log(f"  {ws.store.count()} traces: calibrated in {total:.1f}s ({phases}); load {load:.1f}")
    return {"traces": ws.store.count(), "seconds": round(total, 1), "phases_s": phases, "queries": cal.queries,
            "candidates": len(cal.lab.scores), "load_1min": round(load, 1), "verdict": cal.verdict}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--locomo", required=True, help="path to locomo-dev.json")
    ap.add_argument("--beir", required=True, help="path to the SciFact BEIR folder")
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--sample", type=int, default=DEFAULT_SAMPLE)
    ap.add_argument("--seed", type=int, action="append", help="repeatable; default 0")
    ap.add_argument("--scale", type=int, default=10_000, help="time a calibration of a store this size (0: skip)")
    ap.add_argument("--variants", action="store_true",
                    help="also: drop 0, 0.25, 0.5 of the words at random or the rarest, seeds S and S+1")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    seeds = args.seed or [0]
    out: dict = {"command": "scripts/bench_calibrate.py " + " ".join(argv or sys.argv[1:]), "sample": args.sample,
                 "sets": []}
    for spec in (f"locomo:{args.locomo}", f"beir:{args.beir}"):
        for seed in seeds:
            grid = VARIANTS if args.variants else ()
            out["sets"].append({"seed": seed, **one_set(spec, args.cache_dir, args.sample, seed, grid)})
    if args.scale:
        out["scale"] = timing(scale_store(args.scale, args.locomo, args.beir, args.cache_dir), args.sample, seeds[0])
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
