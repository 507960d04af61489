"""HybridRetriever pipeline (SPEC §6): presets, stages, reweight, rerank, split, HyDE, explain."""

import pytest

from retrieval import AGENTOS, HYBRID, STAGES, BM25Index, HybridRetriever, MemoryStore, Scope
from retrieval.hybrid import ESC_EMPTY, ESC_HYDE, ESC_RERANK, ESC_SPARSE_EMPTY, ESC_SPLIT

from conftest import NOW, U1, MapEmbedder, StubReranker, make_trace

QUERY = "order 5512"
NEAR = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture
def id_world(tmp_path):
    """Eight traces close to the query in embedding space, and one far away that holds the id."""
    vectors = {QUERY: NEAR}
    traces = []
    for i, c in enumerate("abcdefgh"):
        text = f"shipping question {c} about a parcel"
        vectors[text] = [1.0, 0.05 * (i + 1), 0.0, 0.0]
        traces.append(make_trace(c, text))
    ident = "Order 5512 was delivered to the wrong address"
    vectors[ident] = [0.0, 0.0, 1.0, 0.0]
    traces.append(make_trace("id1", ident))
    store = MemoryStore(str(tmp_path / "db"), embedder=MapEmbedder(vectors), clock=lambda: NOW)
    return store, traces


def build(store, traces, **kw):
    r = HybridRetriever(store, bm25=BM25Index(), **kw)
    r.index(traces)
    return r


def test_agentos_drops_the_sparse_only_identifier_and_hybrid_surfaces_it(id_world):
    store, traces = id_world
    r = build(store, traces)
    kw = dict(scope=U1, recall_top_k=5, over_fetch_multiplier=1)
    faithful = r.retrieve(QUERY, preset=AGENTOS, **kw)   # 0.7/0.3, k=60
    improved = r.retrieve(QUERY, preset=HYBRID, fusion="rrf", dense_weight=0.5, sparse_weight=0.5, **kw)  # RRF k=10
    for res in (faithful, improved):
        assert res.diagnostics.stage_ids["dense"] == ["a", "b", "c", "d", "e"]
        assert res.diagnostics.stage_ids["sparse"] == ["id1"]
    assert faithful.diagnostics.stage_ids["merged"] == ["a", "b", "c", "d", "e", "id1"]
    assert faithful.ids == ["a", "b", "c", "d", "e"]
    ex = faithful.diagnostics.explain("id1")
    assert ex.dropped_at == "hydrate" and "agentos" in ex.reason
    # hybrid: id1 keeps its BM25 rank 1 and gets dense rank 6 from its real score (N + 1)
    assert improved.ids == ["id1", "a", "b", "c", "d"]
    assert improved.diagnostics.stage_scores["merged"]["id1"] == pytest.approx(0.5 / 16 + 0.5 / 11)
    hit = improved.traces[0]
    assert hit.score_breakdown.similarity == pytest.approx(0.0, abs=1e-6)  # its real cosine
    ex = improved.diagnostics.explain("id1")
    assert ex.dropped_at is None and ex.rrf["ranks"] == {"dense": 6, "sparse": 1} and ex.rrf["imputed"] == "dense"


def test_agentos_merged_stage_is_weighted_rrf_with_golden_scores(id_world):
    store, traces = id_world
    r = build(store, traces, preset=AGENTOS)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=2)
    merged = res.diagnostics.stage_scores["merged"]
    assert merged["a"] == pytest.approx(0.7 / 61)
    assert merged["f"] == pytest.approx(0.7 / 66)
    assert merged["id1"] == pytest.approx(0.3 / 61)
    # agentos without a reranker: merged order is final, scores are the dense cognitive scores
    assert res.ids == ["a", "b", "c"]
    assert [t.retrieval_score for t in res.traces] == [res.diagnostics.stage_scores["dense"][i] for i in "abc"]
    ex = res.diagnostics.explain("a")
    assert ex.rrf["contributions"]["dense"] == pytest.approx(0.7 / 61)
    assert ex.rrf["contributions"]["sparse"] == 0.0


def test_hybrid_final_scores_are_normalised_fused_scores(id_world):
    store, traces = id_world
    r = build(store, traces)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=2, dense_weight=0.7, sparse_weight=0.3,
                     rrf_k=60, fusion="rrf")
    top = 0.7 / 67 + 0.3 / 61  # id1: imputed dense rank 7, BM25 rank 1
    assert res.ids == ["id1", "a", "b"]
    assert [t.retrieval_score for t in res.traces] == pytest.approx([1.0, (0.7 / 61) / top, (0.7 / 62) / top])


def test_five_stage_keys_always_present_and_empty_query_is_not_an_error(retriever):
    for q in ["", "   ", None]:
        res = retriever.retrieve(q, scope=U1)
        assert res.traces == []
        assert set(res.diagnostics.stage_ids) == set(STAGES)
        assert all(v == [] for v in res.diagnostics.stage_ids.values())
        assert res.diagnostics.escalations[0].startswith(ESC_EMPTY)


def test_sparse_empty_skips_fusion_and_rerank(retriever):
    rr = StubReranker()
    retriever.reranker = rr
    res = retriever.retrieve("zzzz qqqq", scope=U1, recall_top_k=3)
    assert ESC_SPARSE_EMPTY in res.diagnostics.escalations
    assert res.diagnostics.stage_ids["merged"] == [] and res.diagnostics.stage_ids["reranked"] == []
    assert res.ids == res.diagnostics.stage_ids["dense"][:3]
    assert rr.calls == []


@pytest.mark.parametrize("preset", [AGENTOS, HYBRID])
def test_another_scope_never_appears_in_any_stage(retriever, preset):
    res = retriever.retrieve("invoice INV-8842", scope=U1, preset=preset, recall_top_k=10)
    for stage, ids in res.diagnostics.stage_ids.items():
        assert "other" not in ids and "old" not in ids, stage
    assert "inv" in res.ids
    evil = retriever.retrieve("invoice INV-8842", scope=Scope("user", "u1' OR '1'='1"))
    assert all(v == [] for k, v in evil.diagnostics.stage_ids.items())
    assert retriever.retrieve("invoice", scope=Scope("user", "unknown")).traces == []


class Counting:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if callable(attr):
            def wrapped(*a, **k):
                self.calls += 1
                return attr(*a, **k)
            return wrapped
        return attr


def test_reweight_recomputes_without_searching_or_reranking(id_world):
    store, traces = id_world
    rr = StubReranker(lambda q, t: 0.9 if "5512" in t else 0.1)
    r = build(store, traces, reranker=rr, fusion="rrf", default_dense_weight=0.5, default_sparse_weight=0.5)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=4, over_fetch_multiplier=2)
    before = (res.ids, [t.retrieval_score for t in res.traces], {k: list(v) for k,
                                                                 v in res.diagnostics.stage_ids.items()},
              dict(res.diagnostics.stage_scores["merged"]), res.diagnostics.settings)
    emb_calls, n_rerank = store.embedder.calls, len(rr.calls)
    counting_store, counting_bm25 = Counting(store), Counting(r.bm25)
    r.memory_store, r.bm25 = counting_store, counting_bm25
    moved = r.reweight(res, dense_weight=1.0, sparse_weight=0.0)
    assert (store.embedder.calls, len(rr.calls), counting_store.calls, counting_bm25.calls) == (emb_calls, n_rerank, 0,
                                                                                                0)
    assert res.ids[0] == "id1" and moved.ids[:2] == ["a", "id1"]
    assert "refusion" in moved.diagnostics.timings_ms
    r.memory_store, r.bm25 = store, counting_bm25.inner
    fresh = r.retrieve(QUERY, scope=U1, recall_top_k=4, over_fetch_multiplier=2, dense_weight=1.0, sparse_weight=0.0)
    assert fresh.ids == moved.ids
    assert [t.retrieval_score for t in fresh.traces] == pytest.approx([t.retrieval_score for t in moved.traces])
    # the earlier result is untouched (frozen stages): every list, score and setting as before
    assert (res.ids, [t.retrieval_score for t in res.traces], {k: list(v) for k,
                                                               v in res.diagnostics.stage_ids.items()},
            dict(res.diagnostics.stage_scores["merged"]), res.diagnostics.settings) == before
    assert moved.diagnostics.settings["dense_weight"] == 1.0 and before[4]["dense_weight"] == 0.5


def test_rerank_blend_golden_in_both_presets(id_world):
    store, traces = id_world
    rr = StubReranker(lambda q, t: 1.0 if "5512" in t else 0.2)
    r = build(store, traces, reranker=rr)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=1, preset=HYBRID, fusion="rrf",
                     dense_weight=0.5, sparse_weight=0.5)
    assert rr.calls[0][0] == QUERY
    s = res.diagnostics.stage_scores["reranked"]
    top = 0.5 / 14 + 0.5 / 11  # id1: imputed dense rank 4, BM25 rank 1 (k=10)
    assert s["id1"] == pytest.approx(0.7 * 1.0 + 0.3 * 1.0)
    assert s["a"] == pytest.approx(0.7 * (0.5 / 11) / top + 0.3 * 0.2)
    agent = r.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=1, preset=AGENTOS)
    dense_a = agent.diagnostics.stage_scores["dense"]["a"]
    assert agent.diagnostics.stage_scores["reranked"]["a"] == pytest.approx(0.7 * dense_a + 0.3 * 0.2)
    assert "id1" not in agent.diagnostics.stage_ids["reranked"]
    w0 = r.reweight(res, rerank_weight=0.0)
    assert w0.diagnostics.stage_scores["reranked"]["a"] == pytest.approx((0.5 / 11) / top)


def test_reranker_error_keeps_merged_order_and_is_recorded(retriever):
    retriever.reranker = StubReranker(fail=TimeoutError("rerank timed out"))
    res = retriever.retrieve("invoice INV-8842 refund", scope=U1, recall_top_k=4)
    assert any(e.startswith(f"{ESC_RERANK}: TimeoutError") for e in res.diagnostics.escalations)
    assert res.diagnostics.stage_ids["reranked"] == []
    assert res.ids == res.diagnostics.stage_ids["merged"][:4]


def test_reranker_returning_garbage_is_an_error_not_a_crash(retriever):
    retriever.reranker = StubReranker(lambda q, t: 7.0)
    res = retriever.retrieve("invoice refund", scope=U1)
    assert any("outside [0, 1]" in e for e in res.diagnostics.escalations)


LONG = ("We talked about the garden, the roses and the new fence for a long while. "
        "The lentil soup recipe needs cumin and lemon.")


def test_split_on_ambiguous_takes_the_better_half_with_the_gain(tmp_path):
    store = MemoryStore(str(tmp_path / "db"), embedder=MapEmbedder({}), clock=lambda: NOW)
    rr = StubReranker(lambda q, t: 0.9 if t.startswith("The lentil") else (0.4 if "lentil" in t else 0.1))
    r = build(store, [make_trace("long", LONG), make_trace("short", "lentil facts")], reranker=rr,
              split_ambiguous_threshold=1.0)
    res = r.retrieve("lentil soup", scope=U1)
    info = res.diagnostics.split_on_ambiguous
    assert info["threshold"] == 1.0 and info["candidate_count"] == 2
    assert info["replaced_ids"] == ["long"]
    assert len(rr.calls) == 2 and rr.calls[1][1] == [LONG[:74].strip(), LONG[74:].strip()]
    long = next(t for t in res.traces if t.id == "long")
    assert long.content == "The lentil soup recipe needs cumin and lemon."
    before = res.diagnostics.blend["long"].blended
    assert long.retrieval_score == pytest.approx(before + 0.3 * (0.9 - 0.4))
    ex = res.diagnostics.explain("long")
    assert ex.split["replaced"] and ex.split["chosen"] == "b"
    # the stored trace is untouched
    assert store.get(["long"])[0].content == LONG


def test_failing_split_call_replaces_nothing(tmp_path):
    store = MemoryStore(str(tmp_path / "db"), embedder=MapEmbedder({}), clock=lambda: NOW)
    rr = StubReranker(lambda q, t: 0.5, fail=RuntimeError("boom"), fail_on_call=2)
    r = build(store, [make_trace("long", LONG)], reranker=rr, split_ambiguous_threshold=0.5)
    res = r.retrieve("lentil soup", scope=U1)
    assert res.diagnostics.split_on_ambiguous["replaced_ids"] == []
    assert any(e.startswith(ESC_SPLIT) for e in res.diagnostics.escalations)
    assert res.traces[0].content == LONG


class StubHyde:
    def __init__(self, text=None, fail=None):
        self.text, self.fail, self.calls = text, fail, []

    def hypothesis(self, q):
        self.calls.append(q)
        if self.fail:
            raise self.fail
        return self.text


def test_hyde_replaces_the_search_query_but_not_the_rerank_query(retriever):
    rr = StubReranker()
    retriever.reranker = rr
    retriever.hyde = StubHyde("I flew to Madrid on flight TP1351 from terminal 1.")
    res = retriever.retrieve("when does my plane leave?", scope=U1)
    assert res.diagnostics.hyde.startswith("I flew to Madrid")
    assert res.diagnostics.stage_ids["sparse"][0] == "flight"  # BM25 searched the hypothesis
    assert rr.calls[0][0] == "when does my plane leave?"


@pytest.mark.parametrize("hyde", [StubHyde(""), StubHyde(fail=ConnectionError("no server"))])
def test_hyde_failure_falls_back_to_the_raw_query(retriever, hyde):
    retriever.hyde = hyde
    res = retriever.retrieve("lentil soup recipe", scope=U1)
    assert any(e.startswith(ESC_HYDE) for e in res.diagnostics.escalations)
    assert res.diagnostics.hyde is None and res.ids[0] == "recipe"


def test_multi_query_fuses_every_variant(retriever):
    class LLM:
        def generate(self, system, prompt):
            return "1. flight to Madrid\n2. lentil soup"

    retriever.multi_query_llm = LLM()
    res = retriever.retrieve("hiking with the dog", scope=U1, multi_query_n=2, recall_top_k=10)
    assert res.diagnostics.multi_query == ["flight to Madrid", "lentil soup"]
    assert {"flight", "recipe", "hike"} <= set(res.ids)
    ex = res.diagnostics.explain("recipe")
    assert set(ex.rrf["ranks"]) == {"dense", "dense (variant 1)", "dense (variant 2)",
                                    "sparse", "sparse (variant 1)", "sparse (variant 2)"}


def test_explain_why_not(retriever):
    res = retriever.retrieve("invoice INV-8842 refund", scope=U1, recall_top_k=1)
    assert res.ids == ["inv"]
    assert res.diagnostics.explain("inv").dropped_at is None
    d = res.diagnostics
    cut = d.explain(d.stage_ids["merged"][1])
    assert cut.dropped_at == "truncate" and "top-1" in cut.reason
    # the cut is read in the list it happened in: its merged score against the merged list's last kept one
    # (not the final list's, whose scores may be on another scale)
    own, last = d.stage_scores["merged"][d.stage_ids["merged"][1]], d.stage_scores["merged"]["inv"]
    assert f"with merged score {own:.4g}" in cut.reason and f"#1, scored {last:.4g}" in cut.reason, cut.reason
    lookup = retriever.lookup(U1)  # ids the query never touched: their stored rows, read by the caller
    other = res.diagnostics.explain("other", lookup)
    # another scope's trace: not visible, and nothing about it (not even its scope) is shown
    assert other.dropped_at == "dense" and "not visible" in other.reason and "u2" not in other.reason
    assert other.content is None and other.scope is None
    old = res.diagnostics.explain("old", lookup)
    assert old.dropped_at == "dense" and "inactive" in old.reason
    missing = res.diagnostics.explain("no-such-id", lookup)
    assert missing.dropped_at == "dense" and "No trace" in missing.reason
    assert all(v is None for v in missing.stages.values())


def test_explain_rerank_cut(id_world):
    store, traces = id_world
    rr = StubReranker(lambda q, t: 0.0 if "question a " in t else 1.0)
    r = build(store, traces, reranker=rr)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=1, over_fetch_multiplier=3, preset=AGENTOS)
    assert res.ids != ["a"]
    ex = res.diagnostics.explain("a")
    assert ex.dropped_at == "rerank" and ex.rerank_score == 0.0


@pytest.mark.parametrize("kw,msg", [
    (dict(preset="fast"), "preset 'fast'"),
    (dict(split_ambiguous_threshold=0), r"\(0, 1\]"),
    (dict(default_dense_weight=-1), "dense_weight"),
    (dict(default_rrf_k=0), "rrf_k"),
    (dict(rerank_weight=1.5), "rerank_weight"),
])
def test_constructor_validation(store, kw, msg):
    with pytest.raises(ValueError, match=msg):
        HybridRetriever(store, **kw)


def test_per_call_validation(retriever):
    with pytest.raises(ValueError, match="recall_top_k"):
        retriever.retrieve("x", recall_top_k=0)
    with pytest.raises(ValueError, match="sparse_weight"):
        retriever.retrieve("x", sparse_weight=-0.1)
    with pytest.raises(ValueError, match="over_fetch_multiplier"):
        retriever.retrieve("x", over_fetch_multiplier=0)


def test_huge_query_is_truncated_and_recorded(retriever):
    res = retriever.retrieve("lentil " * 2000, scope=U1)
    assert any(e.startswith("query:truncated") for e in res.diagnostics.escalations)
    assert res.ids[0] == "recipe"


def test_repr_describes_settings(retriever, store):
    assert "Convex(theoretical, weights=(0.5, 0.5))" in repr(retriever)  # the hybrid defaults
    assert "RRF(k=60, weights=(0.7, 0.3))" in repr(HybridRetriever(store, preset=AGENTOS))
    assert "RRF(k=30, weights=(0.7, 0.3))" in repr(HybridRetriever(store, default_rrf_k=30, default_dense_weight=0.7,
                                                                   default_sparse_weight=0.3, fusion="rrf"))


def test_hybrid_default_is_a_theoretically_normalised_convex_sum(id_world):
    """Golden: dense list = cognitive scores, sparse = BM25; each divided by its list's max (lower bound 0);
    0.5 × dense + 0.5 × sparse, an id missing from a list (here none: rank completion) adding its real score."""
    store, traces = id_world
    r = build(store, traces)
    res = r.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=2)
    d = res.diagnostics
    dense, sparse = dict(d.stage_scores["dense"]), dict(d.stage_scores["sparse"])
    rec = d.record
    full_dense = {**{t.id: t.retrieval_score for t in rec.sparse_hydrated.values()}, **dense}
    full_sparse = {**dict(rec.dense_bm25), **sparse}
    top_d, top_s = max(full_dense.values()), max(full_sparse.values())
    expect = {i: 0.5 * full_dense.get(i, 0) / top_d + 0.5 * full_sparse.get(i, 0) / top_s
              for i in set(full_dense) | set(full_sparse)}
    assert d.stage_scores["merged"] == pytest.approx(expect)
    assert d.stage_ids["merged"] == sorted(expect, key=lambda i: (-expect[i], i))
    assert res.ids[0] == "id1"  # the identifier only BM25 finds still wins
