"""Search: the expensive phase, run once per query (SPEC §6 steps 0–3 and the model calls of step 6).

`search()` does every piece of I/O the pipeline needs — fact look-up, HyDE, multi-query, the
embedding, dense and sparse searches, hydration of sparse-only ids, and the reranker and split
calls over the whole candidate pool (which no fusion knob changes) — and returns one frozen
`SearchRecord`. Every failure of an optional step is recorded as an escalation, never raised.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from retrieval.pipeline.assemble import pool_for_rerank
from retrieval.models.rerankers import Reranker  # the one Reranker protocol (models/rerankers.py)
from retrieval.pipeline.explain import context_only_terms
from retrieval.pipeline.ports import DenseStore, FactSource, SparseIndex, SparseReader
from retrieval.pipeline.records import (ESC_EMPTY, ESC_FACTS, ESC_HYDE, ESC_MULTI, ESC_TRUNCATED, RerankRecord,
                                        FrozenDict, SearchRecord, frozen,
                      as_vector)
from retrieval.pipeline.settings import RetrievalSettings
from retrieval.pipeline.split import split_candidates, split_halves
from retrieval.types import Mood, Scope, ScoredMemoryTrace

MAX_QUERY_CHARS = 2000

# Dense search (LanceDB releases the GIL) runs beside BM25 and the hydration look-up.
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-dense")


@runtime_checkable
class Hyde(Protocol):
    def hypothesis(self, query: str) -> str: ...


@dataclass(frozen=True)
class Services:
    """What search talks to. The BM25 reader is one immutable snapshot for the whole query."""

    store: DenseStore
    bm25: SparseReader
    reranker: Reranker | None = None
    hyde: Hyde | None = None
    fact_store: FactSource | None = None
    fact_classifier: Any = None
    multi_query_llm: Any = None


@dataclass(frozen=True)
class StoreLookup:
    """Read-only look-ups `explain` may make for an id the query did not touch: never a search."""

    store: DenseStore
    bm25: SparseReader

    def bm25_terms(self, query: str, trace_id: str) -> list[dict] | None:
        """Each query term's BM25 score tree for the id (tf, idf, length norm → score), or None."""
        if not query:
            return None
        return self.bm25.explain_terms_for(query, [trace_id]).get(trace_id)

    def row(self, trace_id: str):
        """`(trace, vector)` for any stored id (any scope, active or not), or None."""
        return self.store.get_with_vectors([trace_id], scopes=None, active_only=False).get(trace_id)

    def score(self, trace, vec, qvec, mood) -> ScoredMemoryTrace:
        return self.store.score_hits({trace.id: (trace, vec)}, qvec, mood)[trace.id]


def bm25_reader(bm25: SparseIndex, scopes: list[Scope] | None = None, statistics: str | None = None) -> SparseReader:
    """The index's current immutable snapshot (readers never see a half-applied batch), read with the
    statistics of `scopes` when `statistics` (else the index's setting) is `scope` (`BM25Index.reader`).

    LanceDB's FTS keeps its own store-wide statistics: that backend is read as it is.
    """
    return bm25.reader(scopes, statistics)


def search(svc: Services, query: str, mood: Mood | None, scope: Scope | None, settings: RetrievalSettings, *,
           over_fetch_multiplier: int, multi_query_n: int) -> SearchRecord:
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    escalations: list[str] = []
    query = query if isinstance(query, str) else ""
    if not query.strip():
        return empty_record(query, scope, mood, [f"{ESC_EMPTY}: the query is empty; type some words"])
    query = _clip(query, escalations)
    top_n = settings.recall_top_k * over_fetch_multiplier
    scopes = [scope] if scope is not None else None

    facts, fact_traces = _facts(svc, query, scope, settings, timings, escalations)
    search_queries, hypothesis = _rewrite(svc, query, multi_query_n, timings, escalations)
    qvecs = _embed(svc, search_queries, timings)
    dense_lists, sparse_lists, hits = _dense_and_sparse(svc, search_queries, qvecs, mood, scopes, top_n,
                                                        settings, timings)

    dense_ids = {t.id for lst in dense_lists for t in lst}
    sparse_only = {i: hits[i] for i in hits if i not in dense_ids}
    sparse_hydrated = svc.store.score_hits(sparse_only, qvecs[0], mood) if sparse_only else {}
    dense_bm25 = _dense_bm25(svc.bm25, settings, search_queries[0], dense_lists[0], sparse_lists[0])
    query_idf, bm25_docs = query_idf_of(svc.bm25, query)
    trees, context_terms = _explained(svc.bm25, search_queries[0], dense_lists, sparse_lists, sparse_hydrated)

    record = SearchRecord(
        query=query, search_queries=tuple(search_queries), scope=scope, mood=mood, qvec=as_vector(qvecs[0]),
        dense_lists=tuple(tuple(lst) for lst in dense_lists),
        sparse_lists=tuple(tuple((i, float(s)) for i, s in lst) for lst in sparse_lists),
        sparse_hydrated=frozen(sparse_hydrated), dense_bm25=frozen(dense_bm25), fact_traces=tuple(fact_traces),
        facts=tuple(facts), rerank=None, escalations=tuple(escalations), timings_ms=frozen(timings),
        over_fetch_top_k=top_n, hypothesis=hypothesis, over_fetch_multiplier=over_fetch_multiplier,
        query_idf=frozen(query_idf), bm25_docs=bm25_docs, bm25_terms=trees, bm25_context_terms=context_terms)
    if svc.reranker is not None and any(sparse_lists):
        record = _with_rerank(svc.reranker, record, settings, timings)
    timings["search"] = _ms(t_start)
    return _replace_timings(record, timings)


def _clip(query: str, escalations: list[str]) -> str:
    """The query cut to MAX_QUERY_CHARS, saying so in `escalations` when it was longer."""
    if len(query) > MAX_QUERY_CHARS:
        escalations.append(f"{ESC_TRUNCATED}: the query had {len(query)} characters; "
                           f"only the first {MAX_QUERY_CHARS} were searched")
        query = query[:MAX_QUERY_CHARS]
    return query


def _embed(svc: Services, search_queries: list[str], timings: dict[str, float]) -> np.ndarray:
    """One query vector per search query (the embedder's query side when it has one)."""
    t0 = time.perf_counter()
    embed = getattr(svc.store.embedder, "embed_query", svc.store.embedder.embed)
    qvecs = np.asarray(embed(list(search_queries)), dtype=np.float32)
    timings["embed"] = _ms(t0)
    return qvecs


def _dense_and_sparse(svc: Services, search_queries: list[str], qvecs: np.ndarray, mood: Mood | None,
                      scopes: list[Scope] | None, top_n: int, settings: RetrievalSettings,
                      timings: dict[str, float]) -> tuple[list[list[ScoredMemoryTrace]], list[list], dict]:
    """Steps 2–3: the dense searches (in the pool) beside BM25 and the hydration look-up of its ids.

    Returns `(dense_lists, sparse_lists, hits)`, one list per search query; `hits` are the stored rows
    of the sparse ids (hybrid preset only), for scoring the ones dense did not find.
    """
    bm25 = svc.bm25

    def dense_search():
        t = time.perf_counter()
        lists = [svc.store.query_vector(v, mood, top_k=top_n, scopes=scopes) for v in qvecs]
        timings["dense"] = _ms(t)
        return lists

    future = _POOL.submit(dense_search)
    hits: dict = {}
    try:
        t0 = time.perf_counter()
        sparse_lists = [bm25.search(q, top_k=top_n, scopes=scopes) for q in search_queries]
        timings["sparse"] = _ms(t0)
        sparse_ids = list(dict.fromkeys(i for lst in sparse_lists for i, _ in lst))
        if sparse_ids and settings.rules.hydrate_sparse_only:
            t0 = time.perf_counter()
            hits = svc.store.get_with_vectors(sparse_ids, scopes=scopes)
            timings["hydrate"] = _ms(t0)
    finally:
        dense_lists = future.result()
    return dense_lists, sparse_lists, hits


def _dense_bm25(bm25: Any, settings: RetrievalSettings, search_query: str, dense: list[ScoredMemoryTrace],
                sparse: list) -> dict[str, float]:
    """Rank completion (hybrid preset): the BM25 score of each dense hit past the sparse top-N."""
    if not (settings.rules.complete_ranks and sparse):
        return {}
    in_sparse = {i for i, _ in sparse}
    missed = [t.id for t in dense if t.id not in in_sparse]
    return {i: v for i, v in bm25.scores_for(search_query, missed).items() if v > 0}


def query_idf_of(bm25: SparseReader, query: str) -> tuple[dict[str, float], int]:
    """Each query term's idf in the BM25 version read — terms no document holds left out — and that version's
    document count; `({}, 0)` for a backend that keeps no idf (LanceDB FTS)."""
    return bm25.query_idf(query)


def _explained(bm25: SparseReader, searched: str, dense_lists: list, sparse_lists: list,
               hydrated: dict) -> tuple[FrozenDict, FrozenDict]:
    """What explanations show of BM25, read now from the version searched: every touched id's term tree and, for a
    trace whose indexed context BM25 read, the matched terms found only there."""
    traces = {t.id: t.trace for lst in dense_lists for t in lst}
    traces.update({i: t.trace for i, t in hydrated.items()})
    ids = list(dict.fromkeys([*traces, *(i for lst in sparse_lists for i, _ in lst)]))
    trees = bm25.explain_terms_for(searched, ids) if searched and ids else {}
    context = {}
    for i, tree in trees.items():
        terms = {r["term"]: float(r["score"]) for r in tree}
        only = context_only_terms(traces.get(i), terms, bm25.tokenizer)
        if only is not None:
            context[i] = only
    return (frozen({i: tuple(frozen(r) for r in tree) for i, tree in trees.items()}), frozen(context))


def _facts(svc: Services, query, scope, settings, timings, escalations):
    """Step 0: fact traces from the ORIGINAL query; only facts whose source is visible here."""
    if svc.fact_store is None:
        return [], []
    t0 = time.perf_counter()
    try:
        from retrieval.facts import fact_traces_for_query

        scopes = [scope] if scope is not None else None

        def visible(ids: list[str]) -> set[str]:
            return set(svc.store.get_with_vectors(ids, scopes=scopes)) if ids else set()

        out = fact_traces_for_query(svc.fact_store, svc.fact_classifier, query, scope,
                                    settings.rules.temporal_facts, visible=visible)
    except Exception as exc:  # a broken fact store must not take retrieval down
        escalations.append(f"{ESC_FACTS}: {short(exc)}")
        out = [], []
    timings["facts"] = _ms(t0)
    return out


def _rewrite(svc: Services, query, multi_query_n, timings, escalations) -> tuple[list[str], str | None]:
    """Step 1 (HyDE replaces the query for dense and sparse) and multi-query variants."""
    search_query, hypothesis = query, None
    if svc.hyde is not None:
        t0 = time.perf_counter()
        try:
            hypothesis = (svc.hyde.hypothesis(query) or "").strip() or None
            if hypothesis:
                search_query = hypothesis
            else:
                escalations.append(f"{ESC_HYDE}: the generator returned no text; searched the raw query")
        except Exception as exc:
            escalations.append(f"{ESC_HYDE}: {short(exc)}; searched the raw query")
        timings["hyde"] = _ms(t0)
    queries = [search_query]
    if multi_query_n > 0 and svc.multi_query_llm is not None:
        t0 = time.perf_counter()
        try:
            from retrieval.candidates import multi_query

            variants = multi_query(svc.multi_query_llm, query, n=multi_query_n, include_original=False)
            queries += [v for v in variants if v.lower() != search_query.lower()]
        except Exception as exc:
            escalations.append(f"{ESC_MULTI}: {short(exc)}; searched the original query only")
        timings["multi_query"] = _ms(t0)
    return queries, hypothesis


def _with_rerank(reranker: Reranker, record: SearchRecord, settings: RetrievalSettings, timings) -> SearchRecord:
    """Step 6's model calls, once over the whole pool: first-pass scores, then split halves."""
    pool = pool_for_rerank(record, settings.rules)
    name = getattr(reranker, "name", None)
    ids = tuple(t.id for t in pool)
    if not pool:
        return replace(record, rerank=RerankRecord(pool_ids=ids, scores=frozen(), name=name))
    t0 = time.perf_counter()
    try:
        scores = check_scores(reranker.score(record.query, [t.content for t in pool]), len(pool))
    except Exception as exc:
        timings["rerank"] = _ms(t0)
        return replace(record, rerank=RerankRecord(pool_ids=ids, error=short(exc), name=name))
    timings["rerank"] = _ms(t0)
    first_pass = frozen(dict(zip(ids, scores)))
    rr = RerankRecord(pool_ids=ids, scores=first_pass, name=name)
    if settings.split_threshold is not None:
        t0 = time.perf_counter()
        cands = split_candidates(ids, first_pass, settings.split_threshold)
        by_id = {t.id: t for t in pool}
        halves = {i: h for i in cands if (h := split_halves(by_id[i].content)) is not None}
        split_scores: dict[str, tuple[float, float]] | None = {}
        split_error: str | None = None
        if halves:
            texts = [x for h in halves.values() for x in h]
            try:
                s = check_scores(reranker.score(record.query, texts), len(texts))
                split_scores = {i: (s[2 * n], s[2 * n + 1]) for n, i in enumerate(halves)}
            except Exception as exc:
                split_scores, split_error = None, short(exc)
        rr = replace(rr, split_candidate_ids=tuple(cands), split_halves=frozen(halves),
                     split_scores=frozen(split_scores) if split_scores is not None else None, split_error=split_error)
        timings["split"] = _ms(t0)
    return replace(record, rerank=rr)


def _replace_timings(record: SearchRecord, timings: dict[str, float]) -> SearchRecord:
    return replace(record, timings_ms=frozen(timings))


def empty_record(query: str, scope, mood, escalations: list[str]) -> SearchRecord:
    return SearchRecord(query=query, search_queries=(), scope=scope, mood=mood, qvec=None, dense_lists=(),
                        sparse_lists=(), sparse_hydrated=frozen(), dense_bm25=frozen(), fact_traces=(), facts=(),
                        rerank=None, escalations=tuple(escalations), timings_ms=frozen(), over_fetch_top_k=0)


def check_scores(scores: Any, n: int) -> list[float]:
    scores = [float(s) for s in scores]
    if len(scores) != n:
        raise ValueError(f"reranker returned {len(scores)} scores for {n} texts")
    if any(not (0.0 <= s <= 1.0) for s in scores):
        raise ValueError("reranker returned a score outside [0, 1]")
    return scores


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


def short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 300 else text[:297] + "..."
