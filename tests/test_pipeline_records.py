"""The two phases: search returns a frozen record, assemble is pure, explain reads public records."""
import copy
import dataclasses
import math

import pytest

from retrieval import AGENTOS, HybridRetriever
from retrieval.pipeline.assemble import assemble, reweight
from retrieval.pipeline.records import FrozenDict
from retrieval.pipeline.search import Services, search
from retrieval.fusion import Convex
from retrieval.pipeline.settings import KNOBS, RetrievalSettings, check_knob, resolve_settings

from conftest import ROOT, U1, U2, StubReranker

QUERY = "refund invoice INV-8842"


def _record(retriever, settings, **kw):
    svc = Services(retriever.memory_store, retriever.bm25, kw.get("reranker"))
    return search(svc, QUERY, None, U1, settings, over_fetch_multiplier=3, multi_query_n=0)


@pytest.mark.parametrize("reranked", [False, True])
def test_assemble_is_pure_and_the_record_immutable(retriever, reranked):
    settings = resolve_settings("hybrid", recall_top_k=4, split_threshold=1.0 if reranked else None)
    rr = StubReranker(lambda q, t: 0.9 if "8842" in t else 0.2) if reranked else None
    record = _record(retriever, settings, reranker=rr)
    snapshot = copy.deepcopy(record)
    first, second = assemble(record, settings), assemble(record, settings)
    assert first.ids == second.ids and first.ids[:2] == ["inv", "billing"]
    assert [t.retrieval_score for t in first.traces] == [t.retrieval_score for t in second.traces]
    assert first.diagnostics.stage_ids == second.diagnostics.stage_ids
    assert first.diagnostics.fused == second.diagnostics.fused
    assert record == snapshot  # assembling twice changed nothing in the record
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.query = "other"  # type: ignore[misc]
    with pytest.raises(TypeError, match="frozen record"):
        record.sparse_hydrated["x"] = None
    with pytest.raises(TypeError):
        record.qvec[0] = 1.0  # the query vector is a tuple
    if reranked:
        assert isinstance(record.rerank.scores, FrozenDict) and first.diagnostics.stage_ids["reranked"]


def test_results_carry_data_not_the_retriever(retriever):
    res = retriever.retrieve(QUERY, scope=U1)
    fields = {f.name for f in dataclasses.fields(res.diagnostics)}
    assert "retriever" not in fields and not any(n.startswith("_") for n in fields)
    moved = reweight(res, dense_weight=1.0, sparse_weight=0.0)  # a module function: no retriever needed
    assert moved.diagnostics.settings["dense_weight"] == 1.0 and res.diagnostics.settings["dense_weight"] == 0.5
    assert set(moved.diagnostics.timings_ms) >= {"refusion", "embed", "sparse"}  # search timings kept


@pytest.mark.parametrize("name,value", [
    ("dense_weight", math.inf), ("dense_weight", math.nan), ("sparse_weight", -0.1), ("sparse_weight", 1.5),
    ("rrf_k", 0), ("rrf_k", math.inf), ("rerank_weight", 2), ("recall_top_k", -3), ("recall_top_k", 10**9),
    ("recall_top_k", 2.5), ("recall_top_k", True), ("dense_weight", "0.5"),
])
def test_every_knob_is_checked_by_one_rule(retriever, name, value):
    with pytest.raises(ValueError, match=name):
        check_knob(name, value)
    res = retriever.retrieve(QUERY, scope=U1)
    with pytest.raises(ValueError, match=name):
        reweight(res, **{name: value})
    if name != "recall_top_k":
        with pytest.raises(ValueError, match=name):
            HybridRetriever(retriever.memory_store, **{f"default_{name}" if name != "rerank_weight" else name: value})


def test_knob_table_matches_the_messages():
    for name, knob in KNOBS.items():
        with pytest.raises(ValueError, match=knob.describe().replace("+", r"\+")):
            check_knob(name, knob.hi + 1)


def test_agentos_is_always_rrf(retriever):
    assert resolve_settings(AGENTOS, overrides={"fusion": "convex"})["fusion"] == "rrf"
    with pytest.raises(ValueError, match="always RRF"):
        RetrievalSettings(preset=AGENTOS, fusion=Convex(weights=(0.7, 0.3)))
    res = retriever.retrieve(QUERY, scope=U1, preset=AGENTOS)
    with pytest.raises(ValueError, match="always RRF"):
        reweight(res, fusion="convex")


def test_convex_fusion_is_a_refusion_from_the_same_record(retriever):
    res = retriever.retrieve(QUERY, scope=U1, recall_top_k=5)
    convex = reweight(res, fusion="convex", normalization="minmax")
    assert convex.diagnostics.record is res.diagnostics.record
    fused = convex.diagnostics.fused
    top = convex.diagnostics.stage_ids["merged"][0]
    assert fused[top].score == pytest.approx(sum(fused[top].contributions))
    assert max(f.score for f in fused.values()) <= 1.0 + 1e-9  # weights 0.5 + 0.5, normalised scores <= 1
    ex = convex.diagnostics.explain(top)
    assert ex.rrf["fusion"] == "convex" and ex.rrf["normalization"] == "minmax"
    assert ex.stages["merged"] == (1, pytest.approx(fused[top].score))


def test_explain_never_shows_another_scopes_trace(retriever):
    res = retriever.retrieve(QUERY, scope=U1)
    lookup = retriever.lookup(U1)  # an id the query never touched is read through the caller's look-up
    ex = res.diagnostics.explain("other", lookup)  # u2's trace about the same invoice
    assert ex.visible is False and ex.exists is True
    assert ex.content is None and ex.scope is None and ex.dense_breakdown is None and ex.bm25_terms is None
    assert "not visible" in ex.reason and "u2" not in ex.reason and "another user's" not in ex.reason
    inactive = res.diagnostics.explain("old", lookup)
    assert inactive.visible is False and inactive.content is None and "inactive" in inactive.reason
    unscoped = retriever.retrieve(QUERY, scope=U2).diagnostics.explain("inv", retriever.lookup(U2))
    assert unscoped.visible is False and unscoped.content is None


def test_explain_unknown_id_says_it_does_not_exist(retriever):
    ex = retriever.retrieve(QUERY, scope=U1).diagnostics.explain("no-such-id", retriever.lookup(U1))
    assert ex.exists is False and ex.visible is False
    assert ex.reason.startswith("No trace with id 'no-such-id' exists")


def test_explain_a_visible_untouched_trace(retriever):
    ex = retriever.retrieve("lentil soup", scope=U1, recall_top_k=1,
                            over_fetch_multiplier=1).diagnostics.explain("hike", retriever.lookup(U1))
    assert ex.visible and ex.exists and ex.dropped_at == "dense"
    assert ex.content.startswith("We hiked") and ex.scope == "user:u1"
    assert "shares no query term" in ex.reason


def test_the_explanation_counts_the_final_list_on_screen_not_top_k(retriever):
    """A scope with fewer traces than top_k: "Rank 1 of 10" would name results that are not there."""
    res = retriever.retrieve("invoice INV-8842 refund", scope=U1, recall_top_k=50)
    final = res.diagnostics.stage_ids["final"]
    assert len(final) < 50
    assert res.diagnostics.explain(final[0]).reason.startswith(f"Rank 1 of {len(final)} with score")


def test_the_explanation_says_the_merged_rank_in_words(retriever):
    """Newcomer: "found by dense #1 and BM25 #1, convex #1" read "convex #1" as a label; it is the merged rank."""
    res = retriever.retrieve("invoice INV-8842 refund", scope=U1)
    d = res.diagnostics
    top = d.stage_ids["final"][0]
    merged = d.stage_ids["merged"].index(top) + 1
    reason = d.explain(top).reason
    assert f", #{merged} in the merged list ({d.settings.strategy.short})" in reason, reason
    assert f"{d.settings.strategy.short} #" not in reason, reason


def _reachable_kinds(obj) -> set[str]:
    """The types of every object `obj` holds, however deep (classes, modules and functions not followed)."""
    import gc
    import types

    seen, stack, kinds = set(), [obj], set()
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
            continue
        seen.add(id(o))
        kinds.add(f"{type(o).__module__}.{type(o).__qualname__}")
        stack.extend(gc.get_referents(o))
    return kinds


def test_a_result_is_plain_data_that_holds_no_store_handle(retriever, tmp_path):
    """A result pickles and deep-copies without its store, and explains every id it touched from itself alone; the
    live result keeps a look-up so that an id the caller names is explained too (SPEC §6), its copies do not."""
    import pickle

    res = retriever.retrieve(QUERY, scope=U1)
    again, copied = pickle.loads(pickle.dumps(res)), copy.deepcopy(res)
    for plain in (again, copied):
        live = [k for k in _reachable_kinds(plain) if k.startswith((
            "retrieval.store", "retrieval.bm25", "retrieval.sparse", "lancedb", "_thread", "threading"))]
        assert live == [] and plain.diagnostics.lookup is None
    assert res.diagnostics.explain("no-such-id").reason.startswith("No trace with id 'no-such-id' exists")
    assert "not read" in again.diagnostics.explain("no-such-id").reason
    assert again.ids == copied.ids == res.ids and res.ids[:2] == ["inv", "billing"]
    tree = again.diagnostics.explain("inv").bm25_tree
    assert tree == res.diagnostics.explain("inv").bm25_tree == retriever.bm25.explain_terms(QUERY, "inv")
    assert {r["term"] for r in tree if r["score"] > 0} == {"refund", "invoice", "inv", "8842"}


def test_search_asks_its_readers_only_what_their_protocols_declare():
    """No `hasattr` probing in the search phase: what it needs of the store and BM25 is on `pipeline/ports.py`."""
    phase = ["search.py", "assemble.py", "explain.py", "records.py", "browser.py", "ports.py", "factory.py"]
    probes = [f"{name}:{i}" for name in phase
              for i, line in enumerate((ROOT / "retrieval" / "pipeline" / name).read_text().splitlines(), 1)
              if "hasattr(" in line]
    probes += [f"hybrid.py:{i}" for i, line in enumerate((ROOT / "retrieval" / "hybrid.py").read_text().splitlines(), 1)
               if "hasattr(" in line]
    assert probes == []
