"""`HybridRetriever`: a thin façade over the two phases (SPEC §6, AgentOS step order).

    retrieve(query, …)    = assemble(search(query, …), settings)
    reweight(result, …)   = assemble(result's cached record, new settings)

`retrieval.pipeline.search` does the I/O once and returns a frozen `SearchRecord`; `retrieval.pipeline.assemble` is a
pure function of that record and a `RetrievalSettings`; `retrieval.pipeline.explain` reads the resulting diagnostics.
The defaults and validation of every knob live in `retrieval.pipeline.settings`.
"""
from __future__ import annotations

import copy
import time
from dataclasses import replace
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from retrieval.fusion import FusionStrategy
from retrieval.pipeline.assemble import assemble
from retrieval.pipeline.assemble import reweight as _reweight
from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import analyzer_of
from retrieval.bm25.scoped import check_statistics
from retrieval.pipeline.presets import AGENTOS, HYBRID, PRESETS, Preset, get_preset  # noqa: F401 (re-exported)
from retrieval.pipeline.records import (ESC_EMPTY, ESC_FACTS, ESC_HYDE, ESC_MULTI, ESC_RERANK, ESC_SPARSE_EMPTY,  # noqa: F401
                      ESC_SPLIT, ESC_TRUNCATED, STAGES, Explanation, RetrievalResult, frozen)
from retrieval.pipeline.search import Hyde, Reranker, Services, StoreLookup, bm25_reader, search
from retrieval.pipeline.adaptive import Strengths
from retrieval.pipeline.settings import FUSION_PARAMS, RetrievalSettings, check_knob, resolve_settings
from retrieval.pipeline.split import validate_threshold
from retrieval.types import MemoryTrace, Mood, Scope

if TYPE_CHECKING:
    from retrieval.history.view import AsOf

def _count_knob(name: str, value: Any) -> int:
    """`check_knob` for an integer knob (over_fetch_multiplier, multi_query_n): the int it returns for those."""
    return int(check_knob(name, value))


class HybridRetriever:
    """Dense (MemoryStore) + sparse (BM25Index) retrieval, fused, reranked and explained."""

    as_of_state: Any = None  # the AsOfView a retriever made by `at` reads (None: the live store)
    own_as_of_cache: Any = None  # a bare retriever's as-of versions (`as_of_cache`); a workspace's own them

    def __init__(self, memory_store, bm25: BM25Index | None = None, reranker: Reranker | None = None,
                 hyde: Hyde | None = None, fact_store=None, fact_classifier=None,
                 split_ambiguous_threshold: float | None = None, default_dense_weight: float | None = None,
                 default_sparse_weight: float | None = None, default_rrf_k: float | None = None,
                 preset: str | Preset = HYBRID, rerank_weight: float | None = None, multi_query_llm=None,
                 multi_query_n: int = 0, fusion: str | FusionStrategy | None = None,
                 normalization: str | None = None,
                 writer=None, bm25_statistics: str | None = None, adaptive: bool | None = None,
                 adaptive_strengths: tuple[float, ...] | None = None, settings: RetrievalSettings | None = None):
        """Fusion defaults left as None come from the preset (agentos: 0.7/0.3, k 60 as in AgentOS;
        hybrid: see retrieval.pipeline.presets). A value given here overrides the preset for every call; `fusion`
        may be a `FusionStrategy` (its weights and parameters; a seed keyword beside it changes that knob of it).
        `writer` (a Workspace) makes `index`/`delete` go through its one write path. `bm25_statistics`
        (`store` | `scope`, None = the index's setting) is what a scoped query's BM25 is scored with;
        `scope` reads N, df and avgdl of the queried scope only (a visitor limited by a policy gets it)."""
        seed = dict(split_ambiguous_threshold=split_ambiguous_threshold, default_dense_weight=default_dense_weight,
                    default_sparse_weight=default_sparse_weight, default_rrf_k=default_rrf_k,
                    rerank_weight=rerank_weight, fusion=fusion, normalization=normalization, adaptive=adaptive)
        if settings is not None:  # the one settings value, as it is; the seed's keywords are a thin adapter onto it
            _check_one_source(settings, {**seed, "preset": None if preset == HYBRID else preset})
            preset = settings.rules
        self.preset = get_preset(preset)
        self.memory_store = memory_store
        self.bm25 = bm25 if bm25 is not None else BM25Index()
        self.reranker = reranker
        self.hyde = hyde
        self.fact_store = fact_store
        self.fact_classifier = fact_classifier
        self.multi_query_llm = multi_query_llm
        self.multi_query_n = _count_knob("multi_query_n", multi_query_n)
        self.writer = writer
        self.bm25_statistics = None if bm25_statistics is None else check_statistics(bm25_statistics)
        # The store's learned adaptive rule strengths: its record, not a knob, so beside the settings value.
        self.strengths = None if adaptive_strengths is None else Strengths(*adaptive_strengths)
        if settings is not None:
            self.split_ambiguous_threshold = settings.split_threshold
            self._overrides = {k: v for k, v in settings.knobs().items() if k in _FUSION_OVERRIDES}
            self.defaults = settings
        else:
            self.split_ambiguous_threshold = validate_threshold(split_ambiguous_threshold)
            self._overrides = _seed_overrides(seed)
            self.defaults = resolve_settings(self.preset, overrides=self._overrides,
                                             split_threshold=self.split_ambiguous_threshold)
        self.top_k = (self.defaults.recall_top_k, self.defaults.over_fetch_multiplier)

    @property
    def retrieval_settings(self) -> RetrievalSettings:
        """This retriever's defaults as the one settings value (`HybridRetriever(store, settings=…)` round-trips)."""
        return self.defaults

    @property
    def default_dense_weight(self) -> float:  # the seed's attribute names (SPEC §6), read from the one value
        return self.defaults.strategy.weights[0]

    @property
    def default_sparse_weight(self) -> float:
        return self.defaults.strategy.weights[1]

    @property
    def default_rrf_k(self) -> float:
        return float(self.defaults.fusion_defaults()["rrf_k"])

    @property
    def rerank_weight(self) -> float:
        return float(self.defaults.rerank_weight or 0.0)

    def __repr__(self) -> str:
        d = self.defaults
        fusion = str(d.strategy)  # the strategy shows its own settings: RRF(k=60, weights=(0.7, 0.3))
        fusion += ", adaptive per query" if d.adaptive is not None else ""
        return (f"HybridRetriever(preset={self.preset.name!r}, {fusion}, "
                f"reranker={getattr(self.reranker, 'name', None)!r}, rerank_weight={d.rerank_weight:g}, "
                f"hyde={self.hyde is not None}, facts={self.fact_store is not None}, "
                f"split={self.split_ambiguous_threshold})")

    # ------------------------------------------------------------------ writes
    def index(self, traces: Iterable[MemoryTrace], progress=None) -> int:
        """Add traces to the store and the BM25 index together, each with its own scope.

        With a `writer` (a Workspace) this is its `ingest` (which also saves BM25 and extracts facts);
        a bare retriever writes the store, then mirrors the same traces into its BM25 index.
        """
        traces = list(traces)
        if self.writer is not None:
            return self.writer.ingest(traces, progress=progress).written
        written = self.memory_store.add(traces, progress=progress)
        self.bm25.sync(self.memory_store.last_add_report.traces)  # as stored: contexts, rewritten followers
        return written

    def delete(self, ids: Iterable[str]) -> int:
        """Delete traces from the store, the BM25 index and (when set) the facts drawn from them."""
        ids = list(ids)
        if self.writer is not None:
            return self.writer.delete(ids)
        n = self.memory_store.delete(ids)
        self.bm25.remove_documents(ids)  # one atomic batch: readers never see half of it
        self.bm25.sync(self.memory_store.writes.last_recontexted)  # their followers' contexts changed
        if self.fact_store is not None:
            for i in ids:
                self.fact_store.delete_for_trace(i)
        return n

    # ------------------------------------------------------------------ reads
    def retrieve(self, query: str, mood: Mood | None = None, scope: Scope | None = None, *,
                 recall_top_k: int | None = None, over_fetch_multiplier: int | None = None,
                 dense_weight: float | None = None,
                 sparse_weight: float | None = None, rrf_k: float | None = None,
                 rerank_weight: float | None = None, multi_query_n: int | None = None,
                 preset: str | Preset | None = None, fusion: str | None = None,
                 normalization: str | None = None, as_of: AsOf | None = None,
                 adaptive: bool | None = None) -> RetrievalResult:
        """`as_of` (a version, tag or aware datetime) reads the store as it was then (SPEC §16; `at`). `recall_top_k`
        and `over_fetch_multiplier` left as None are this retriever's (10 and 3 unless its settings say)."""
        recall_top_k = self.top_k[0] if recall_top_k is None else recall_top_k
        over_fetch_multiplier = self.top_k[1] if over_fetch_multiplier is None else over_fetch_multiplier
        if as_of is not None:
            return self.at(as_of).retrieve(
                query, mood, scope, recall_top_k=recall_top_k, over_fetch_multiplier=over_fetch_multiplier,
                dense_weight=dense_weight, sparse_weight=sparse_weight, rrf_k=rrf_k, rerank_weight=rerank_weight,
                multi_query_n=multi_query_n, preset=preset, fusion=fusion, normalization=normalization,
                adaptive=adaptive)
        t0 = time.perf_counter()
        settings = self.settings(preset=preset, recall_top_k=recall_top_k, over_fetch_multiplier=over_fetch_multiplier,
                                 dense_weight=dense_weight, sparse_weight=sparse_weight, rrf_k=rrf_k,
                                 rerank_weight=rerank_weight, fusion=fusion, normalization=normalization,
                                 adaptive=adaptive)
        over_fetch = settings.over_fetch_multiplier
        n_variants = self.multi_query_n if multi_query_n is None else _count_knob("multi_query_n", multi_query_n)
        if scope is not None and not isinstance(scope, Scope):
            raise ValueError(f"scope must be a Scope or None, got {scope!r}")
        # one immutable BM25 version for the search and its explanations (scoped statistics when so set)
        reader = bm25_reader(self.bm25, [scope] if scope is not None else None, self.bm25_statistics)
        svc = Services(self.memory_store, reader, self.reranker, self.hyde, self.fact_store, self.fact_classifier,
                       self.multi_query_llm)
        record = search(svc, query, mood, scope, settings, over_fetch_multiplier=over_fetch,
                        multi_query_n=n_variants)
        result = assemble(record, settings, self.strengths)
        timings = frozen({**result.diagnostics.timings_ms, "total": round((time.perf_counter() - t0) * 1000.0, 3)})
        # SPEC §6: `explain(id)` answers for any id the caller names, read at the BM25 version this search read
        return replace(result, diagnostics=replace(result.diagnostics, timings_ms=timings,
                                                   lookup=StoreLookup(self.memory_store, reader)))

    def lookup(self, scope: Scope | None = None) -> StoreLookup:
        """The read-only look-ups `diagnostics.explain(id, lookup)` makes for an id the query never touched: this
        retriever's store and the BM25 version a query of `scope` reads now (a result holds no store handle)."""
        return StoreLookup(self.memory_store, bm25_reader(self.bm25, [scope] if scope is not None else None,
                                                          self.bm25_statistics))

    def as_of_cache(self) -> Any:
        """The versions kept open for this retriever's as-of reads (`retrieval.history.AsOfCache`): its
        workspace's (`writer`), which outlives the retriever; else its own, made on first use."""
        if self.writer is not None:
            return self.writer.as_of_cache
        if self.own_as_of_cache is None:
            from retrieval.history.view import AsOfCache

            self.own_as_of_cache = AsOfCache()
        return self.own_as_of_cache

    def at(self, as_of: AsOf, progress=None) -> HybridRetriever:
        """This retriever reading the store as of a version, tag or aware datetime (SPEC §16): the traces
        table checked out then, that version's BM25 (its sidecar when it matches, else rebuilt in memory,
        with `progress`), the facts as they stood. Reads only; `as_of_state` says which state it reads."""
        from retrieval.history.view import open_as_of

        writer = self.writer
        sparse = getattr(writer, "sparse", None) or ("bm25" if isinstance(self.bm25, BM25Index) else "fts")
        view = open_as_of(self.memory_store, self.fact_store, as_of, sparse=sparse,
                          sidecar=getattr(writer, "bm25_path", None), progress=progress, cache=self.as_of_cache(),
                          analyzer=analyzer_of(self.bm25.tokenizer)
                          if writer is None and isinstance(self.bm25, BM25Index) else None)
        other = copy.copy(self)
        other.memory_store, other.bm25, other.fact_store, other.writer = view.store, view.bm25, view.facts, None
        other.as_of_state = view
        return other

    def settings(self, *, preset=None, recall_top_k: int | None = None, over_fetch_multiplier: int | None = None,
                 **knobs) -> RetrievalSettings:
        """The settings value a call with these seed keywords would use (None = this retriever's own)."""
        depth = {"recall_top_k": self.top_k[0] if recall_top_k is None else recall_top_k,
                 "over_fetch_multiplier": self.top_k[1] if over_fetch_multiplier is None else over_fetch_multiplier}
        given = {k: v for k, v in knobs.items() if v is not None}
        if preset is None and "fusion" not in given:
            return self.defaults.with_(**given, **depth)  # the value as set, with a knob changed
        # another preset or fusion: the retriever's own knobs, then this call's, over that preset's defaults
        overrides = {k: v for k, v in self._overrides.items() if v is not None}
        return resolve_settings(self.preset if preset is None else get_preset(preset),
                                overrides={**overrides, **given}, split_threshold=self.split_ambiguous_threshold,
                                **depth)

    def reweight(self, result: RetrievalResult, settings: RetrievalSettings | None = None, *,
                 dense_weight: float | None = None, sparse_weight: float | None = None, rrf_k: float | None = None,
                 rerank_weight: float | None = None, recall_top_k: int | None = None,
                 fusion: str | None = None, normalization: str | None = None,
                 adaptive: bool | None = None) -> RetrievalResult:
        """Re-fuse a previous result's cached lists under `settings` (or its own settings with the seed's keywords
        changed; None keeps the value the result was made with). No embedding, search or model call."""
        return _reweight(result, settings, dense_weight=dense_weight, sparse_weight=sparse_weight, rrf_k=rrf_k,
                         rerank_weight=rerank_weight, recall_top_k=recall_top_k, fusion=fusion,
                         normalization=normalization, adaptive=adaptive)


# The seed's constructor keywords (SPEC §6) that set a fusion knob, by the knob each sets: the one place they are
# renamed (every other seed keyword is its knob's own name).
SEED_FUSION_KEYWORDS = {"default_dense_weight": "dense_weight", "default_sparse_weight": "sparse_weight",
                        "default_rrf_k": "rrf_k", "fusion": "fusion", "normalization": "normalization"}


def names_fusion(kwargs: Mapping[str, Any]) -> bool:
    """Whether `HybridRetriever(**kwargs)` is told its fusion: a settings value or any seed fusion keyword (what a
    store's calibration must not be mixed with)."""
    return any(kwargs.get(k) is not None for k in ("settings", *SEED_FUSION_KEYWORDS))


def _seed_overrides(seed: dict[str, Any]) -> dict[str, Any]:
    """The seed's constructor keywords as flat knobs (None: the preset's). A `FusionStrategy` given as `fusion` is
    its own knobs, with a loose seed keyword beside it changing that knob (as `RetrievalSettings.with_`)."""
    knobs = {SEED_FUSION_KEYWORDS.get(k, k): v for k, v in seed.items() if k != "split_ambiguous_threshold"}
    strategy = knobs["fusion"]
    if isinstance(strategy, FusionStrategy):
        knobs = {**knobs, **strategy.knobs(), **{k: v for k, v in knobs.items() if v is not None and k != "fusion"}}
    return knobs


# The fusion knobs a retriever built from a settings value keeps for a call that switches preset or fusion.
_FUSION_OVERRIDES = (*FUSION_PARAMS, "rerank_weight", "adaptive")


def _check_one_source(settings: RetrievalSettings, given: dict[str, Any]) -> None:
    """ValueError unless `settings` is a `RetrievalSettings` given without any seed keyword beside it (one source
    for each knob)."""
    if not isinstance(settings, RetrievalSettings):
        raise ValueError(f"settings={settings!r} must be a RetrievalSettings (RetrievalSettings.parse reads a string)")
    both = sorted(k for k, v in given.items() if v is not None)
    if both:
        raise ValueError(f"give either settings= or {', '.join(both)}, not both: the settings value holds every knob")
