"""Designs for the `hybrid` default side by side: search variants × fusion × a bounded prior, scored per
query, compared by paired bootstrap intervals and chosen by the worst-case gain.

A *variant* is what needs its own search pass: how the dense side is scored (`cognitive`, as the store
does, or `similarity`: cosine only, the cognitive prior taken out of the fusion input) and the BM25
analyser (`plain`, `english-stem`). A *design* is a variant plus what `assemble` decides (fusion knobs)
and an optional bounded prior on the fused pool (`retrieval.pipeline.prior`), or one single side
(`dense`, `sparse`). Every design of a variant is a re-fusion of that variant's runs: no new search.
Nothing here changes a default: the similarity-only dense side is a view of the store that passes
`scoring_weights` (SPEC §2), the prior re-orders a result's pool after the fact.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import make_tokenizer
from retrieval.metrics import mean, paired_bootstrap
from retrieval.fusion import RRF, Convex, FusionStrategy
from retrieval.eval.runner import LabelledQuery, QueryRun, credited_ids, run_queries
from retrieval.hybrid import HybridRetriever
from retrieval.pipeline.assemble import reweight
from retrieval.pipeline.presets import HYBRID_PRESET, Preset
from retrieval.pipeline.prior import PRIOR_TERMS, apply_prior, prior_weight_for
from retrieval.store.cognitive import DEFAULT_SCORING_WEIGHTS

SIMILARITY_ONLY = {k: (1.0 if k == "similarity" else 0.0) for k in DEFAULT_SCORING_WEIGHTS}
DENSE_SCORINGS = ("cognitive", "similarity")
Scorer = Callable[[list[str], LabelledQuery], float]


class ScoredStore:
    """A store seen with fixed `scoring_weights` on every dense query and hydration; the rest is the store's."""

    def __init__(self, store: Any, weights: Mapping[str, float]):
        self.store, self.weights = store, dict(weights)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def query_vector(self, vector, mood=None, top_k=20, scopes=None, neutral_mood=False, scoring_weights=None):
        return self.store.query_vector(vector, mood, top_k, scopes, neutral_mood, scoring_weights or self.weights)

    def score_hits(self, hits, vector, mood=None, neutral_mood=False, scoring_weights=None):
        return self.store.score_hits(hits, vector, mood, neutral_mood, scoring_weights or self.weights)


@dataclass(frozen=True)
class Variant:
    """What one search pass decides."""

    dense_scoring: str = "cognitive"
    analyzer: str = "plain"

    def __post_init__(self) -> None:
        if self.dense_scoring not in DENSE_SCORINGS:
            raise ValueError(f"dense_scoring={self.dense_scoring!r} is not one of {', '.join(DENSE_SCORINGS)}")
        make_tokenizer(self.analyzer)  # ValueError naming the analysers

    @property
    def label(self) -> str:
        return f"{'cosine' if self.dense_scoring == 'similarity' else 'cognitive'} dense, {self.analyzer} BM25"


@dataclass(frozen=True)
class Design:
    """A variant's runs re-fused with `fusion` (a registered strategy as it is; None = the runs' own), then an
    optional bounded prior."""

    label: str
    variant: Variant = Variant()
    stage: str = "final"  # or a single side: "dense", "sparse"
    fusion: FusionStrategy | None = None
    prior_weight: float = 0.0
    prior_temporal_only: bool = False
    prior_terms: tuple[str, ...] = PRIOR_TERMS  # ("recency",): the recency term alone

    def __post_init__(self) -> None:
        if self.fusion is not None and not isinstance(self.fusion, FusionStrategy):
            raise ValueError(f"a design's fusion is a fusion strategy, e.g. RRF(k=10).balanced(0.5); got "
                             f"{self.fusion!r}")

    def knobs(self) -> dict[str, Any]:
        """The strategy's knobs (`fusion`, the weights, its own parameters), or none for the runs' own."""
        return self.fusion.knobs() if self.fusion is not None else {}

    def as_dict(self) -> dict[str, Any]:
        spec = {"fusion_spec": self.fusion.spec} if self.fusion is not None else {}
        return {"label": self.label, "dense_scoring": self.variant.dense_scoring, "analyzer": self.variant.analyzer,
                "stage": self.stage, **self.knobs(), **spec, "prior_weight": self.prior_weight,
                "prior_temporal_only": self.prior_temporal_only, "prior_terms": list(self.prior_terms)}


def ranked(run: QueryRun, design: Design) -> list[str]:
    """The ids `design` puts first for this run (a single side's list, or the final list after the prior)."""
    if design.stage != "final":
        return credited_ids(run.result, design.stage)
    res = reweight(run.result, fusion=design.fusion) if design.fusion is not None else run.result
    w = prior_weight_for(run.q.query, design.prior_weight, design.prior_temporal_only)
    if w == 0:
        return credited_ids(res, "final")
    d = res.diagnostics
    return [t.id for t in apply_prior(list(d.pool.values()), w, terms=design.prior_terms)][: d.settings.recall_top_k]


def variant_index(store: Any, analyzer: str) -> BM25Index:
    """BM25 over the store's active traces with `analyzer` and the store's statistics setting, in memory
    (the store is not changed)."""
    ident = store.identity()
    bm25 = BM25Index(tokenizer=make_tokenizer(analyzer), statistics=ident.statistics if ident else "store")
    bm25.sync([t for t in store.all_traces() if t.is_active])
    return bm25


def run_variant(store: Any, bm25: Any, queries: Sequence[LabelledQuery], variant: Variant, clock: Any = None,
                preset: Preset = HYBRID_PRESET, recall_top_k: int = 10,
                progress: Callable[[int, int], object] | None = None) -> list[QueryRun]:
    """Every query searched once under `variant` (facts off), each at its scope's instant when `clock` is given."""
    view = store if variant.dense_scoring == "cognitive" else ScoredStore(store, SIMILARITY_ONLY)
    r = HybridRetriever(view, bm25=bm25, preset=preset, fact_store=None)
    return run_queries(r, queries, progress=progress, clock=clock, recall_top_k=recall_top_k)


def score_designs(runs: Mapping[Variant, Sequence[QueryRun]], designs: Sequence[Design],
                  scorer: Scorer) -> dict[str, list[float]]:
    """Per-query scores of every design (in query order) from its variant's runs."""
    return {d.label: [scorer(ranked(r, d), r.q) for r in runs[d.variant]] for d in designs}


def compare(per_query: Mapping[str, Sequence[float]], against: Sequence[str], resamples: int = 10_000,
            seed: int = 0) -> dict[str, dict[str, Any]]:
    """Each design's mean and its paired interval (design − reference) against each label in `against`."""
    out: dict[str, dict[str, Any]] = {}
    for label, vals in per_query.items():
        vs = {ref: paired_bootstrap(per_query[ref], vals, resamples=resamples, seed=seed).as_dict()
              for ref in against if ref != label}
        out[label] = {"mean": round(mean(list(vals)), 4), "vs": vs}
    return out


def worst_case_gain(means: Mapping[str, Mapping[str, float]],
                    better_single: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """For each design in every dataset: its gain over that dataset's better single side, worst and mean."""
    labels = set.intersection(*(set(m) for m in means.values())) if means else set()
    out = {}
    for label in sorted(labels):
        gains = {ds: m[label] - better_single[ds] for ds, m in means.items()}
        out[label] = {"worst": round(min(gains.values()), 4), "mean": round(mean(list(gains.values())), 4),
                      "by_dataset": {ds: round(g, 4) for ds, g in gains.items()}}
    return out


def recommend(gains: Mapping[str, Mapping[str, Any]], eligible: Callable[[str], bool] = lambda _label: True) -> str:
    """The label with the largest worst-case gain (ties by the mean gain, then by label)."""
    pool = [lb for lb in gains if eligible(lb)]
    if not pool:
        raise ValueError("no design to recommend: every design was filtered out")
    return max(sorted(pool), key=lambda lb: (gains[lb]["worst"], gains[lb]["mean"]))


FUSIONS: tuple[tuple[str, FusionStrategy], ...] = (
    ("convex theoretical 0.6/0.4", Convex(normalization="theoretical").balanced(0.6)),
    ("convex theoretical 0.5/0.5", Convex(normalization="theoretical").balanced(0.5)),
    ("RRF k10 0.5/0.5", RRF(k=10).balanced(0.5)),
    ("RRF k10 0.6/0.4", RRF(k=10).balanced(0.6)),
    ("RRF k60 0.5/0.5", RRF(k=60).balanced(0.5)),
    ("RRF k60 0.6/0.4", RRF(k=60).balanced(0.6)))
PRIORS = ((0.0, False), (0.05, False), (0.1, False), (0.2, False), (0.1, True), (0.2, True))
RECENCY_PRIOR_FUSIONS = ("convex theoretical 0.5/0.5", "RRF k10 0.5/0.5")  # the recency-only prior on these
RECENCY_PRIORS = ((0.05, False), (0.1, False), (0.2, False), (0.2, True))
ANALYZERS = ("plain", "english-stem")
DEFAULT_LABEL = "a. default (cognitive dense, plain BM25, convex theoretical 0.6/0.4)"
TODAY: FusionStrategy = Convex(normalization="theoretical").balanced(0.6)  # pinned, not the preset's
BM25_LABEL = "f. BM25 alone (plain)"


def issue24_designs() -> list[Design]:
    """The designs a–f: single sides; cognitive dense × fusions; cosine dense × fusions × priors; each analyser."""
    out = [Design(BM25_LABEL, Variant("cognitive", "plain"), "sparse"),
           Design("f. BM25 alone (english-stem)", Variant("cognitive", "english-stem"), "sparse"),
           Design("f. dense alone (cognitive score)", Variant("cognitive", "plain"), "dense"),
           Design("f. dense alone (cosine)", Variant("similarity", "plain"), "dense"),
           Design(DEFAULT_LABEL, Variant("cognitive", "plain"), fusion=TODAY)]
    for analyzer in ANALYZERS:
        stem = "" if analyzer == "plain" else "e. "
        for name, fusion in FUSIONS:
            tag = "a" if name.startswith("convex") else "b"
            out.append(Design(f"{stem}{tag}. cognitive dense, {analyzer} BM25, {name}", Variant("cognitive", analyzer),
                              fusion=fusion))
            for w, temporal in PRIORS:
                tag = "c" if w == 0 else "d"
                prior = "" if w == 0 else f", prior x(1+{w:g}*p){' temporal only' if temporal else ''}"
                out.append(Design(f"{stem}{tag}. cosine dense, {analyzer} BM25, {name}{prior}",
                                  Variant("similarity", analyzer), fusion=fusion, prior_weight=w,
                                  prior_temporal_only=temporal))
            for w, temporal in RECENCY_PRIORS if name in RECENCY_PRIOR_FUSIONS else ():
                out.append(Design(f"{stem}d. cosine dense, {analyzer} BM25, {name}, recency prior x(1+{w:g}*r)"
                                  f"{' temporal only' if temporal else ''}", Variant("similarity", analyzer),
                                  fusion=fusion, prior_weight=w, prior_temporal_only=temporal,
                                  prior_terms=("recency",)))
    return out


__all__ = ["BM25_LABEL", "DEFAULT_LABEL", "Design", "ScoredStore", "Variant", "compare", "issue24_designs", "ranked",
           "recommend", "run_variant", "score_designs", "variant_index", "worst_case_gain"]
