"""The one settings value (`RetrievalSettings`): frozen, typed, valid by construction, one canonical string that
round-trips, accepted by `HybridRetriever(store, settings=…)`, `assemble` and the config parser."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import DBSF, RRF, Convex
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.settings import RetrievalSettings

weight = st.floats(0.0, 1.0, allow_nan=False)
fusions = st.one_of(
    st.builds(lambda k, d, s: RRF(k=k, weights=(d, s)), st.floats(0.001, 1000.0), weight, weight),
    st.builds(lambda n, d, s: Convex(normalization=n, weights=(d, s)),
              st.sampled_from(("minmax", "theoretical", "zscore")), weight, weight),
    st.builds(lambda d, s: DBSF(weights=(d, s)), weight, weight))
values = st.builds(RetrievalSettings, preset=st.just("hybrid"),
                   fusion=fusions.filter(lambda f: f.weights != (0.0, 0.0)),
                   rerank_weight=weight, recall_top_k=st.integers(1, 1000), over_fetch_multiplier=st.integers(1, 100),
                   split_threshold=st.one_of(st.none(), st.floats(0.001, 1.0)), adaptive=st.booleans())


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_canonical_string_round_trips(s):
    assert RetrievalSettings.parse(str(s)) == s
    assert str(RetrievalSettings.parse(str(s))) == str(s)


def test_canonical_form_defaults_and_partial_strings():
    s = RetrievalSettings()
    assert str(s) == ("preset=hybrid fusion=convex(dense_weight=0.5,sparse_weight=0.5,normalization=theoretical) "
                      "rerank_weight=0.3 recall_top_k=10 over_fetch_multiplier=3 split_threshold=none adaptive=false")
    assert RetrievalSettings(preset="agentos").fusion == RRF(k=60, weights=(0.7, 0.3))
    # a part left out is the preset's
    assert RetrievalSettings.parse("fusion=rrf recall_top_k=5") == RetrievalSettings(
        fusion=RRF(k=10, weights=(0.5, 0.5)), recall_top_k=5)
    assert RetrievalSettings.parse("preset=agentos").fusion == RRF(k=60, weights=(0.7, 0.3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.recall_top_k = 3  # type: ignore[misc]


@pytest.mark.parametrize("text, message", [
    ("recall_top_k=0", r"recall_top_k=0 must be an integer >= 1"),
    ("fusion=rrf(rrf_k=0)", r"rrf_k=0.0 must be a number > 0"),
    ("fusion=nope", r"fusion='nope' is unknown; use one of rrf, convex, dbsf"),
    ("fusion=convex(normalization=l2)", r"normalization='l2' is unknown"),
    ("preset=agentos fusion=convex", r"the agentos preset is always RRF"),
    ("fusion=dbsf(dense_weight=0,sparse_weight=0)", r"both 0"),
    ("top=3", r"unknown setting\(s\) top"),
    ("adaptive=yes", r"adaptive='yes' must be true or false"),
    ("recall_top_k", r"is not key=value"),
])
def test_bad_text_is_a_value_error_naming_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        RetrievalSettings.parse(text)


def test_a_strategy_is_valid_by_construction():
    with pytest.raises(ValueError, match=r"rrf_k=-1 must be a number > 0"):
        RRF(k=-1)
    with pytest.raises(ValueError, match=r"weights\[1\]=-0.5 is negative"):
        DBSF(weights=(0.5, -0.5))


def test_hybrid_retriever_takes_the_value_and_the_seed_keywords_build_the_same_one(tmp_path):
    from conftest import NOW, U1, MapEmbedder, make_trace

    from retrieval import BM25Index, HybridRetriever, MemoryStore

    texts = {"order 5512": [1.0, 0.0, 0.0, 0.0], "a parcel about order 77": [1.0, 0.2, 0.0, 0.0],
             "shipping a parcel": [1.0, 0.5, 0.0, 0.0], "Order 5512 went astray": [0.0, 0.0, 1.0, 0.0]}
    store = MemoryStore(str(tmp_path / "db"), embedder=MapEmbedder(texts), clock=lambda: NOW)
    value = RetrievalSettings(preset="agentos", fusion=RRF(k=30, weights=(0.6, 0.4)), recall_top_k=2)
    by_value = HybridRetriever(store, bm25=BM25Index(), settings=value)
    by_value.index([make_trace(f"t{i}", t) for i, t in enumerate(list(texts)[1:])])
    by_kw = HybridRetriever(store, bm25=by_value.bm25, preset="agentos", default_rrf_k=30, default_dense_weight=0.6,
                            default_sparse_weight=0.4)
    assert by_value.retrieval_settings == value
    assert by_kw.retrieval_settings == dataclasses.replace(value, recall_top_k=10)
    assert "RRF(k=30, weights=(0.6, 0.4))" in repr(by_value)
    a, b = by_value.retrieve("order 5512", scope=U1), by_kw.retrieve("order 5512", scope=U1, recall_top_k=2)
    assert a.ids == b.ids and len(a.ids) == 2 and a.diagnostics.settings == b.diagnostics.settings
    from retrieval.pipeline.assemble import assemble

    again = assemble(a.diagnostics.record, dataclasses.replace(value, fusion=RRF(k=5, weights=(0.6, 0.4))))
    assert again.diagnostics.settings.rrf_k == 5 and again.diagnostics.record is a.diagnostics.record
    with pytest.raises(ValueError, match="must be a RetrievalSettings"):
        HybridRetriever(store, settings="preset=hybrid")
    with pytest.raises(ValueError, match="give either settings= or default_rrf_k, preset, not both"):
        HybridRetriever(store, settings=value, default_rrf_k=30, preset="agentos")


def test_the_config_parser_uses_the_value():
    cfg = PipelineConfig.for_preset("hybrid", fusion="dbsf", dense_weight=0.7, sparse_weight=0.3)
    assert cfg.retrieval_settings().fusion == DBSF(weights=(0.7, 0.3))
    with pytest.raises(ValueError, match="config: dense_weight and sparse_weight are both 0"):
        PipelineConfig.for_preset("hybrid", dense_weight=0.0, sparse_weight=0.0)
    with pytest.raises(ValueError, match="both 0"):
        PipelineConfig.from_json('{"dense_weight": 0, "sparse_weight": 0}')
    s = RetrievalSettings(fusion=Convex(normalization="zscore", weights=(0.6, 0.4)))
    assert s.to_settings().strategy == s.fusion and s.to_settings().normalization == "zscore"
