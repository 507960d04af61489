"""`reweight` never returns a silently wrong list: both-zero weights and a recall deeper than the search are refused,
and the app's `run_config` searches again instead of re-fusing a record searched too shallow."""
from __future__ import annotations


import pytest

from retrieval import BM25Index, HybridRetriever
from retrieval.pipeline.assemble import assemble, reweight
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.factory import cache_key
from retrieval.workspace.retrievers import run_config
from retrieval.fusion import RRF
from retrieval.pipeline.settings import RetrievalSettings, resolve_settings

from conftest import U1, make_trace

QUERY = "refund invoice payment"
BOTH_ZERO = "dense_weight and sparse_weight are both 0"
TOO_SHALLOW = "shorter than asked"
TOP_K = "recall_top_k"  # a knob of the config's settings value (`PipelineConfig.with_` routes it)


def corpus():
    """40 traces of one scope that both BM25 and the hashing embedder find for QUERY, so a search for
    20 returns 20 while a search for 3 (× over-fetch 3) holds only 9 candidates per list."""
    words = ["refund", "invoice", "payment", "order", "billing", "receipt", "charge", "credit"]
    return [make_trace(f"t{i:02d}", f"{words[i % 8]} {words[(i * 3 + 1) % 8]} {words[(i * 5 + 2) % 8]} note {i}",
                       "u1", days=i % 17) for i in range(40)]


@pytest.fixture
def deep(store) -> HybridRetriever:
    r = HybridRetriever(store, bm25=BM25Index())
    r.index(corpus())
    return r


# -- 1. both fusion weights 0 ------------------------------------------------------------------------------------


def test_reweight_refuses_both_weights_zero(retriever):
    res = retriever.retrieve("refund invoice INV-8842", scope=U1)
    with pytest.raises(ValueError, match=BOTH_ZERO) as err:
        reweight(res, dense_weight=0, sparse_weight=0)
    assert "give at least one a positive weight" in str(err.value)
    with pytest.raises(ValueError, match=BOTH_ZERO):
        retriever.reweight(res, dense_weight=0.0, sparse_weight=0.0)
    # one weight at 0 is a real choice (dense only, BM25 only) and keeps working
    kept = reweight(res, dense_weight=0).diagnostics.settings
    assert kept["sparse_weight"] == res.diagnostics.settings["sparse_weight"]
    assert reweight(res, dense_weight=1.0, sparse_weight=0).ids


def test_retrieve_and_settings_refuse_both_weights_zero_the_same_way(retriever, store):
    with pytest.raises(ValueError, match=BOTH_ZERO):
        retriever.retrieve("refund invoice INV-8842", scope=U1, dense_weight=0, sparse_weight=0)
    with pytest.raises(ValueError, match=BOTH_ZERO):
        resolve_settings("agentos", overrides={"dense_weight": 0, "sparse_weight": 0.0})
    with pytest.raises(ValueError, match=BOTH_ZERO):
        HybridRetriever(store, default_dense_weight=0, default_sparse_weight=0)
    with pytest.raises(ValueError, match=BOTH_ZERO):
        RetrievalSettings(fusion=RRF(k=60, weights=(0.0, 0.0)))


# -- 2. a recall deeper than the search ----------------------------------------------------------------------------


def test_reweight_refuses_a_recall_deeper_than_the_search(deep):
    res = deep.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=3)  # 9 candidates per list
    fresh = deep.retrieve(QUERY, scope=U1, recall_top_k=20, over_fetch_multiplier=3)
    assert len(fresh.traces) == 20
    assert len(assemble(res.diagnostics.record, res.diagnostics.settings.with_(recall_top_k=20)).traces) < 20
    with pytest.raises(ValueError, match=TOO_SHALLOW) as err:
        reweight(res, recall_top_k=20)
    msg = str(err.value)
    assert "recall_top_k=20" in msg and "60" in msg and "searched for 9" in msg and "call retrieve" in msg
    with pytest.raises(ValueError, match=TOO_SHALLOW):
        deep.reweight(res, recall_top_k=20)
    with pytest.raises(ValueError, match=TOO_SHALLOW):
        reweight(res, recall_top_k=4)  # 4 × 3 = 12 > 9


def test_a_recall_within_the_searched_depth_keeps_working(deep):
    res = deep.retrieve(QUERY, scope=U1, recall_top_k=3, over_fetch_multiplier=3)
    assert reweight(res, recall_top_k=3).ids == res.ids
    two = reweight(res, recall_top_k=2, dense_weight=0.9, sparse_weight=0.1)
    assert len(two.traces) == 2
    # the depth is the record's (its multiplier), not derived from the narrower settings of a re-fusion
    assert reweight(two, recall_top_k=3).ids == reweight(res, dense_weight=0.9, sparse_weight=0.1).ids
    empty = deep.retrieve("   ", scope=U1, recall_top_k=3)  # nothing searched: a new search finds nothing either
    assert reweight(empty, recall_top_k=50).traces == []


# -- 2b. the app re-searches instead of re-fusing a shallow record ------------------------------------------------


class _Workspace:
    """What `build_retriever` reads from a workspace: a store, no fact graph, and a retriever over both."""

    def __init__(self, retriever: HybridRetriever):
        self.store, self.facts, self._bm25 = retriever.memory_store, None, retriever.bm25
        self.searches = 0

    def retriever(self, **kwargs) -> HybridRetriever:
        ws = self

        class Counting(HybridRetriever):
            def retrieve(self, *args, **kw):
                ws.searches += 1
                return super().retrieve(*args, **kw)

        return Counting(self.store, bm25=self._bm25, **kwargs)


def test_run_config_searches_again_when_the_cached_record_is_too_shallow(deep):
    ws = _Workspace(deep)
    cfg = PipelineConfig.for_preset("hybrid", facts=False, over_fetch_multiplier=3, **{TOP_K: 20})
    shallow, refused = run_config(ws, cfg.with_(**{TOP_K: 3}), QUERY, U1)
    assert not refused and len(shallow.traces) == 3 and ws.searches == 1
    # A cached result whose key matches (only re-fusion knobs differ) but that was searched for 3 × 3 candidates.
    res, refused = run_config(ws, cfg, QUERY, U1, cached=(cache_key(QUERY, U1, cfg), shallow))
    assert not refused and ws.searches == 2
    assert len(res.traces) == 20 and "refusion" not in res.diagnostics.timings_ms
    assert res.ids == deep.retrieve(QUERY, scope=U1, recall_top_k=20, over_fetch_multiplier=3).ids


def test_run_config_still_refuses_a_record_searched_deep_enough(deep):
    ws = _Workspace(deep)
    cfg = PipelineConfig.for_preset("hybrid", facts=False, over_fetch_multiplier=3, **{TOP_K: 5})
    searched, _ = run_config(ws, cfg, QUERY, U1)
    moved = cfg.with_(dense_weight=0.9, sparse_weight=0.1)
    res, refused = run_config(ws, moved, QUERY, U1, cached=(cache_key(QUERY, U1, cfg), searched))
    assert refused and ws.searches == 1 and len(res.traces) == 5
    assert res.diagnostics.settings["dense_weight"] == 0.9 and "refusion" in res.diagnostics.timings_ms
    # a cached record searched deeper than the config asks is re-fused down to the config's depth
    narrow = cfg.with_(**{TOP_K: 2})
    res, refused = run_config(ws, narrow, QUERY, U1, cached=(cache_key(QUERY, U1, narrow), searched))
    assert refused and ws.searches == 1 and len(res.traces) == 2

