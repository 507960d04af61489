"""The hybrid pipeline: dense + sparse + weighted RRF + rerank + split (SPEC §6, AgentOS order).

`retrieve()` runs the expensive part once (HyDE, multi-query, dense and sparse searches,
hydration, reranker calls) and caches every stage list in the result; `_assemble()` is a pure
function of that cache and the fusion settings. `reweight()` re-runs only `_assemble()`, which is
what makes the app's sliders instant and guarantees they never re-embed, re-search or re-rerank.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from .bm25 import BM25Index
from .fusion import Fused, reciprocal_rank_fusion
from .split import split_candidates, split_halves, validate_threshold
from .presets import AGENTOS, HYBRID, PRESET_OPTIONS, PRESETS, preset_defaults  # noqa: F401 (re-exported)
from .types import MemoryTrace, Mood, Scope, ScoredMemoryTrace

STAGES = ("dense", "sparse", "merged", "reranked", "final")
MAX_QUERY_CHARS = 2000

ESC_SPARSE_EMPTY = "hybrid-retriever:sparse-empty"
ESC_HYDE = "hyde:fallback"
ESC_RERANK = "reranker:error"
ESC_SPLIT = "split:error"
ESC_EMPTY = "query:empty"
ESC_MULTI = "multi-query:fallback"
ESC_FACTS = "facts:error"
ESC_TRUNCATED = "query:truncated"


_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-dense")


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


@runtime_checkable
class Hyde(Protocol):
    def hypothesis(self, query: str) -> str: ...


@dataclass(frozen=True)
class Settings:
    """The knobs `_assemble` reads; everything else is cached search output."""

    preset: str
    dense_weight: float
    sparse_weight: float
    rrf_k: float
    rerank_weight: float
    recall_top_k: int
    split_threshold: float | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class StageCache:
    """What the searches and model calls produced; read-only input to `_assemble`."""

    query: str
    search_queries: list[str]
    scope: Scope | None
    mood: Mood | None
    qvec: np.ndarray | None
    dense_lists: list[list[ScoredMemoryTrace]]
    sparse_lists: list[list[tuple[str, float]]]
    sparse_hydrated: dict[str, ScoredMemoryTrace]  # sparse-only ids found in the store (hybrid)
    fact_traces: list[ScoredMemoryTrace]
    facts: list[Any]
    pool_ids: list[str]
    rerank_scores: dict[str, float] | None
    rerank_error: str | None
    split_halves: dict[str, tuple[str, str]]
    split_scores: dict[str, tuple[float, float]] | None
    split_error: str | None
    split_candidate_ids: list[str]
    escalations: list[str]
    timings_ms: dict[str, float]
    over_fetch_top_k: int
    reranker_name: str | None = None
    hypothesis: str | None = None
    dense_bm25: dict[str, float] = field(default_factory=dict)  # BM25 of dense hits past the sparse top-N


@dataclass
class Explanation:
    """Why a trace is where it is — or why it is not in the final list."""

    trace_id: str
    stages: dict[str, tuple[int, float] | None]
    dropped_at: str | None
    reason: str
    dense_breakdown: dict[str, float] | None = None
    dense_similarity: float | None = None
    bm25_terms: dict[str, float] | None = None
    rrf: dict[str, Any] | None = None
    fact: dict[str, Any] | None = None
    rerank_score: float | None = None
    blend: dict[str, float] | None = None
    split: dict[str, Any] | None = None
    content: str | None = None
    scope: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class Diagnostics:
    stage_ids: dict[str, list[str]]
    stage_scores: dict[str, dict[str, float]]
    escalations: list[str]
    hyde: str | None
    multi_query: list[str]
    split_on_ambiguous: dict[str, Any] | None
    timings_ms: dict[str, float]
    candidates_scanned: int
    settings: dict[str, Any]
    fact_ids: list[str]
    _retriever: "HybridRetriever | None" = field(default=None, repr=False)
    _cache: StageCache | None = field(default=None, repr=False)
    _pool: dict[str, ScoredMemoryTrace] = field(default_factory=dict, repr=False)
    _fused: dict[str, Fused] = field(default_factory=dict, repr=False)
    _blend: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    _split_done: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _dropped_hydrate: dict[str, str] = field(default_factory=dict, repr=False)
    _cut_by_rerank: set[str] = field(default_factory=set, repr=False)
    _imputed: dict[str, str] = field(default_factory=dict, repr=False)  # id -> list whose rank was completed

    def explain(self, trace_id: str) -> Explanation:
        from .explain import explain

        return explain(self, trace_id)

    # Read-only views for callers (the app, evaluation); the underscored fields are internals.
    @property
    def retriever(self) -> "HybridRetriever | None":
        """The retriever that made this result (what `reweight` needs)."""
        return self._retriever

    @property
    def facts(self) -> list[Any]:
        """The `Fact`s injected as fact-graph traces, in injection order."""
        return list(self._cache.facts) if self._cache is not None else []

    @property
    def searched_query(self) -> str:
        """The text dense and sparse searched: the HyDE hypothesis when one was used, else the query."""
        cache = self._cache
        return cache.search_queries[0] if cache is not None and cache.search_queries else ""

    @property
    def pool(self) -> dict[str, ScoredMemoryTrace]:
        """Every candidate as it stands after rerank and split (contents may be a split half), by id."""
        return dict(self._pool)


@dataclass
class RetrievalResult:
    traces: list[ScoredMemoryTrace]
    diagnostics: Diagnostics

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.traces]


class HybridRetriever:
    """Dense (MemoryStore) + sparse (BM25Index) retrieval fused with weighted RRF."""

    def __init__(self, memory_store, bm25: BM25Index | None = None, reranker: Reranker | None = None,
                 hyde: Hyde | None = None, fact_store=None, fact_classifier=None,
                 split_ambiguous_threshold: float | None = None, default_dense_weight: float | None = None,
                 default_sparse_weight: float | None = None, default_rrf_k: float | None = None,
                 preset: str = HYBRID, rerank_weight: float | None = None, multi_query_llm=None,
                 multi_query_n: int = 0):
        """Fusion defaults left as None come from the preset (agentos: 0.7/0.3, k 60 as in AgentOS;
        hybrid: see retrieval.presets). A value given here overrides the preset for every call."""
        if preset not in PRESETS:
            raise ValueError(f"preset {preset!r} is not one of {', '.join(PRESETS)}")
        self.memory_store = memory_store
        self.bm25 = bm25 if bm25 is not None else BM25Index()
        self.reranker = reranker
        self.hyde = hyde
        self.fact_store = fact_store
        self.fact_classifier = fact_classifier
        self.split_ambiguous_threshold = validate_threshold(split_ambiguous_threshold)
        self.preset = preset
        self.multi_query_llm = multi_query_llm
        self.multi_query_n = int(multi_query_n)
        self._explicit = {"dense_weight": default_dense_weight, "sparse_weight": default_sparse_weight,
                          "rrf_k": default_rrf_k, "rerank_weight": rerank_weight}
        _check_knobs(*self._defaults_for(preset).values())  # validate the constructor values now

    def _defaults_for(self, preset: str) -> dict[str, float]:
        merged = preset_defaults(preset)
        merged.update({k: v for k, v in self._explicit.items() if v is not None})
        return {k: merged[k] for k in ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight")}

    @property
    def default_dense_weight(self) -> float:
        return self._defaults_for(self.preset)["dense_weight"]

    @property
    def default_sparse_weight(self) -> float:
        return self._defaults_for(self.preset)["sparse_weight"]

    @property
    def default_rrf_k(self) -> float:
        return self._defaults_for(self.preset)["rrf_k"]

    @property
    def rerank_weight(self) -> float:
        return self._defaults_for(self.preset)["rerank_weight"]

    def __repr__(self) -> str:
        return (f"HybridRetriever(preset={self.preset!r}, RRF(k={self.default_rrf_k:g}, weights=("
                f"{self.default_dense_weight:g}, {self.default_sparse_weight:g})), "
                f"reranker={getattr(self.reranker, 'name', None)!r}, rerank_weight={self.rerank_weight:g}, "
                f"hyde={self.hyde is not None}, facts={self.fact_store is not None}, "
                f"split={self.split_ambiguous_threshold})")

    # ------------------------------------------------------------------ indexing
    def index(self, traces: Iterable[MemoryTrace], progress=None) -> int:
        """Add traces to the store and the BM25 index together, each with its own scope.

        Inactive traces are stored but kept out of BM25: neither side ever searches them.
        """
        traces = list(traces)
        written = self.memory_store.add(traces, progress=progress)
        sync_bm25(self.bm25, traces)
        return written

    def delete(self, ids: Iterable[str]) -> int:
        """Delete traces from the store, the BM25 index and (when set) the facts drawn from them."""
        ids = list(ids)
        for i in ids:
            self.bm25.remove_document(i)
            if self.fact_store is not None:
                self.fact_store.delete_for_trace(i)
        return self.memory_store.delete(ids)

    # ------------------------------------------------------------------ retrieval
    def retrieve(self, query: str, mood: Mood | None = None, scope: Scope | None = None, *,
                 recall_top_k: int = 10, over_fetch_multiplier: int = 3, dense_weight: float | None = None,
                 sparse_weight: float | None = None, rrf_k: float | None = None,
                 rerank_weight: float | None = None, multi_query_n: int | None = None,
                 preset: str | None = None) -> RetrievalResult:
        settings = self._settings(dense_weight, sparse_weight, rrf_k, rerank_weight, recall_top_k, preset)
        if not isinstance(over_fetch_multiplier, int) or over_fetch_multiplier < 1:
            raise ValueError(f"over_fetch_multiplier must be an integer >= 1, got {over_fetch_multiplier!r}")
        if scope is not None and not isinstance(scope, Scope):
            raise ValueError(f"scope must be a Scope or None, got {scope!r}")
        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        escalations: list[str] = []
        query = query if isinstance(query, str) else ""
        if not query.strip():
            cache = _empty_cache(query, scope, mood, [f"{ESC_EMPTY}: the query is empty; type some words"])
            return _assemble(self, cache, settings)
        if len(query) > MAX_QUERY_CHARS:
            escalations.append(f"{ESC_TRUNCATED}: the query had {len(query)} characters; "
                               f"only the first {MAX_QUERY_CHARS} were searched")
            query = query[:MAX_QUERY_CHARS]
        top_n = settings.recall_top_k * over_fetch_multiplier
        scopes = [scope] if scope is not None else None

        # Step 0: fact traces from the ORIGINAL query.
        facts, fact_traces = [], []
        if self.fact_store is not None:
            t0 = time.perf_counter()
            try:
                from .facts import fact_traces_for_query

                facts, fact_traces = fact_traces_for_query(self.fact_store, self.fact_classifier, query, scope,
                                                           PRESET_OPTIONS[settings.preset]["temporal_facts"])
            except Exception as exc:  # a broken fact store must not take retrieval down
                escalations.append(f"{ESC_FACTS}: {_short(exc)}")
            timings["facts"] = _ms(t0)

        # Step 1: HyDE replaces the query for dense and sparse; the reranker keeps the original.
        search_query = query
        hypothesis = None
        if self.hyde is not None:
            t0 = time.perf_counter()
            try:
                hypothesis = (self.hyde.hypothesis(query) or "").strip()
                if hypothesis:
                    search_query = hypothesis
                else:
                    escalations.append(f"{ESC_HYDE}: the generator returned no text; searched the raw query")
            except Exception as exc:
                escalations.append(f"{ESC_HYDE}: {_short(exc)}; searched the raw query")
            timings["hyde"] = _ms(t0)

        search_queries = [search_query]
        n_variants = self.multi_query_n if multi_query_n is None else int(multi_query_n)
        if n_variants > 0 and self.multi_query_llm is not None:
            t0 = time.perf_counter()
            try:
                from .candidates import multi_query

                variants = multi_query(self.multi_query_llm, query, n=n_variants, include_original=False)
                search_queries += [v for v in variants if v.lower() != search_query.lower()]
            except Exception as exc:
                escalations.append(f"{ESC_MULTI}: {_short(exc)}; searched the original query only")
            timings["multi_query"] = _ms(t0)

        # Step 2: dense. Embed all variants in one call.
        t0 = time.perf_counter()
        qvecs = np.asarray(self.memory_store.embedder.embed(search_queries), dtype=np.float32)
        timings["embed"] = _ms(t0)
        opts = PRESET_OPTIONS[settings.preset]

        def dense_search():
            t = time.perf_counter()
            lists = [self.memory_store.query_vector(v, mood, top_k=top_n, scopes=scopes) for v in qvecs]
            timings["dense"] = _ms(t)
            return lists

        # The dense search (LanceDB, releases the GIL) runs beside step 3 and the hydration look-up.
        future = _POOL.submit(dense_search)
        try:
            # Step 3: sparse, same top-N and scope.
            t0 = time.perf_counter()
            sparse_lists = [self.bm25.search(q, top_k=top_n, scopes=scopes) for q in search_queries]
            timings["sparse"] = _ms(t0)
            # Fetch every sparse hit's row now (hybrid); the ones dense also found are dropped below.
            hits = {}
            sparse_ids = list(dict.fromkeys(i for lst in sparse_lists for i, _ in lst))
            if sparse_ids and opts["hydrate_sparse_only"]:
                t0 = time.perf_counter()
                hits = self.memory_store.get_with_vectors(sparse_ids, scopes=scopes)
                timings["hydrate"] = _ms(t0)
        finally:
            dense_lists = future.result()

        # Hydration of sparse-only ids (hybrid preset only; AgentOS drops them).
        dense_ids = {t.id for lst in dense_lists for t in lst}
        sparse_only = {i: hits[i] for i in hits if i not in dense_ids}
        sparse_hydrated = self.memory_store.score_hits(sparse_only, qvecs[0], mood) if sparse_only else {}
        # Rank completion (hybrid): the BM25 score of every dense hit the sparse top-N missed.
        dense_bm25: dict[str, float] = {}
        if opts["complete_ranks"] and sparse_lists[0]:
            in_sparse = {i for i, _ in sparse_lists[0]}
            missed = [t.id for t in dense_lists[0] if t.id not in in_sparse]
            dense_bm25 = {i: v for i, v in self.bm25.scores_for(search_queries[0], missed).items() if v > 0}

        cache = StageCache(
            query=query, search_queries=search_queries, scope=scope, mood=mood, qvec=qvecs[0],
            dense_lists=dense_lists, sparse_lists=sparse_lists, sparse_hydrated=sparse_hydrated,
            fact_traces=fact_traces, facts=facts, pool_ids=[], rerank_scores=None, rerank_error=None,
            split_halves={}, split_scores=None, split_error=None, split_candidate_ids=[],
            escalations=escalations, timings_ms=timings, over_fetch_top_k=top_n,
            reranker_name=getattr(self.reranker, "name", None), dense_bm25=dense_bm25)
        cache.hypothesis = hypothesis or None

        # Step 6's model calls happen once, over the whole pool (which no fusion knob changes).
        sparse_empty = not any(sparse_lists)
        if self.reranker is not None and not sparse_empty:
            pool = _pool_traces(cache, settings.preset)
            cache.pool_ids = [t.id for t in pool]
            self._call_reranker(cache, pool)
        result = _assemble(self, cache, settings)
        result.diagnostics.timings_ms["total"] = _ms(t_start)
        return result

    def _call_reranker(self, cache: StageCache, pool: list[ScoredMemoryTrace]) -> None:
        if not pool:
            cache.rerank_scores = {}
            return
        t0 = time.perf_counter()
        try:
            scores = _check_scores(self.reranker.score(cache.query, [t.content for t in pool]), len(pool))
            cache.rerank_scores = dict(zip((t.id for t in pool), scores))
        except Exception as exc:
            cache.rerank_error = _short(exc)
            cache.timings_ms["rerank"] = _ms(t0)
            return
        cache.timings_ms["rerank"] = _ms(t0)
        threshold = self.split_ambiguous_threshold
        if threshold is None:
            return
        t0 = time.perf_counter()
        cands = split_candidates(cache.pool_ids, cache.rerank_scores, threshold)
        cache.split_candidate_ids = cands
        by_id = {t.id: t for t in pool}
        halves = {i: h for i in cands if (h := split_halves(by_id[i].content)) is not None}
        cache.split_halves = halves
        if halves:
            texts = [x for h in halves.values() for x in h]
            try:
                s = _check_scores(self.reranker.score(cache.query, texts), len(texts))
                cache.split_scores = {i: (s[2 * n], s[2 * n + 1]) for n, i in enumerate(halves)}
            except Exception as exc:
                cache.split_error = _short(exc)
        else:
            cache.split_scores = {}
        cache.timings_ms["split"] = _ms(t0)

    def reweight(self, result: RetrievalResult, *, dense_weight: float | None = None,
                 sparse_weight: float | None = None, rrf_k: float | None = None,
                 rerank_weight: float | None = None, recall_top_k: int | None = None) -> RetrievalResult:
        """Re-fuse a previous result's cached lists with new knobs. No embedding, search or model call.

        A knob left as None keeps the value the result was made with.
        """
        cache = result.diagnostics._cache
        if cache is None:
            raise ValueError("this result carries no cached stages; call retrieve() first")
        old = result.diagnostics.settings
        settings = Settings(
            preset=old["preset"],
            dense_weight=old["dense_weight"] if dense_weight is None else dense_weight,
            sparse_weight=old["sparse_weight"] if sparse_weight is None else sparse_weight,
            rrf_k=old["rrf_k"] if rrf_k is None else rrf_k,
            rerank_weight=old["rerank_weight"] if rerank_weight is None else rerank_weight,
            recall_top_k=old["recall_top_k"] if recall_top_k is None else recall_top_k,
            split_threshold=old["split_threshold"],
        )
        _check_knobs(settings.dense_weight, settings.sparse_weight, settings.rrf_k, settings.rerank_weight)
        t0 = time.perf_counter()
        out = _assemble(self, cache, settings)
        out.diagnostics.timings_ms = {"refuse": _ms(t0)}
        return out

    def _settings(self, dense_weight, sparse_weight, rrf_k, rerank_weight, recall_top_k, preset) -> Settings:
        preset = self.preset if preset is None else preset
        if preset not in PRESETS:
            raise ValueError(f"preset {preset!r} is not one of {', '.join(PRESETS)}")
        if not isinstance(recall_top_k, int) or recall_top_k < 1:
            raise ValueError(f"recall_top_k must be an integer >= 1, got {recall_top_k!r}")
        d = self._defaults_for(preset)
        dw, sw, k, rw = _check_knobs(
            d["dense_weight"] if dense_weight is None else dense_weight,
            d["sparse_weight"] if sparse_weight is None else sparse_weight,
            d["rrf_k"] if rrf_k is None else rrf_k,
            d["rerank_weight"] if rerank_weight is None else rerank_weight,
        )
        return Settings(preset, dw, sw, k, rw, recall_top_k, self.split_ambiguous_threshold)


def sync_bm25(bm25: BM25Index, traces: Iterable[MemoryTrace]) -> None:
    """Mirror stored traces into BM25: active ones (re)added with their scope, inactive removed."""
    latest = {t.id: t for t in traces}  # duplicates: last wins, as in the store
    for t in latest.values():
        if not t.is_active:
            bm25.remove_document(t.id)
    bm25.add_documents((t.id, t.content, t.scope_key) for t in latest.values() if t.is_active)


# ---------------------------------------------------------------------- pure assembly
def _check_knobs(dw, sw, k, rw) -> tuple[float, float, float, float]:
    for name, v in (("dense_weight", dw), ("sparse_weight", sw)):
        if not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{name}={v!r} must be a number >= 0")
    if not isinstance(k, (int, float)) or not k > 0:
        raise ValueError(f"rrf_k={k!r} must be > 0")
    if not isinstance(rw, (int, float)) or not 0 <= rw <= 1:
        raise ValueError(f"rerank_weight={rw!r} must be in [0, 1]")
    return float(dw), float(sw), float(k), float(rw)


def _check_scores(scores: Any, n: int) -> list[float]:
    scores = [float(s) for s in scores]
    if len(scores) != n:
        raise ValueError(f"reranker returned {len(scores)} scores for {n} texts")
    if any(not (0.0 <= s <= 1.0) for s in scores):
        raise ValueError("reranker returned a score outside [0, 1]")
    return scores


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 300 else text[:297] + "..."


def _empty_cache(query, scope, mood, escalations) -> StageCache:
    return StageCache(query=query, search_queries=[], scope=scope, mood=mood, qvec=None, dense_lists=[],
                      sparse_lists=[], sparse_hydrated={}, fact_traces=[], facts=[], pool_ids=[],
                      rerank_scores=None, rerank_error=None, split_halves={}, split_scores=None,
                      split_error=None, split_candidate_ids=[], escalations=escalations, timings_ms={},
                      over_fetch_top_k=0)


def _best_dense(cache: StageCache) -> dict[str, ScoredMemoryTrace]:
    """Each dense id's best-scoring hit over all query variants."""
    best: dict[str, ScoredMemoryTrace] = {}
    for lst in cache.dense_lists:
        for t in lst:
            if t.id not in best or t.retrieval_score > best[t.id].retrieval_score:
                best[t.id] = t
    return best


def _best_sparse(cache: StageCache) -> dict[str, float]:
    best: dict[str, float] = {}
    for lst in cache.sparse_lists:
        for i, s in lst:
            best[i] = max(s, best.get(i, 0.0))
    return best


def _complete_ranks(cache: StageCache, lists: list[list[str]]) -> list[list[str]]:
    """Give every pooled id a rank in both original-query lists (hybrid preset).

    Plain RRF gives an id the other list missed nothing from it, so with 0.7/0.3 weights a BM25
    rank-1 hit the embedding ranked 31st can never outrank dense rank 30. Here a sparse-only id
    is appended to the dense list by its real cognitive score, and a dense hit past the sparse
    top-N by its real BM25 score; ranks continue after N (an optimistic estimate of the true rank).
    """
    nd = len(cache.dense_lists)
    dense, sparse = list(lists[0]), list(lists[nd])
    in_dense, in_sparse = set(dense), set(sparse)
    extra_d = sorted(((t.retrieval_score, i) for i, t in cache.sparse_hydrated.items() if i not in in_dense),
                     key=lambda x: (-x[0], x[1]))
    extra_s = sorted(((sc, i) for i, sc in cache.dense_bm25.items() if i not in in_sparse), key=lambda x: (-x[0], x[1]))
    out = list(lists)
    out[0] = dense + [i for _, i in extra_d]
    out[nd] = sparse + [i for _, i in extra_s]
    return out


def _pool_traces(cache: StageCache, preset: str) -> list[ScoredMemoryTrace]:
    """Facts + every hydratable merged id, in a fixed (weight-independent) order for the reranker."""
    dense = _best_dense(cache)
    ids = list(dense)
    for lst in cache.sparse_lists:
        for i, _ in lst:
            if i not in dense and i not in ids and PRESET_OPTIONS[preset]["hydrate_sparse_only"] \
                    and i in cache.sparse_hydrated:
                ids.append(i)
    pool = list(cache.fact_traces)
    pool += [dense[i] if i in dense else cache.sparse_hydrated[i] for i in ids]
    return pool


def _ordered(traces: list[ScoredMemoryTrace]) -> list[ScoredMemoryTrace]:
    return sorted(traces, key=lambda t: (-t.retrieval_score, t.id))


def _assemble(retriever: HybridRetriever, cache: StageCache, s: Settings) -> RetrievalResult:
    escalations = list(cache.escalations)
    dense_best = _best_dense(cache)
    sparse_best = _best_sparse(cache)
    stage_ids = {k: [] for k in STAGES}
    stage_scores: dict[str, dict[str, float]] = {k: {} for k in STAGES}
    dense_order = sorted(dense_best.values(), key=lambda t: (-t.retrieval_score, t.id))
    stage_ids["dense"] = [t.id for t in dense_order]
    stage_scores["dense"] = {t.id: t.retrieval_score for t in dense_order}
    sparse_order = sorted(sparse_best.items(), key=lambda kv: (-kv[1], kv[0]))
    stage_ids["sparse"] = [i for i, _ in sparse_order]
    stage_scores["sparse"] = dict(sparse_order)
    facts = list(cache.fact_traces)
    diag = Diagnostics(
        stage_ids=stage_ids, stage_scores=stage_scores, escalations=escalations,
        hyde=cache.hypothesis,
        multi_query=list(cache.search_queries[1:]), split_on_ambiguous=None,
        timings_ms=dict(cache.timings_ms), candidates_scanned=0, settings=s.as_dict(),
        fact_ids=[t.id for t in facts], _retriever=retriever, _cache=cache,
    )
    if not cache.search_queries:  # empty query
        return RetrievalResult([], diag)

    if not any(cache.sparse_lists):
        # Step 3 escape hatch (AgentOS): no sparse hits → facts + dense, no fusion, no rerank.
        escalations.append(ESC_SPARSE_EMPTY)
        if len(cache.dense_lists) > 1:
            fused = reciprocal_rank_fusion([[t.id for t in lst] for lst in cache.dense_lists], k=s.rrf_k)
            dense_seq = [dense_best[f.id] for f in fused]
        else:
            dense_seq = list(cache.dense_lists[0]) if cache.dense_lists else []
        final = (facts + dense_seq)[: s.recall_top_k]
        stage_ids["final"] = [t.id for t in final]
        stage_scores["final"] = {t.id: t.retrieval_score for t in final}
        diag.candidates_scanned = len(dense_best)
        diag._pool = {t.id: t for t in facts + dense_seq}
        return RetrievalResult(final, diag)

    # Step 4: weighted RRF over every dense and sparse list (1-based ranks).
    t0 = time.perf_counter()
    lists = [[t.id for t in lst] for lst in cache.dense_lists] + [[i for i, _ in lst] for lst in cache.sparse_lists]
    opts = PRESET_OPTIONS[s.preset]
    if opts["complete_ranks"]:
        lists = _complete_ranks(cache, lists)
        diag._imputed = {i: "dense" for i in lists[0][len(cache.dense_lists[0]):]}
        diag._imputed.update({i: "sparse" for i in lists[len(cache.dense_lists)][len(cache.sparse_lists[0]):]})
    weights = [s.dense_weight] * len(cache.dense_lists) + [s.sparse_weight] * len(cache.sparse_lists)
    fused = reciprocal_rank_fusion(lists, weights=weights, k=s.rrf_k)
    stage_ids["merged"] = [f.id for f in fused]
    stage_scores["merged"] = {f.id: f.score for f in fused}
    diag._fused = {f.id: f for f in fused}
    diag.candidates_scanned = len(fused)

    # Step 5: hydrate, facts first.
    top = fused[0].score if fused and fused[0].score > 0 else 1.0
    pool: list[ScoredMemoryTrace] = list(facts)
    for f in fused:
        if f.id in dense_best:
            t = dense_best[f.id]
        elif not opts["hydrate_sparse_only"]:
            diag._dropped_hydrate[f.id] = "preset"
            continue
        elif f.id in cache.sparse_hydrated:
            t = cache.sparse_hydrated[f.id]
        else:
            diag._dropped_hydrate[f.id] = "missing"
            continue
        if opts["blend_base"] == "fused":
            # Blend base is the fused score normalised to [0, 1]: fusion weights keep mattering
            # under a reranker. The cognitive breakdown stays attached for the explanation.
            t = replace(t, retrieval_score=f.score / top)
        pool.append(t)
    diag.timings_ms["merge"] = _ms(t0)

    # Step 6: rerank blend + split-on-ambiguous, from cached model scores.
    order = pool
    if retriever.reranker is not None and cache.rerank_error is not None:
        escalations.append(f"{ESC_RERANK}: {cache.rerank_error}; kept the merged order")
    elif retriever.reranker is not None and cache.rerank_scores is not None:
        w = s.rerank_weight
        blended = []
        for t in pool:
            r = cache.rerank_scores.get(t.id, 0.0)
            new = (1 - w) * t.retrieval_score + w * r
            diag._blend[t.id] = {"base": t.retrieval_score, "rerank": r, "weight": w, "blended": new}
            blended.append(replace(t, retrieval_score=new))
        order = _ordered(blended)
        if s.split_threshold is not None:
            order = _apply_split(cache, order, w, diag, escalations)
        stage_ids["reranked"] = [t.id for t in order]
        stage_scores["reranked"] = {t.id: t.retrieval_score for t in order}
        before = {t.id for t in pool[: s.recall_top_k]}
        diag._cut_by_rerank = before - {t.id for t in order[: s.recall_top_k]}
    diag._pool = {t.id: t for t in order}

    # Step 7: truncate.
    final = order[: s.recall_top_k]
    stage_ids["final"] = [t.id for t in final]
    stage_scores["final"] = {t.id: t.retrieval_score for t in final}
    return RetrievalResult(final, diag)


def _apply_split(cache: StageCache, order: list[ScoredMemoryTrace], w: float, diag: Diagnostics,
                 escalations: list[str]) -> list[ScoredMemoryTrace]:
    info = {"threshold": diag.settings["split_threshold"], "candidate_count": len(cache.split_candidate_ids),
            "replaced_ids": []}
    diag.split_on_ambiguous = info
    if cache.split_error is not None:
        escalations.append(f"{ESC_SPLIT}: {cache.split_error}; nothing was replaced")
        return order
    if not cache.split_scores:
        return order
    out = []
    for t in order:
        sc = cache.split_scores.get(t.id)
        whole = (cache.rerank_scores or {}).get(t.id, 0.0)
        if sc is None:
            out.append(t)
            continue
        a, b = cache.split_halves[t.id]
        better, text = (sc[0], a) if sc[0] >= sc[1] else (sc[1], b)  # a tie favours half a
        record = {"halves": [a, b], "half_scores": list(sc), "whole": whole, "replaced": better > whole}
        if better > whole:
            gain = w * (better - whole)
            record.update(chosen="a" if text is a else "b", gain=gain)
            t = replace(t, trace=replace(t.trace, content=text), retrieval_score=t.retrieval_score + gain)
            info["replaced_ids"].append(t.id)
        diag._split_done[t.id] = record
        out.append(t)
    return _ordered(out)
