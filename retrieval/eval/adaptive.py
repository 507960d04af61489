"""Adaptive fusion weights on graded queries: measured against the fixed weights, and learned from grades.

Fusion orders by the ratio of the two weights, and an adapted dense share always lies on the knob's 0.05 step
(`retrieval.pipeline.adaptive`), so each query's metric at every share of `SHARES` is computed once by re-fusion
(`share_table`); any rule strengths are then scored exactly by looking up the share they give each query
(`score_strengths`), without another re-fusion. `learn` is a grid over the four rule strengths (each of
`GRID`), the best mean on the given queries, ties to the smallest total strength (then the first in grid order):
deterministic and small. `held_out` fits on the 'tune' half (`runner.held_out_split`) and reports the
'held-out' half: fixed weights, the rules as shipped and the learned strengths, with paired bootstrap 95 %
intervals against the fixed weights.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval.eval.runner import QueryRun, credited_ids, held_out_split
from retrieval.judgments.model import LabelledQuery
from retrieval.metrics import paired_bootstrap
from retrieval.pipeline.adaptive import (MAX_SHIFT, RULE_STRENGTHS, RULES, SHARE_RANGE, STEP, Strengths,
                                         features)
from retrieval.pipeline.assemble import reweight

SHARES = tuple(round(x, 2) for x in np.arange(0.0, 1.0001, STEP))  # every dense share on the knob's step
GRID = (-0.2, -0.1, 0.0, 0.1, 0.2)
Scorer = Callable[[list[str], LabelledQuery], float]


def _share_index(share: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(share) / STEP).astype(int)


def configured_share(run: QueryRun) -> float:
    dw, sw = run.result.diagnostics.settings.strategy.weights
    return dw / (dw + sw)


def share_table(runs: Sequence[QueryRun], scorer: Scorer) -> np.ndarray:
    """[query, share] → the metric of the final list re-fused with dense share `SHARES[j]` (adaptive off)."""
    out = np.zeros((len(runs), len(SHARES)))
    for i, r in enumerate(runs):
        for j, p in enumerate(SHARES):
            res = reweight(r.result, fusion=r.result.diagnostics.settings.strategy.balanced(p), adaptive=False)
            out[i, j] = scorer(credited_ids(res, "final"), r.q)
    return out


def signal_matrix(runs: Sequence[QueryRun]) -> np.ndarray:
    """[query, rule] → each rule's signal (`RULES` order) from the query's search record."""
    return np.array([[features(r.result.diagnostics.record).signals()[k] for k in RULES] for r in runs]).reshape(
        len(runs), len(RULES))


def adapted_shares(signals: np.ndarray, strengths: np.ndarray, share0: np.ndarray) -> np.ndarray:
    """`retrieval.pipeline.adaptive.adapted_share` for many queries (rows) and strength vectors (columns of the
    result: [query, strengths])."""
    shift = np.clip(signals @ np.atleast_2d(strengths).T, -MAX_SHIFT, MAX_SHIFT)
    p0 = share0[:, None]
    lo, hi = np.minimum(SHARE_RANGE[0], p0), np.maximum(SHARE_RANGE[1], p0)
    moved = np.clip(np.round((p0 + shift) / STEP) * STEP, lo, hi)
    keep = (np.abs(shift) < STEP / 2) | (p0 == 0.0) | (p0 == 1.0)
    return np.where(keep, p0, moved)


def score_strengths(table: np.ndarray, signals: np.ndarray, share0: np.ndarray,
                    strengths: np.ndarray) -> np.ndarray:
    """[query, strengths] → the metric each strength vector gives each query (shares looked up in `table`)."""
    idx = _share_index(adapted_shares(signals, strengths, share0))
    return np.take_along_axis(table, idx, axis=1)


def learn(table: np.ndarray, signals: np.ndarray, share0: np.ndarray, grid: Sequence[float] = GRID) -> Strengths:
    """The rule strengths (each from `grid`) with the best mean metric; ties to the smallest Σ|strength|."""
    cands = np.array(list(itertools.product(grid, repeat=len(RULES))))
    means = score_strengths(table, signals, share0, cands).mean(axis=0)
    order = sorted(range(len(cands)), key=lambda i: (-round(float(means[i]), 12), float(np.abs(cands[i]).sum()), i))
    return Strengths(**{k: float(v) for k, v in zip(RULES, cands[order[0]])})


def _vector(s: Strengths) -> np.ndarray:
    return np.array([getattr(s, k) for k in RULES])


def held_out(runs: Sequence[QueryRun], scorer: Scorer, resamples: int = 10_000) -> dict[str, Any]:
    """Learn on the 'tune' half, report the 'held-out' half (and the rules as shipped on every query)."""
    table, signals = share_table(runs, scorer), signal_matrix(runs)
    share0 = np.array([configured_share(r) for r in runs])
    fixed = np.take_along_axis(table, _share_index(share0)[:, None], axis=1)[:, 0]
    rules = score_strengths(table, signals, share0, _vector(RULE_STRENGTHS))[:, 0]
    tune = np.array([held_out_split(r.q.qid) == "tune" for r in runs])
    learned = learn(table[tune], signals[tune], share0[tune])
    on_held = score_strengths(table[~tune], signals[~tune], share0[~tune], _vector(learned))[:, 0]
    out: dict[str, Any] = {
        "queries": len(runs), "tune": int(tune.sum()), "held_out": int((~tune).sum()),
        "rules": {"strengths": RULE_STRENGTHS.as_dict(), "fixed": round(float(fixed.mean()), 4),
                  "adaptive": round(float(rules.mean()), 4),
                  "vs_fixed": paired_bootstrap(list(fixed), list(rules), resamples=resamples).as_dict(),
                  "moved": int((adapted_shares(signals, _vector(RULE_STRENGTHS), share0)[:, 0] != share0).sum())},
        "oracle_share": round(float(table.max(axis=1).mean()), 4),  # the best share per query: a ceiling
        "learned": {"strengths": learned.as_dict(), "held_out_fixed": round(float(fixed[~tune].mean()), 4),
                    "held_out_adaptive": round(float(on_held.mean()), 4)},
    }
    if (~tune).any():
        out["learned"]["vs_fixed"] = paired_bootstrap(list(fixed[~tune]), list(on_held), resamples=resamples).as_dict()
        out["learned"]["rules_held_out"] = round(float(rules[~tune].mean()), 4)
    return out


__all__ = ["GRID", "SHARES", "adapted_shares", "configured_share", "held_out", "learn", "score_strengths",
           "share_table", "signal_matrix"]
