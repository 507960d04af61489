"""`explain(diagnostics, id, lookup)`: why a trace landed where it did, or where and why it fell out.

Reads the public `Diagnostics` (typed `Any` here: `retrieval.pipeline.records` imports this module for
`Diagnostics.explain`, and the import graph stays acyclic) and its `SearchRecord`, which carries the BM25 term
trees of every id the query touched (read at search time): a result is plain data, never a store handle. For an id
the query never touched the caller passes `lookup` (`retrieval.pipeline.search.StoreLookup`), and explain makes one
look-up through it (the stored row and vector; never a search, never a model call); without one it says the row
was not read. It never shows the content or scope of a trace outside the query's scope or inactive. For a visitor
limited to some scopes (`sees`), an id stored in a scope they may not see and an id stored nowhere get the same
sentence.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from retrieval.pipeline.presets import AGENTOS

@dataclass(frozen=True)
class Explanation:
    """Why a trace is where it is — or why it is not in the final list."""

    trace_id: str
    stages: dict[str, tuple[int, float] | None]
    dropped_at: str | None
    reason: str
    dense_breakdown: dict[str, float] | None = None
    dense_similarity: float | None = None
    bm25_terms: dict[str, float] | None = None  # term -> its score (the sum of bm25_tree's rows per term)
    bm25_tree: list[dict[str, Any]] | None = None  # per term: tf, df, idf, doc_len, avgdl, norm, saturation, score
    dense_terms: list[dict[str, Any]] | None = None  # per cognitive term: term, weight, value, points = weight·value
    rrf: dict[str, Any] | None = None
    fact: dict[str, Any] | None = None
    rerank_score: float | None = None
    blend: dict[str, float] | None = None
    split: dict[str, Any] | None = None
    content: str | None = None
    scope: str | None = None
    exists: bool = True  # False: no trace with this id is stored
    visible: bool = True  # False: it exists, but outside the query's scope or inactive (nothing shown)
    adaptive: dict[str, Any] | None = None  # the query's adapted weights and reasons (`adaptive` on), else None
    # The context the store indexed with this trace (its thread's neighbours; `retrieval.store.context`), shown
    # apart from `content`; which index read it; the query terms BM25 matched only there, not in `content`.
    context: str | None = None
    context_sides: str | None = None
    bm25_context_terms: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def explain(diag: Any, trace_id: str, lookup: Any = None, sees: Callable[[str], bool] | None = None) -> Explanation:
    """Why `trace_id` is where it is. `sees` (a visitor limited to some scopes: does it see scope "kind:id"?)
    makes "stored in a scope it may not see" and "stored nowhere" one answer, so explaining is no existence
    oracle; None (every scope visible) tells them apart."""
    if not isinstance(trace_id, str) or not trace_id:
        raise ValueError(f"explain() needs a trace id string, got {trace_id!r}")
    rec = diag.record
    out: dict[str, Any] = {"trace_id": trace_id, "stages": {st: _stage(diag, st, trace_id) for st in diag.stage_ids}}
    if getattr(diag, "adaptive", None) is not None:
        out["adaptive"] = diag.adaptive.as_dict()
    for fact_trace, fact in zip(rec.fact_traces, rec.facts):
        if fact_trace.id == trace_id:
            out["fact"] = {"subject": fact.subject, "predicate": fact.predicate, "object": fact.object,
                           "timestamp": fact.timestamp.isoformat(), "source_trace_ids": list(fact.source_trace_ids),
                           "source_span": fact.source_span}
            out["content"] = fact_trace.content

    # Dense: score breakdown from the best hit (or the hydrated sparse-only trace).
    hits = [t for lst in rec.dense_lists for t in lst if t.id == trace_id]
    dense_hit = max(hits, key=lambda t: t.retrieval_score) if hits else rec.sparse_hydrated.get(trace_id)
    if dense_hit is not None:
        out["dense_breakdown"] = dense_hit.score_breakdown.as_dict()
        out["dense_similarity"] = dense_hit.score_breakdown.similarity
        out.setdefault("content", dense_hit.content)
        out["scope"] = f"{dense_hit.trace.scope}:{dense_hit.trace.scope_id}"

    touched = trace_id in diag.pool or any(out["stages"].values()) or trace_id in diag.dropped_at_hydrate
    if rec.search_queries and touched:
        out.update(_bm25(searched_tree(rec, trace_id)))
    if out.get("dense_breakdown") is not None:
        out["dense_terms"] = dense_terms(out["dense_breakdown"])

    if trace_id in diag.fused:
        out["rrf"] = _fusion(diag, trace_id)
    if rec.rerank is not None and rec.rerank.scores is not None and trace_id in rec.rerank.scores:
        out["rerank_score"] = rec.rerank.scores[trace_id]
    if trace_id in diag.blend:
        out["blend"] = asdict(diag.blend[trace_id])
    if trace_id in diag.splits:
        sp = diag.splits[trace_id]
        out["split"] = {"halves": list(sp.halves), "half_scores": list(sp.half_scores), "whole": sp.whole,
                        "replaced": sp.replaced, "chosen": sp.chosen, "gain": sp.gain}
    pool_trace = diag.pool.get(trace_id)
    if pool_trace is not None:
        out["content"] = pool_trace.content
        out.setdefault("scope", f"{pool_trace.trace.scope}:{pool_trace.trace.scope_id}")
    out.update(context_parts(getattr(pool_trace or dense_hit, "trace", None), rec.bm25_context_terms.get(trace_id)))

    if out["stages"]["final"] is None and not touched and rec.search_queries:
        return Explanation(dropped_at="dense", **_not_found(diag, trace_id, lookup, out, sees))
    dropped_at, reason = _verdict(diag, trace_id, out)
    return Explanation(dropped_at=dropped_at, reason=reason, **out)


def _fusion(diag: Any, trace_id: str) -> dict[str, Any]:
    """The fusion part of an explanation: the strategy (its name, settings, formula and own parameters), the
    weights used, and per list the rank and contribution (the strategy writes each list's term from these)."""
    s, fused, names = diag.settings, diag.fused[trace_id], list_names(diag.record)
    strategy = s.strategy
    own = strategy.own_knobs()
    return {
        "fusion": strategy.name, "normalization": own.get("normalization"), "params": own,
        "strategy": str(strategy), "formula": strategy.formula,
        "score": fused.score, "k": own.get("rrf_k"), "weights": dict(zip(("dense", "sparse"), diag.fusion_weights)),
        "ranks": dict(zip(names, fused.ranks)), "contributions": dict(zip(names, fused.contributions)),
        # rank completion (hybrid): which list's entry was estimated from the id's real score
        "imputed": diag.imputed.get(trace_id),
    }


def searched_tree(rec: Any, trace_id: str) -> list[dict[str, Any]] | None:
    """The id's BM25 term tree as search read it (None: not in the BM25 version searched)."""
    tree = rec.bm25_terms.get(trace_id)
    return None if tree is None else [dict(r) for r in tree]


def context_only_terms(trace: Any, terms: dict[str, float] | None, tokenize: Any) -> tuple[str, ...] | None:
    """The matched BM25 terms found only in the trace's indexed context (its own text tokenised with the index's
    analyser holds none of them); None when BM25 did not read a context."""
    if not getattr(trace, "context", None) or not terms or tokenize is None:
        return None
    if trace.context_sides not in ("bm25", "both"):
        return None
    own = set(tokenize(trace.content))
    return tuple(t for t, v in terms.items() if v > 0 and t not in own)


def context_parts(trace: Any, context_terms: tuple[str, ...] | None) -> dict[str, Any]:
    """The trace's context, which index read it, and the query terms BM25 matched only there."""
    if not getattr(trace, "context", None):
        return {}
    out: dict[str, Any] = {"context": trace.context, "context_sides": trace.context_sides}
    if context_terms is not None:
        out["bm25_context_terms"] = tuple(context_terms)
    return out


def context_sentence(ex: dict[str, Any]) -> str:
    """"; found because of the turns around it …" when the context made the match, else ""."""
    st, parts = ex["stages"], []
    if st.get("sparse") and ex.get("bm25_context_terms"):
        parts.append(f"BM25 matched {', '.join(ex['bm25_context_terms'])} only in its context")
    if st.get("dense") and ex.get("context_sides") in ("dense", "both"):
        parts.append("the dense side embedded its text together with its context")
    if not parts:
        return ""
    return "; found because of the turns around it in its conversation: " + " and ".join(parts)


def dense_terms(breakdown: dict[str, float]) -> list[dict[str, Any]]:
    """The cognitive score as weight × value per term (SPEC §2); the points sum to the dense score."""
    from retrieval.store.cognitive import DEFAULT_SCORING_WEIGHTS

    return [{"term": k, "weight": w, "value": breakdown[k], "points": w * breakdown[k]}
            for k, w in DEFAULT_SCORING_WEIGHTS.items()]


def _bm25(tree: list[dict] | None) -> dict[str, Any]:
    if tree is None:
        return {"bm25_tree": None, "bm25_terms": None}
    return {"bm25_tree": tree, "bm25_terms": {r["term"]: float(r["score"]) for r in tree}}


def _stage(diag: Any, stage: str, trace_id: str) -> tuple[int, float] | None:
    ids = diag.stage_ids.get(stage, [])
    if trace_id not in ids:
        return None
    return ids.index(trace_id) + 1, float(diag.stage_scores[stage].get(trace_id, 0.0))


def list_names(rec) -> list[str]:
    nd, ns = len(rec.dense_lists), len(rec.sparse_lists)
    return ["dense"] + [f"dense (variant {i})" for i in range(1, nd)] + \
        ["sparse"] + [f"sparse (variant {i})" for i in range(1, ns)]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _verdict(diag: Any, trace_id: str, ex: dict[str, Any]) -> tuple[str | None, str]:
    top_k = diag.settings.recall_top_k
    st = ex["stages"]
    if st["final"] is not None:
        rank = st["final"][0]
        found = [f"dense #{st['dense'][0]}"] if st["dense"] else []
        found += [f"BM25 #{st['sparse'][0]}"] if st["sparse"] else []
        how = " and ".join(found) or "the pool"
        fusion = diag.settings.strategy.short
        merged = f", #{st['merged'][0]} in the merged list ({fusion})" if st["merged"] else ""
        if ex.get("fact") is not None:
            f = ex["fact"]
            how = (f"the fact graph ({f['predicate']} from {', '.join(f['source_trace_ids']) or 'no source'}), "
                   "injected ahead of the searched traces with score 1.0")
        tail = ""
        if ex.get("blend") is not None:
            b = ex["blend"]
            tail = (f"; reranker scored it {_fmt(b['rerank'])}, and (1 − {_fmt(b['weight'])}) × {_fmt(b['base'])} + "
                    f"{_fmt(b['weight'])} × {_fmt(b['rerank'])} = {_fmt(b['blended'])}")
        if ex.get("split") and ex["split"]["replaced"]:
            sp = ex["split"]
            tail += (f"; its half '{sp['chosen']}' scored {_fmt(max(sp['half_scores']))} against the whole's "
                     f"{_fmt(sp['whole'])}, adding {_fmt(sp['gain'])}")
        shown = len(diag.stage_ids["final"])  # the list on screen, which may hold fewer than top_k
        tail += context_sentence(ex)
        return None, f"Rank {rank} of {shown} with score {_fmt(st['final'][1])}: found by {how}{merged}{tail}."

    if not diag.record.search_queries:
        return "dense", "The query was empty, so nothing was searched."

    if trace_id in diag.dropped_at_hydrate:
        where = f"BM25 #{st['sparse'][0]}" if st["sparse"] else "BM25"
        if diag.dropped_at_hydrate[trace_id] == "preset":
            return "hydrate", (f"Only {where} found it; the {AGENTOS} preset drops sparse-only ids at "
                               "hydration. The hybrid preset keeps them.")
        return "hydrate", (f"{where} found it, but the store has no active trace with this id in the "
                           "query's scope, so it could not be hydrated.")

    final = diag.stage_ids["final"]
    kth_score = diag.stage_scores["final"].get(final[-1]) if final else None
    if trace_id in diag.cut_by_rerank:
        b = ex.get("blend") or {}
        sp = ex.get("split") or {}
        score = st["reranked"][1] if st["reranked"] else b.get("blended")
        split = f" (its half added {_fmt(sp['gain'])})" if sp.get("replaced") else ""
        return "rerank", (f"It was in the top {top_k} before reranking, but the reranker scored it "
                          f"{_fmt(b.get('rerank'))} and its reranked score {_fmt(score)}{split} "
                          f"fell below the last kept trace ({_fmt(kth_score)}).")
    stage = "reranked" if st["reranked"] else ("merged" if st["merged"] else "dense")
    pos = st[stage]
    rank = pos[0] if pos else "?"
    # Compared within the list it was cut from: its score there against that list's last kept trace (the final
    # list's scores may be blended or boosted on another scale).
    kept = diag.stage_ids.get(stage, [])[:top_k]
    last = diag.stage_scores.get(stage, {}).get(kept[-1]) if kept else None
    own = f" with {stage} score {_fmt(pos[1])}" if pos else ""
    return "truncate", (f"It ranked #{rank} in the {stage} list{own}, below the top-{top_k} cut (the last kept "
                        f"trace there, #{len(kept)}, scored {_fmt(last)}).")


def hidden_reason(trace_id: str) -> str:
    """The one sentence a limited visitor gets for an id in a scope they may not see and for an unknown id."""
    return (f"Trace {trace_id!r} is not visible from this query: no trace with this id is stored in a scope you may "
            "see. Check the id (ids are case-sensitive).")


def unread_reason(trace_id: str) -> str:
    return (f"Trace {trace_id!r} is in neither list this query searched, and its stored row was not read: explain "
            "it with a store look-up (`diagnostics.explain(id, lookup=retriever.lookup(scope))`) to see why.")


def _not_found(diag: Any, trace_id: str, lookup: Any, out: dict[str, Any],
               sees: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The id is in neither list: say why from its stored row — or that it is not visible here."""
    rec = diag.record
    bare = {"trace_id": trace_id, "stages": out["stages"]}
    if lookup is None:  # the result holds no store handle: without a look-up nothing of the row is known
        return {**bare, "visible": False, "reason": unread_reason(trace_id)}
    row = lookup.row(trace_id)
    if sees is not None and (row is None or not sees(f"{row[0].scope}:{row[0].scope_id}")):
        return {**bare, "exists": False, "visible": False, "reason": hidden_reason(trace_id)}
    if row is None:
        return {**bare, "exists": False, "visible": False,
                "reason": f"No trace with id {trace_id!r} exists in this store. Check the id (ids are case-sensitive)."}
    trace, vec = row
    in_scope = rec.scope is None or (trace.scope, trace.scope_id) == (rec.scope.scope, rec.scope.scope_id)
    if not in_scope or not trace.is_active:
        # Never show another scope's (or an inactive trace's) content, scope or scores.
        why = "is outside the scope this query searched" if not in_scope else "is inactive"
        return {**bare, "visible": False,
                "reason": f"Trace {trace_id!r} is not visible from this query: it {why}, so neither search can return "
                          f"it."}
    res = dict(out, content=trace.content, scope=f"{trace.scope}:{trace.scope_id}")
    parts = []
    if rec.qvec is not None:
        scored = lookup.score(trace, vec, np.asarray(rec.qvec, dtype=np.float32), rec.mood)
        res["dense_breakdown"] = scored.score_breakdown.as_dict()
        res["dense_similarity"] = scored.score_breakdown.similarity
        res["dense_terms"] = dense_terms(res["dense_breakdown"])
        dense = diag.stage_ids["dense"]
        cut = diag.stage_scores["dense"].get(dense[-1]) if dense else None
        parts.append(f"its dense score {_fmt(scored.retrieval_score)} (cosine "
                     f"{_fmt(float(np.dot(vec, np.asarray(rec.qvec, dtype=np.float32))))}) "
                     f"is below the {len(dense)}th dense hit ({_fmt(cut)})")
    res.update(_bm25(lookup.bm25_terms(rec.searched_query, trace_id)))
    res.update(context_parts(trace, context_only_terms(trace, res["bm25_terms"], lookup.bm25.tokenizer)))
    terms = res["bm25_terms"] or {}
    if any(v > 0 for v in terms.values()):
        matched = ", ".join(t for t, v in terms.items() if v > 0)
        parts.append(f"it matches {matched} but its BM25 score {_fmt(sum(terms.values()))} is outside the sparse "
                     f"top {rec.over_fetch_top_k}")
    else:
        parts.append("it shares no query term, so BM25 never returns it")
    res["reason"] = "Neither search returned it: " + "; ".join(parts) + "."
    return res
