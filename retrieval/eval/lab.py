"""The fusion lab: search every registered fusion strategy × its parameter grid × weight on cached runs.

Every candidate is a re-fusion of the same searched records (`retrieval.pipeline.assemble.reweight`): no
embedding, search or model call. The best candidate is chosen on the 'tune' half of the queries
and reported on the 'held-out' half (what OpenSearch's hybrid optimizer leaves out), with
per-query wins and losses against the configuration the runs were made with.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any
from collections.abc import Callable, Mapping, Sequence

from retrieval.pipeline.assemble import reweight
from retrieval.fusion import FUSIONS, REGISTRY, RRF, FusionStrategy, strategy_for
from retrieval.metrics import PairedInterval, mean, paired_bootstrap
from retrieval.eval.runner import QueryRun, credited_ids, held_out_split, score_ranking

DENSE_WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
RRF_KS = RRF.params[0].grid  # (5, 10, 20, 60): RRF's own declared grid


@dataclass(frozen=True)
class Candidate:
    """One fusion setting: a registered strategy with its parameters and weights (`retrieval.fusion`), the one value
    a setting is everywhere. `Candidate.of(fusion, dense_weight, …)` builds one the lab's way (sparse = 1 − dense)."""

    strategy: FusionStrategy

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, FusionStrategy):
            raise ValueError(f"a candidate is a fusion strategy, e.g. RRF(k=10, weights=(0.5, 0.5)); got "
                             f"{self.strategy!r} (Candidate.of builds one from a fusion name and a dense weight)")

    @classmethod
    def of(cls, fusion: str, dense_weight: float, rrf_k: float = 60, normalization: str = "minmax") -> Candidate:
        """The candidate `fusion` balanced at `dense_weight` (`FusionStrategy.balanced`: sparse = 1 − dense); a
        parameter it does not use is dropped."""
        return cls(strategy_for({"fusion": fusion, "rrf_k": rrf_k, "normalization": normalization}
                                ).balanced(dense_weight))

    @property
    def fusion(self) -> str:
        return self.strategy.name

    @property
    def dense_weight(self) -> float:
        return self.strategy.weights[0]

    @property
    def rrf_k(self) -> float | None:
        """RRF's k (None for a strategy without it)."""
        return self.strategy.knobs().get("rrf_k")

    @property
    def normalization(self) -> str | None:
        """A convex fusion's normalisation (None for a strategy without one)."""
        return self.strategy.knobs().get("normalization")

    @property
    def label(self) -> str:
        """"RRF k=10, dense 0.5", "convex minmax, dense 0.5": the strategy's setting, then the weight."""
        return f"{self.strategy.setting}, dense {self.dense_weight:g}"

    def knobs(self) -> dict[str, Any]:
        """The strategy's knobs, for a re-fusion (`reweight`): fixed weights, never adaptive."""
        return {**self.strategy.knobs(), "adaptive": False}


def fusion_grid(dense_weights: Sequence[float] = DENSE_WEIGHTS, ks: Sequence[float] | None = None,
                normalizations: Sequence[str] | None = None, convex: bool = True,
                fusions: Sequence[str] | None = None) -> list[Candidate]:
    """Registry × each strategy's declared parameter grid × dense weight (sparse = 1 − dense): per strategy, its
    choice parameters outermost, then the weight, then its numeric parameters. `ks` and `normalizations` replace
    the declared grids of `rrf_k` and `normalization`; `convex=False` keeps RRF only; `fusions` names the
    strategies (default: every registered one)."""
    given = {"rrf_k": ks, "normalization": normalizations}
    names = fusions if fusions is not None else (FUSIONS if convex else (RRF.name,))
    grid = []
    for name in names:
        params = REGISTRY[name].params
        choice = [p for p in params if p.kind == "choice"]
        numeric = [p for p in params if p.kind != "choice"]
        values = lambda ps: itertools.product(*[given.get(p.name) or p.grid for p in ps])
        for cs in values(choice):
            for w in dense_weights:
                for ns in values(numeric):
                    knobs = dict(zip([p.name for p in choice + numeric], (*cs, *ns)))
                    grid.append(Candidate.of(name, w, **knobs))
    return grid


@dataclass(frozen=True)
class CandidateScore:
    candidate: Candidate
    tune: float
    held_out: float
    all: float


@dataclass(frozen=True)
class LabResult:
    metric: str
    scores: tuple[CandidateScore, ...]  # in grid order
    best: CandidateScore  # best on the tune half
    baseline: CandidateScore  # the runs' own configuration
    per_query: tuple[dict[str, Any], ...]  # best vs baseline, every query (qid, query, half, baseline, best, delta)
    clock: Mapping[str, Any] | None = None  # the evaluation clock the runs were scored at (retrieval.eval.clock)
    values: tuple[tuple[float, ...], ...] = ()  # per candidate (grid order), per query (run order)
    base_values: tuple[float, ...] = ()  # the baseline's per-query scores (run order)
    halves: tuple[str, ...] = ()  # each query's half, "tune" or "held-out" (run order)

    def interval(self, score: CandidateScore | None = None, half: str | None = "held-out", resamples: int = 10_000,
                 seed: int = 0) -> PairedInterval:
        """Paired bootstrap 95 % interval of `score`'s candidate (default: the best) − the baseline, over the
        queries of `half` (None: every query). ValueError when that half holds no query."""
        i = self.scores.index(score or self.best)
        keep = [n for n, h in enumerate(self.halves) if half is None or h == half]
        if not keep:
            raise ValueError(f"no query in the {half} half: label more queries for an interval")
        return paired_bootstrap([self.base_values[n] for n in keep], [self.values[i][n] for n in keep],
                                resamples=resamples, seed=seed)

    def rrf_cells(self) -> tuple[list[float], list[float], list[list[float | None]]]:
        """The RRF candidates as a dense weight × k grid of tune-half scores (for a heatmap): weights, ks, cells."""
        rrf = [(s, s.candidate.strategy) for s in self.scores if isinstance(s.candidate.strategy, RRF)]
        ws = sorted({f.weights[0] for _, f in rrf})
        ks = sorted({f.k for _, f in rrf})
        cells: list[list[float | None]] = [[None] * len(ks) for _ in ws]
        for s, f in rrf:
            cells[ws.index(f.weights[0])][ks.index(f.k)] = s.tune
        return ws, ks, cells

    def best_of(self, fusion: str, normalization: str | None = None) -> CandidateScore:
        """The tune-best candidate of one fusion function (and normalisation)."""
        pool = [s for s in self.scores if s.candidate.fusion == fusion
                and (normalization is None or s.candidate.normalization == normalization)]
        return max(pool, key=lambda s: s.tune)

    def best_by_family(self) -> dict[tuple[str, ...], CandidateScore]:
        """The tune-best candidate of each strategy family present (a strategy with its choices fixed: ("RRF",),
        ("convex", "minmax"), …), in registry and grid order."""
        best: dict[tuple[str, ...], CandidateScore] = {}
        for s in self.scores:
            fam = s.candidate.strategy.family
            if fam not in best or s.tune > best[fam].tune:
                best[fam] = s
        return best

    def to_dict(self) -> dict[str, Any]:
        row = lambda s: {**asdict(s.candidate), "label": s.candidate.label, "tune": s.tune,
                         "held_out": s.held_out, "all": s.all}
        return {"metric": self.metric, "clock": dict(self.clock) if self.clock is not None else None,
                "best": row(self.best), "baseline": row(self.baseline), "scores": [row(s) for s in self.scores],
                "per_query": list(self.per_query)}


def runs_clock(runs: Sequence[QueryRun]) -> dict[str, Any] | None:
    """The instants the runs were scored at (`QueryRun.now`), when they were run with an evaluation clock."""
    nows = sorted({r.now.isoformat() for r in runs if r.now is not None})
    return {"instants": nows} if nows else None


def _score(run: QueryRun, c: Candidate | None, metric: str, scorer) -> float:
    """`run` re-fused with the candidate's strategy (fixed weights, never adaptive), as the run's settings value
    with that strategy in it; None scores the run as searched."""
    res = run.result if c is None else reweight(
        run.result, settings=run.result.diagnostics.settings.with_(fusion=c.strategy, adaptive=False))
    return scorer(credited_ids(res, "final"), run.q)[metric]


def default_scorer(ranked: list[str], q) -> dict[str, float]:
    return score_ranking(ranked, q.qrels)


def search_fusions(runs: Sequence[QueryRun], candidates: Sequence[Candidate], metric: str = "ndcg@10",
                   scorer: Callable[[list[str], Any], dict[str, float]] = default_scorer,
                   progress: Callable[[int, int], object] | None = None,
                   clock: Mapping[str, Any] | None = None) -> LabResult:
    """Score every candidate on both halves; choose on 'tune', report 'held-out'.

    `clock` (`ScopeClock.describe()`) is recorded with the result; without it, the instants the runs carry.

    Ties on the tune half prefer RRF, then the dense weight nearest 0.5 (the most conservative setting).
    """
    if not runs:
        raise ValueError("the fusion lab needs at least one labelled query; load judgments first")
    preset = runs[0].result.diagnostics.settings.rules
    candidates = [c for c in candidates if c.fusion in preset.fusions]
    if not candidates:
        allowed = (f"is always {preset.fusions[0].upper()}" if len(preset.fusions) == 1
                   else f"allows only {', '.join(preset.fusions)}")
        raise ValueError(f"no candidate to search: the {preset.name} preset {allowed}; give candidates it allows")
    half = [held_out_split(r.q.qid) for r in runs]
    base_vals = [_score(r, None, metric, scorer) for r in runs]

    def summary(c: Candidate | None, vals: list[float]) -> CandidateScore:
        pick = lambda h: [v for v, x in zip(vals, half) if x == h]
        cand = c or Candidate(runs[0].result.diagnostics.settings.strategy)  # the runs' own fusion, as it is
        return CandidateScore(cand, mean(pick("tune")), mean(pick("held-out")), mean(vals))

    scores, per_candidate = [], []
    for n, c in enumerate(candidates):
        vals = [_score(r, c, metric, scorer) for r in runs]
        scores.append(summary(c, vals))
        per_candidate.append(vals)
        if progress:
            progress(n + 1, len(candidates))
    order = sorted(range(len(scores)), key=lambda i: (-scores[i].tune, FUSIONS.index(scores[i].candidate.fusion),
                                                       abs(scores[i].candidate.dense_weight - 0.5), i))
    b = order[0]
    per_query = tuple({"qid": r.q.qid, "query": r.q.query, "scope": str(r.q.scope), "half": h,
                       "baseline": bv, "best": v, "delta": v - bv}
                      for r, h, bv, v in zip(runs, half, base_vals, per_candidate[b]))
    return LabResult(metric, tuple(scores), scores[b], summary(None, base_vals), per_query,
                     dict(clock) if clock is not None else runs_clock(runs), tuple(map(tuple, per_candidate)),
                     tuple(base_vals), tuple(half))
