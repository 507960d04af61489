"""Assemble: a pure function of a `SearchRecord` and a `RetrievalSettings` (SPEC §6 steps 4–7).

No I/O, no model call, no retriever: the same record and settings always give the same result,
which is what makes every slider move (`reweight`) instant and the five columns honest.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from retrieval.fusion import Fused, FusionStrategy, reciprocal_rank_fusion
from retrieval.pipeline.adaptive import Strengths, adapt
from retrieval.pipeline.records import (ESC_RERANK, ESC_SPARSE_EMPTY, ESC_SPLIT, STAGES, Blend, Diagnostics,
                                        RetrievalResult,
                      SearchRecord, SplitOutcome, frozen)
from retrieval.pipeline.settings import RetrievalSettings
from retrieval.types import ScoredMemoryTrace


@dataclass(frozen=True)
class Reranked:
    """Step 6's outcome: the blended (and split) order, or the pool untouched when nothing was reranked."""

    order: list[ScoredMemoryTrace]
    blend: dict[str, Blend] = field(default_factory=dict)
    splits: dict[str, SplitOutcome] = field(default_factory=dict)
    split_info: dict[str, Any] | None = None
    cut: frozenset[str] = frozenset()
    ran: bool = False  # False: no reranker, or its call failed (the merged order is kept)


def assemble(record: SearchRecord, settings: RetrievalSettings, strengths: Strengths | None = None
             ) -> RetrievalResult:
    """Fuse, hydrate, blend, split and truncate `record` under `settings`; its fusion strategy fuses. `strengths`
    are a store's learned adaptive rule strengths (None: the shipped rules), used only under `settings.adaptive`."""
    t0 = time.perf_counter()
    s = settings
    escalations = list(record.escalations)
    dense_best = best_dense(record)
    stage_ids, stage_scores = searched_stages(record, dense_best)
    facts = list(record.fact_traces)
    base: dict[str, Any] = dict(escalations=escalations, hyde=record.hypothesis,
                                multi_query=list(record.search_queries[1:]),
                                settings=s, strengths=strengths, fact_ids=[t.id for t in facts], record=record)

    def done(final: list[ScoredMemoryTrace], **kw: Any) -> RetrievalResult:
        return finish(record, t0, stage_ids, stage_scores, final, **base, **kw)

    if not record.search_queries:  # empty query: nothing was searched
        return done([])

    if not any(record.sparse_lists):
        # Step 3 escape hatch (AgentOS): no sparse hits → facts + dense, no fusion, no rerank.
        escalations.append(ESC_SPARSE_EMPTY)
        dense_seq = dense_only(record, s, dense_best)
        final = (facts + dense_seq)[: s.recall_top_k]
        return done(final, candidates_scanned=len(dense_best), pool=frozen({t.id: t for t in facts + dense_seq}))

    # Step 4: fuse every dense and sparse list (with this query's weights under `adaptive`).
    adaptive = adapt(record, s.strategy, strengths) if s.adaptive else None
    fused, imputed = fuse(record, s, adaptive.strategy if adaptive is not None else s.strategy)
    if adaptive is not None:  # a frozen value: the strategy it fused with, and why
        base["adaptive"] = adaptive
    stage_ids["merged"] = [f.id for f in fused]
    stage_scores["merged"] = {f.id: f.score for f in fused}

    # Step 5: hydrate, facts first.
    pool, dropped = hydrate(record, s, fused, dense_best)
    pool = facts + pool

    # Step 6: rerank blend + split-on-ambiguous, from cached model scores.
    rr = rerank(record, s, pool, escalations)
    if rr.ran:
        stage_ids["reranked"] = [t.id for t in rr.order]
        stage_scores["reranked"] = {t.id: t.retrieval_score for t in rr.order}

    # Step 7: truncate.
    return done(rr.order[: s.recall_top_k], candidates_scanned=len(fused), fused=frozen({f.id: f for f in fused}),
                blend=frozen(rr.blend), splits=frozen(rr.splits), dropped_at_hydrate=frozen(dropped),
                cut_by_rerank=rr.cut, imputed=frozen(imputed), pool=frozen({t.id: t for t in rr.order}),
                split_on_ambiguous=frozen(rr.split_info) if rr.split_info is not None else None)


def searched_stages(record: SearchRecord, dense_best: dict[str, ScoredMemoryTrace]
                    ) -> tuple[dict[str, list[str]], dict[str, dict[str, float]]]:
    """Every stage's ids and scores, with the two searched stages (dense, sparse) filled in."""
    dense_order = sorted(dense_best.values(), key=lambda t: (-t.retrieval_score, t.id))
    sparse_order = sorted(best_sparse(record).items(), key=lambda kv: (-kv[1], kv[0]))
    stage_ids: dict[str, list[str]] = {k: [] for k in STAGES}
    stage_scores: dict[str, dict[str, float]] = {k: {} for k in STAGES}
    stage_ids["dense"] = [t.id for t in dense_order]
    stage_scores["dense"] = {t.id: t.retrieval_score for t in dense_order}
    stage_ids["sparse"] = [i for i, _ in sparse_order]
    stage_scores["sparse"] = dict(sparse_order)
    return stage_ids, stage_scores


def finish(record: SearchRecord, t0: float, stage_ids: dict[str, list[str]],
           stage_scores: dict[str, dict[str, float]], final: list[ScoredMemoryTrace], /,
           **kw: Any) -> RetrievalResult:
    """The result: `final` as the last stage, the assembly's time added to the search's, `kw` as diagnostics."""
    stage_ids["final"] = [t.id for t in final]
    stage_scores["final"] = {t.id: t.retrieval_score for t in final}
    timings = dict(record.timings_ms)
    timings["assemble"] = round((time.perf_counter() - t0) * 1000.0, 3)
    kw.setdefault("candidates_scanned", 0)
    kw.setdefault("split_on_ambiguous", None)
    diag = Diagnostics(stage_ids=frozen(stage_ids), stage_scores=frozen({k: frozen(v) for k,
                                                                         v in stage_scores.items()}),
                       timings_ms=frozen(timings), **kw)
    return RetrievalResult(list(final), diag)


def dense_only(record: SearchRecord, s: RetrievalSettings, dense_best: dict[str, ScoredMemoryTrace]
               ) -> list[ScoredMemoryTrace]:
    """The dense hits when sparse found nothing: one list as searched, several fused by RRF."""
    if len(record.dense_lists) > 1:
        fused = reciprocal_rank_fusion([[t.id for t in lst] for lst in record.dense_lists],
                                       k=s.fusion_defaults()["rrf_k"])
        return [dense_best[f.id] for f in fused]
    return list(record.dense_lists[0]) if record.dense_lists else []


def rerank(record: SearchRecord, s: RetrievalSettings, pool: list[ScoredMemoryTrace],
           escalations: list[str]) -> Reranked:
    """Step 6 from the record's cached model scores: blend with `rerank_weight`, then split-on-ambiguous.

    A failed reranker call keeps the pool's (merged) order and says so in `escalations`.
    """
    rr = record.rerank
    if rr is not None and rr.error is not None:
        escalations.append(f"{ESC_RERANK}: {rr.error}; kept the merged order")
    if rr is None or rr.error is not None or rr.scores is None:
        return Reranked(order=pool)
    w = s.rules.rerank_weight if s.rerank_weight is None else s.rerank_weight  # set on construction
    blend = {t.id: _blend(t.retrieval_score, rr.scores.get(t.id, 0.0), w) for t in pool}
    order = ordered([replace(t, retrieval_score=blend[t.id].blended) for t in pool])
    splits: dict[str, SplitOutcome] = {}
    split_info: dict[str, Any] | None = None
    if s.split_threshold is not None:
        split_info = {"threshold": s.split_threshold, "candidate_count": len(rr.split_candidate_ids),
                      "replaced_ids": []}
        if rr.split_error is not None:
            escalations.append(f"{ESC_SPLIT}: {rr.split_error}; nothing was replaced")
        else:
            order, splits = apply_split(record, order, w)
            split_info["replaced_ids"] = [i for i, o in splits.items() if o.replaced]
    cut = frozenset({t.id for t in pool[: s.recall_top_k]} - {t.id for t in order[: s.recall_top_k]})
    return Reranked(order, blend, splits, split_info, cut, ran=True)


def best_dense(record: SearchRecord) -> dict[str, ScoredMemoryTrace]:
    """Each dense id's best-scoring hit over all query variants."""
    best: dict[str, ScoredMemoryTrace] = {}
    for lst in record.dense_lists:
        for t in lst:
            if t.id not in best or t.retrieval_score > best[t.id].retrieval_score:
                best[t.id] = t
    return best


def best_sparse(record: SearchRecord) -> dict[str, float]:
    best: dict[str, float] = {}
    for lst in record.sparse_lists:
        for i, sc in lst:
            best[i] = max(sc, best.get(i, 0.0))
    return best


def ordered(traces: list[ScoredMemoryTrace]) -> list[ScoredMemoryTrace]:
    return sorted(traces, key=lambda t: (-t.retrieval_score, t.id))


def fuse(record: SearchRecord, s: RetrievalSettings,
         strategy: FusionStrategy | None = None) -> tuple[list[Fused], dict[str, str]]:
    """Fused candidates and, under rank completion, which list each completed id's entry came from. `strategy`
    (default: the settings') fuses; under `adaptive` it is the settings' with this query's weights."""
    strategy = s.strategy if strategy is None else strategy
    dw, sw = strategy.weights
    dense = [[(t.id, t.retrieval_score) for t in lst] for lst in record.dense_lists]
    sparse = [list(lst) for lst in record.sparse_lists]
    imputed: dict[str, str] = {}
    if s.rules.complete_ranks:
        dense[0], sparse[0], imputed = complete_lists(record, dense[0], sparse[0])
    lists = dense + sparse
    weights = [dw] * len(dense) + [sw] * len(sparse)
    return strategy.fuse(lists, weights), imputed  # the registered strategy (`retrieval.fusion`) does the maths


def complete_lists(record: SearchRecord, dense: list[tuple[str, float]], sparse: list[tuple[str, float]]):
    """Give every pooled id an entry in both original-query lists (hybrid preset).

    Plain RRF gives an id the other list missed nothing from it, so with 0.7/0.3 weights a BM25
    rank-1 hit the embedding ranked 31st can never outrank dense rank 30. Here a sparse-only id
    is appended to the dense list by its real cognitive score, and a dense hit past the sparse
    top-N by its real BM25 score; ranks continue after N (an optimistic estimate of the true rank).
    """
    in_dense, in_sparse = {i for i, _ in dense}, {i for i, _ in sparse}
    extra_d = sorted(((i, t.retrieval_score) for i, t in record.sparse_hydrated.items() if i not in in_dense),
                     key=lambda x: (-x[1], x[0]))
    extra_s = sorted(((i, sc) for i, sc in record.dense_bm25.items() if i not in in_sparse), key=lambda x: (-x[1],
                                                                                                            x[0]))
    imputed = {i: "dense" for i, _ in extra_d}
    imputed.update({i: "sparse" for i, _ in extra_s})
    return dense + extra_d, sparse + extra_s, imputed


def hydrate(record: SearchRecord, s: RetrievalSettings, fused: list[Fused], dense_best: dict[str, ScoredMemoryTrace]):
    """Each fused id as a trace, in fused order; sparse-only ids per the preset. Returns (pool, dropped)."""
    top = fused[0].score if fused and fused[0].score > 0 else 1.0
    pool: list[ScoredMemoryTrace] = []
    dropped: dict[str, str] = {}
    for f in fused:
        if f.id in dense_best:
            t = dense_best[f.id]
        elif not s.rules.hydrate_sparse_only:
            dropped[f.id] = "preset"
            continue
        elif f.id in record.sparse_hydrated:
            t = record.sparse_hydrated[f.id]
        else:
            dropped[f.id] = "missing"
            continue
        if s.rules.blend_base == "fused":
            # Blend base is the fused score normalised to [0, 1]: fusion weights keep mattering
            # under a reranker. The cognitive breakdown stays attached for the explanation.
            t = replace(t, retrieval_score=f.score / top)
        pool.append(t)
    return pool, dropped


def pool_for_rerank(record: SearchRecord, preset) -> list[ScoredMemoryTrace]:
    """Facts + every hydratable candidate, in a fixed (weight-independent) order for the reranker."""
    dense = best_dense(record)
    ids = list(dense)
    if preset.hydrate_sparse_only:
        for lst in record.sparse_lists:
            ids += [i for i, _ in lst if i not in dense and i not in ids and i in record.sparse_hydrated]
    return list(record.fact_traces) + [dense[i] if i in dense else record.sparse_hydrated[i] for i in ids]


def _blend(base: float, rerank: float, w: float) -> Blend:
    return Blend(base=base, rerank=rerank, weight=w, blended=(1 - w) * base + w * rerank)


def apply_split(record: SearchRecord, order: list[ScoredMemoryTrace],
                w: float) -> tuple[list[ScoredMemoryTrace], dict[str, SplitOutcome]]:
    """SPEC §8: a candidate takes its better half (a tie favours a) only if it beats the whole."""
    rr = record.rerank
    if rr is None or not rr.split_scores:
        return order, {}
    out: list[ScoredMemoryTrace] = []
    splits: dict[str, SplitOutcome] = {}
    first_pass = rr.scores or frozen()
    for t in order:
        sc = rr.split_scores.get(t.id)
        if sc is None:
            out.append(t)
            continue
        whole = first_pass.get(t.id, 0.0)
        a, b = rr.split_halves[t.id]
        better, chosen, text = (sc[0], "a", a) if sc[0] >= sc[1] else (sc[1], "b", b)
        if better > whole:
            gain = w * (better - whole)
            splits[t.id] = SplitOutcome((a, b), tuple(sc), whole, True, chosen, gain)
            t = replace(t, trace=replace(t.trace, content=text), retrieval_score=t.retrieval_score + gain)
        else:
            splits[t.id] = SplitOutcome((a, b), tuple(sc), whole, False)
        out.append(t)
    return ordered(out), splits


def reweight(result: RetrievalResult, settings: RetrievalSettings | None = None, **knobs: Any) -> RetrievalResult:
    """Re-assemble a result's record under `settings` (the one settings value), or under the result's own settings
    with some knobs changed (the seed's keyword form, SPEC §6: `dense_weight=`, `rrf_k=`, `fusion=`, …; None keeps
    the old value). The result's learned adaptive strengths go with it.

    No embedding, search or model call happens here: it is `assemble` on the cached record, so a
    `recall_top_k` deeper than the record was searched for is refused (`check_depth`).
    """
    d = result.diagnostics
    t0 = time.perf_counter()
    base = d.settings if settings is None else settings
    settings = base.with_(**knobs)  # validated: a fusion the preset does not allow is refused here
    check_depth(d.record, settings.recall_top_k)
    out = assemble(d.record, settings, d.strengths)
    # Keep what the search cost (the record's timings) and add what this re-fusion cost.
    timings = frozen({**out.diagnostics.timings_ms, "refusion": round((time.perf_counter() - t0) * 1000.0, 3)})
    return replace(out, diagnostics=replace(out.diagnostics, timings_ms=timings))


def deep_enough(record: SearchRecord, recall_top_k: int) -> bool:
    """Whether `record` was searched deep enough to be re-fused for `recall_top_k`.

    A search for `recall_top_k` fetches `recall_top_k × over_fetch_multiplier` candidates per list; a
    record searched for fewer would give a shorter list than a new search. A record of an empty query
    searched nothing, and a new search would find nothing either.
    """
    return not record.search_queries or recall_top_k * record.over_fetch_multiplier <= record.over_fetch_top_k


def check_depth(record: SearchRecord, recall_top_k: int) -> None:
    """ValueError when `record` is too shallow to be re-fused for `recall_top_k` (see `deep_enough`)."""
    if deep_enough(record, recall_top_k):
        return
    m, depth = record.over_fetch_multiplier, record.over_fetch_top_k
    raise ValueError(f"recall_top_k={recall_top_k} needs {recall_top_k * m} candidates per list "
                     f"({recall_top_k} × over_fetch_multiplier {m}), but this result was searched for {depth}: "
                     f"re-fused, the list would be shorter than asked. Search again (call retrieve with "
                     f"recall_top_k={recall_top_k}), or re-fuse with recall_top_k <= {depth // m}")
