"""How far raters agree (pure): pairwise Cohen's kappa, weighted for graded scales, and Krippendorff's alpha.

- `cohen_kappa(a, b, categories, weights)`: Cohen (1960); weighted (Cohen 1968) with `"linear"` or
  `"quadratic"` disagreement weights, `None` for the unweighted kappa. The categories are the scale's
  grades, so a grade nobody gave still sets the weights' spacing.
- `krippendorff_alpha(units, metric)`: Krippendorff's alpha with missing values (each unit holds the grades
  of whoever graded it), `"nominal"`, `"ordinal"` or `"interval"` difference, computed through the
  coincidence matrix as in Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability".
- `case_agreement(judgments, scale)`: the table a case shows: raters per item, each pair's kappa, the case's
  alpha; `calibration` is the machine rater's row against each human rater.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from retrieval.judgments.model import SCALES, Judgment
from retrieval.judgments.raters import Item, item_key, usable

WEIGHTS = (None, "linear", "quadratic")
METRICS = ("nominal", "ordinal", "interval")


def cohen_kappa(a: Sequence[int], b: Sequence[int], categories: Sequence[int] | None = None,
                weights: str | None = None) -> float | None:
    """Cohen's kappa of two raters over the same items; None without items. When chance agreement is total
    (both raters always gave one and the same grade) the formula is 0/0: 1.0 if they agree, else 0.0."""
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired grades: {len(a)} vs {len(b)}")
    if weights not in WEIGHTS:
        raise ValueError(f"kappa weights {weights!r} are unknown; use None, 'linear' or 'quadratic'")
    n = len(a)
    if n == 0:
        return None
    cats = sorted(set(categories or ()) | set(a) | set(b))
    idx = {c: i for i, c in enumerate(cats)}
    span = max(len(cats) - 1, 1)

    def w(i: int, j: int) -> float:  # disagreement weight
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(i - j) / span
        return d if weights == "linear" else d * d

    obs = [[0.0] * len(cats) for _ in cats]
    for x, y in zip(a, b):
        obs[idx[x]][idx[y]] += 1 / n
    row = [sum(r) for r in obs]
    col = [sum(obs[i][j] for i in range(len(cats))) for j in range(len(cats))]
    do = sum(w(i, j) * obs[i][j] for i in range(len(cats)) for j in range(len(cats)))
    de = sum(w(i, j) * row[i] * col[j] for i in range(len(cats)) for j in range(len(cats)))
    if de == 0:
        return 1.0 if do == 0 else 0.0
    return 1 - do / de


def _delta2(metric: str, c: float, k: float, n: Mapping[float, float]) -> float:
    if metric == "nominal":
        return 0.0 if c == k else 1.0
    if metric == "interval":
        return (c - k) ** 2
    lo, hi = min(c, k), max(c, k)  # ordinal: the marginals between the two ranks
    between = sum(v for g, v in n.items() if lo <= g <= hi)
    return (between - (n[c] + n[k]) / 2) ** 2


def krippendorff_alpha(units: Iterable[Sequence[float]], metric: str = "ordinal") -> float | None:
    """Krippendorff's alpha over `units` (each the values its raters gave; units with fewer than two values
    are not pairable and ignored). None when fewer than two values are pairable; 1.0 when every pairable
    value is the same (no expected disagreement)."""
    if metric not in METRICS:
        raise ValueError(f"alpha metric {metric!r} is unknown; use one of {', '.join(METRICS)}")
    o: dict[tuple[float, float], float] = {}
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, x in enumerate(values):
            for j, y in enumerate(values):
                if i != j:
                    o[(x, y)] = o.get((x, y), 0.0) + 1 / (m - 1)
    n_c: dict[float, float] = {}
    for (c, _), v in o.items():
        n_c[c] = n_c.get(c, 0.0) + v
    n = sum(n_c.values())
    if n < 2:
        return None
    do = sum(v * _delta2(metric, c, k, n_c) for (c, k), v in o.items())
    de = sum(n_c[c] * n_c[k] * _delta2(metric, c, k, n_c) for c in n_c for k in n_c) / (n - 1)
    if de == 0:
        return 1.0
    return 1 - do / de


def _by_rater(judgments: Iterable[Judgment], hashes: Mapping[str, str] | None) -> dict[str, dict[Item, int]]:
    out: dict[str, dict[Item, int]] = {}
    for j in usable(judgments, hashes):
        out.setdefault(j.who, {})[item_key(j)] = j.grade
    return out


MIN_SHARED = 10  # below this many items graded in common, no kappa or alpha is shown: it would say nothing


def withheld(n: int, minimum: int = MIN_SHARED) -> str:
    """Why no number is given over `n` shared items ("" when there are enough)."""
    if n >= minimum:
        return ""
    return (f"withheld: it would rest on {n} item(s) graded by more than one rater; at least {minimum} are needed "
            "(judge the shared items the queue puts first)")


def pairwise(judgments: Iterable[Judgment], scale: str = "graded",
             hashes: Mapping[str, str] | None = None, minimum: int = MIN_SHARED) -> list[dict]:
    """One row per pair of raters who graded an item in common: n, exact agreement, kappa (quadratic-weighted
    on a graded scale, unweighted on a binary one) — None, with the reason in "withheld", under `minimum` items."""
    raters = _by_rater(judgments, hashes)
    weights = "quadratic" if scale == "graded" else None
    rows = []
    for r1, r2 in combinations(sorted(raters), 2):
        both = sorted(set(raters[r1]) & set(raters[r2]))
        a, b = [raters[r1][i] for i in both], [raters[r2][i] for i in both]
        if not both:
            continue
        why = withheld(len(both), minimum)
        rows.append({"rater_a": r1, "rater_b": r2, "n": len(both), "agree": sum(x == y for x, y in zip(a, b)),
                     "kappa": None if why else cohen_kappa(a, b, SCALES[scale], weights), "withheld": why})
    return rows


def case_agreement(judgments: Iterable[Judgment], scale: str = "graded",
                   hashes: Mapping[str, str] | None = None, machine: bool = False,
                   minimum: int = MIN_SHARED) -> dict:
    """What a case shows about its raters: {"raters", "items", "items_by_raters" ({number of raters: items}),
    "shared_items" (graded by two raters or more), "minimum", "withheld" (why alpha is None, or ""), "pairs"
    (pairwise kappa), "alpha_ordinal", "alpha_interval"}. Human raters only unless `machine`. Under `minimum`
    shared items alpha is withheld (None), as is each pair's kappa under `minimum` items in common."""
    judgments = [j for j in judgments if machine or j.grader == "human"]
    raters = _by_rater(judgments, hashes)
    units: dict[Item, list[int]] = {}
    for grades in raters.values():
        for item, g in grades.items():
            units.setdefault(item, []).append(g)
    spread: dict[int, int] = {}
    for values in units.values():
        spread[len(values)] = spread.get(len(values), 0) + 1
    shared = sum(n for r, n in spread.items() if r >= 2)
    why = withheld(shared, minimum)
    return {"raters": sorted(raters), "items": len(units), "items_by_raters": dict(sorted(spread.items())),
            "shared_items": shared, "minimum": minimum, "withheld": why,
            "pairs": pairwise(judgments, scale, hashes, minimum),
            "alpha_ordinal": None if why else krippendorff_alpha(units.values(), "ordinal"),
            "alpha_interval": None if why else krippendorff_alpha(units.values(), "interval")}


def calibration(judgments: Iterable[Judgment], scale: str = "graded", hashes: Mapping[str, str] | None = None,
                machine: str = "machine", minimum: int = MIN_SHARED) -> list[dict]:
    """The machine rater against each human rater (pairwise rows that hold `machine`), the rater named
    `rater`: what must be shown before the machine's grades may count."""
    rows = []
    for r in pairwise(judgments, scale, hashes, minimum):
        if machine in (r["rater_a"], r["rater_b"]):
            human = r["rater_b"] if r["rater_a"] == machine else r["rater_a"]
            rows.append({"rater": human, "n": r["n"], "agree": r["agree"], "kappa": r["kappa"],
                         "withheld": r["withheld"]})
    return rows
