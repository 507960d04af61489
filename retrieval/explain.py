"""`Diagnostics.explain(id)`: why a trace landed where it did, or where and why it fell out.

Reads only what the query cached, plus — for an id the query never touched — one look-up of that
id's stored row and vector (never a search, never a model call).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .hybrid import AGENTOS, STAGES, Explanation

if TYPE_CHECKING:  # pragma: no cover
    from .hybrid import Diagnostics


def _stage(diag: "Diagnostics", stage: str, trace_id: str) -> tuple[int, float] | None:
    ids = diag.stage_ids.get(stage, [])
    if trace_id not in ids:
        return None
    return ids.index(trace_id) + 1, float(diag.stage_scores[stage].get(trace_id, 0.0))


def _list_names(cache) -> list[str]:
    nd, ns = len(cache.dense_lists), len(cache.sparse_lists)
    dense = ["dense"] + [f"dense (variant {i})" for i in range(1, nd)]
    sparse = ["sparse"] + [f"sparse (variant {i})" for i in range(1, ns)]
    return dense[:nd] + sparse[:ns]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def explain(diag: "Diagnostics", trace_id: str) -> Explanation:
    if not isinstance(trace_id, str) or not trace_id:
        raise ValueError(f"explain() needs a trace id string, got {trace_id!r}")
    cache, retriever = diag._cache, diag._retriever
    s = diag.settings
    stages = {st: _stage(diag, st, trace_id) for st in STAGES}
    ex = Explanation(trace_id=trace_id, stages=stages, dropped_at=None, reason="")
    pool_trace = diag._pool.get(trace_id)

    # Fact-graph origin.
    if cache is not None:
        for fact_trace, fact in zip(cache.fact_traces, cache.facts):
            if fact_trace.id == trace_id:
                ex.fact = {
                    "subject": fact.subject, "predicate": fact.predicate, "object": fact.object,
                    "timestamp": fact.timestamp.isoformat(), "source_trace_ids": list(fact.source_trace_ids),
                    "source_span": fact.source_span,
                }
                ex.content = fact_trace.content

    # Dense: score breakdown from the hit (or the hydrated sparse-only trace).
    dense_hit = None
    if cache is not None:
        for lst in cache.dense_lists:
            for t in lst:
                if t.id == trace_id and (dense_hit is None or t.retrieval_score > dense_hit.retrieval_score):
                    dense_hit = t
        dense_hit = dense_hit or cache.sparse_hydrated.get(trace_id)
    if dense_hit is not None:
        ex.dense_breakdown = dense_hit.score_breakdown.as_dict()
        ex.dense_similarity = dense_hit.score_breakdown.similarity
        ex.content = ex.content or dense_hit.content
        ex.scope = f"{dense_hit.trace.scope}:{dense_hit.trace.scope_id}"

    # Sparse: per-term BM25 contributions against the text actually searched.
    bm25 = getattr(retriever, "bm25", None)
    if bm25 is not None and cache is not None and cache.search_queries and trace_id in bm25:
        ex.bm25_terms = {t: float(v) for t, v in bm25.explain(cache.search_queries[0], trace_id).items()}

    fused = diag._fused.get(trace_id)
    if fused is not None and cache is not None:
        names = _list_names(cache)
        ex.rrf = {
            "score": fused.score, "k": s["rrf_k"],
            "weights": {"dense": s["dense_weight"], "sparse": s["sparse_weight"]},
            "ranks": dict(zip(names, fused.ranks)), "contributions": dict(zip(names, fused.contributions)),
            # rank completion (hybrid): which list's rank was estimated from the id's real score
            "imputed": diag._imputed.get(trace_id),
        }
    if cache is not None and cache.rerank_scores is not None and trace_id in cache.rerank_scores:
        ex.rerank_score = cache.rerank_scores[trace_id]
    ex.blend = diag._blend.get(trace_id)
    ex.split = diag._split_done.get(trace_id)
    if pool_trace is not None:
        ex.content = pool_trace.content
        ex.scope = ex.scope or f"{pool_trace.trace.scope}:{pool_trace.trace.scope_id}"

    ex.dropped_at, ex.reason = _verdict(diag, trace_id, ex)
    return ex


def _verdict(diag: "Diagnostics", trace_id: str, ex: Explanation) -> tuple[str | None, str]:
    cache, s = diag._cache, diag.settings
    top_k = s["recall_top_k"]
    st = ex.stages
    if st["final"] is not None:
        rank, score = st["final"]
        if ex.fact is not None:
            return None, (f"Rank {rank}: a fact-graph trace ({ex.fact['predicate']} from "
                          f"{', '.join(ex.fact['source_trace_ids']) or 'no source'}), injected first with score 1.0.")
        parts = []
        if st["dense"]:
            parts.append(f"dense #{st['dense'][0]}")
        if st["sparse"]:
            parts.append(f"BM25 #{st['sparse'][0]}")
        how = " and ".join(parts) or "the pool"
        tail = ""
        if ex.blend is not None:
            tail = f"; reranker scored it {_fmt(ex.rerank_score)}, blended to {_fmt(ex.blend['blended'])}"
        if ex.split and ex.split.get("replaced"):
            tail += f"; its half '{ex.split['chosen']}' beat the whole (+{_fmt(ex.split['gain'])})"
        merged = f", RRF #{st['merged'][0]}" if st["merged"] else ""
        return None, f"Rank {rank} of {top_k}: found by {how}{merged}{tail}."

    if cache is None or not cache.search_queries:
        return "dense", "The query was empty, so nothing was searched."

    if trace_id in diag._dropped_hydrate:
        sp = st["sparse"]
        where = f"BM25 #{sp[0]}" if sp else "BM25"
        if diag._dropped_hydrate[trace_id] == "preset":
            return "hydrate", (f"Only {where} found it; the {AGENTOS} preset drops sparse-only ids at "
                               "hydration. The hybrid preset keeps them.")
        return "hydrate", (f"{where} found it, but the store has no active trace with this id in the "
                           "query's scope, so it could not be hydrated.")

    in_pool = trace_id in diag._pool or st["dense"] is not None or st["merged"] is not None
    if in_pool:
        pos = st["reranked"] or st["merged"] or st["dense"]
        kth = diag.stage_ids["final"][-1] if diag.stage_ids["final"] else None
        kth_score = diag.stage_scores["final"].get(kth) if kth else None
        if trace_id in diag._cut_by_rerank:
            return "rerank", (f"It was in the top {top_k} before reranking, but the reranker scored it "
                              f"{_fmt(ex.rerank_score)} and its blended score {_fmt(ex.blend and ex.blend['blended'])} "
                              f"fell below the last kept trace ({_fmt(kth_score)}).")
        stage = "reranked" if st["reranked"] else ("merged" if st["merged"] else "dense")
        rank = pos[0] if pos else "?"
        return "truncate", (f"It ranked #{rank} in the {stage} list, below the top-{top_k} cut "
                            f"(the last kept trace scored {_fmt(kth_score)}).")

    return "dense", _why_not_found(diag, trace_id, ex)


def _why_not_found(diag: "Diagnostics", trace_id: str, ex: Explanation) -> str:
    """The id is in neither the dense nor the sparse list: say why, from its stored row."""
    cache, retriever = diag._cache, diag._retriever
    n = cache.over_fetch_top_k
    store = retriever.memory_store
    rows = store.get_with_vectors([trace_id], scopes=None, active_only=False)
    if trace_id not in rows:
        return f"No trace with id {trace_id!r} is in the store."
    trace, vec = rows[trace_id]
    ex.content = trace.content
    ex.scope = f"{trace.scope}:{trace.scope_id}"
    if cache.scope is not None and (trace.scope, trace.scope_id) != (cache.scope.scope, cache.scope.scope_id):
        return f"It belongs to scope {ex.scope}, and the query searched {cache.scope} only."
    if not trace.is_active:
        return "It is marked inactive, and inactive traces are never searched."
    parts = []
    if cache.qvec is not None:
        scored = store.score_hits({trace_id: (trace, vec)}, cache.qvec, cache.mood)[trace_id]
        ex.dense_breakdown = scored.score_breakdown.as_dict()
        ex.dense_similarity = scored.score_breakdown.similarity
        last = diag.stage_ids["dense"][-1] if diag.stage_ids["dense"] else None
        cut = diag.stage_scores["dense"].get(last) if last else None
        parts.append(f"its dense score {_fmt(scored.retrieval_score)} (cosine {_fmt(float(np.dot(vec, cache.qvec)))}) "
                     f"is below the {len(diag.stage_ids['dense'])}th dense hit ({_fmt(cut)})")
    terms = ex.bm25_terms or {}
    if terms and any(v > 0 for v in terms.values()):
        matched = ", ".join(t for t, v in terms.items() if v > 0)
        parts.append(f"it matches {matched} but its BM25 score {_fmt(sum(terms.values()))} is outside the sparse top {n}")
    else:
        parts.append("it shares no query term, so BM25 never returns it")
    return "Neither search returned it: " + "; ".join(parts) + "."
