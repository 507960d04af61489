"""Re-fusion cost: weighted RRF vs convex fusion (each normalisation) on two cached candidate lists.

Switching fusion or weights re-fuses the cached dense and sparse lists on every slider move (SPEC §13),
so it must stay within the slider's budget: ≤ 1 ms at 100 candidates per list. Two lists of N
candidates each, half the ids shared (dense cosine scores in [-1, 1], BM25 scores ≥ 0); each cell is
the median per-call time over many timeit repeats.

Run: .venv/bin/python scripts/bench_fusion.py [--sizes 30 100 300 3000] [--repeats 41] [--out docs/bench_fusion.json]
"""
from __future__ import annotations

import argparse
from typing import Any
import json
import os
import platform
import random
import statistics
import sys
import timeit
from pathlib import Path


from retrieval.fusion import NORMALIZATIONS, convex_fusion, reciprocal_rank_fusion

WEIGHTS = (0.7, 0.3)
LOWER_BOUNDS = (-1.0, 0.0)  # cosine, BM25


def candidate_lists(n: int, seed: int = 0) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Dense and sparse top-n in rank order; the sparse list shares half its ids with the dense one."""
    rng = random.Random(seed)
    dense = sorted(((f"t{i}", rng.uniform(-0.2, 0.9)) for i in range(n)), key=lambda p: -p[1])
    shared = [i for i, _ in rng.sample(dense, n // 2)]
    ids = shared + [f"s{i}" for i in range(n - len(shared))]
    sparse = sorted(((i, rng.expovariate(0.3)) for i in ids), key=lambda p: -p[1])
    return dense, sparse


def timings_ms(fn, repeats: int) -> tuple[float, float]:
    """(median, min) per-call wall time in ms over `repeats` timeit repeats."""
    timer = timeit.Timer(fn)
    # autorange picks calls per repeat for ≥ 0.2 s; a fiftieth keeps each repeat ≥ ~4 ms (well above
    # timer resolution) while giving the median many short samples on a shared, noisy machine.
    number = max(1, timer.autorange()[0] // 50)
    per_call = [t / number * 1000 for t in timer.repeat(repeat=repeats, number=number)]
    return statistics.median(per_call), min(per_call)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 100, 300, 3000])
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--out", default="docs/bench_fusion.json")
    args = ap.parse_args()

    # Other processes share these cores; the load average says how much the numbers are inflated.
    load_before = os.getloadavg()[0]
    rows = []
    for n in args.sizes:
        dense, sparse = candidate_lists(n)
        # RRF re-fuses the cached id lists; convex the cached (id, score) lists.
        id_lists = [[i for i, _ in dense], [i for i, _ in sparse]]
        cases: list[tuple[str, str | None, Any]] = [
            ("rrf", None, lambda id_lists=id_lists: reciprocal_rank_fusion(id_lists, weights=WEIGHTS, k=60))]
        for m in NORMALIZATIONS:
            cases.append(("convex", m, lambda m=m, dense=dense, sparse=sparse: convex_fusion(
                [dense, sparse], weights=WEIGHTS, normalization=m, lower_bounds=LOWER_BOUNDS)))
        for fusion, norm, fn in cases:
            p50, best = timings_ms(fn, args.repeats)
            rows.append({"candidates": n, "fusion": fusion, "normalization": norm,
                         "p50_ms": round(p50, 4), "min_ms": round(best, 4)})

    res = {"cpu_count": os.cpu_count(), "python": platform.python_version(), "lists": 2,
           "weights": list(WEIGHTS), "repeats": args.repeats, "target_ms_at_100": 1.0,
           "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)], "rows": rows}
    at_100 = [r["p50_ms"] for r in rows if r["candidates"] == 100]
    if at_100:
        res["max_p50_ms_at_100"] = max(at_100)

    labels = ["rrf (k 60)"] + [f"convex {m}" for m in NORMALIZATIONS]
    print(f"median ms per call (min in brackets); load average {res['load_avg_1m']} on {os.cpu_count()} CPUs\n")
    print("| fusion | " + " | ".join(f"{n:,} per list" for n in args.sizes) + " |")
    print("|---|" + "---|" * len(args.sizes))
    for label, (fusion, norm) in zip(labels, [("rrf", None)] + [("convex", m) for m in NORMALIZATIONS]):
        cells = [next(r for r in rows if r["candidates"] == n and r["fusion"] == fusion
                      and r["normalization"] == norm) for n in args.sizes]
        print(f"| {label} | " + " | ".join(f"{c['p50_ms']:.3f} ({c['min_ms']:.3f})" for c in cells) + " |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
