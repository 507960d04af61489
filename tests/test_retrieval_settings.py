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


@settings(max_examples=200, deadline=None)
@given(values, values)
def test_one_text_per_value(a, b):
    """Equal values print the same text (-0.0 == 0.0 reads 0.0), so the text can key a cache or a link."""
    assert (a == b) == (str(a) == str(b))


def test_a_negative_zero_prints_as_zero():
    assert str(RetrievalSettings.parse("rerank_weight=-0.0")) == str(RetrievalSettings.parse("rerank_weight=0.0"))


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
    from retrieval.pipeline.assemble import assemble, reweight

    again = assemble(a.diagnostics.record, dataclasses.replace(value, fusion=RRF(k=5, weights=(0.6, 0.4))))
    assert again.diagnostics.settings["rrf_k"] == 5 and again.diagnostics.record is a.diagnostics.record
    # the value travels as it is: into the result, through `reweight(result, settings=…)`, to the fused scores
    assert a.diagnostics.settings == value
    moved = dataclasses.replace(value, fusion=RRF(k=5, weights=(1.0, 0.0)))
    by_settings = reweight(a, settings=moved)
    assert by_settings.diagnostics.settings is moved
    assert by_settings.ids == reweight(a, rrf_k=5, dense_weight=1.0, sparse_weight=0.0).ids
    assert dict(by_settings.diagnostics.stage_scores["merged"]) == {
        f.id: f.score for f in moved.strategy.fuse(*_lists(a.diagnostics, moved.strategy))}
    with pytest.raises(ValueError, match="must be a RetrievalSettings"):
        HybridRetriever(store, settings="preset=hybrid")
    with pytest.raises(ValueError, match="give either settings= or default_rrf_k, preset, not both"):
        HybridRetriever(store, settings=value, default_rrf_k=30, preset="agentos")


def test_the_seed_adapter_takes_a_strategy_as_fusion_and_says_when_a_fusion_is_named(tmp_path):
    from retrieval import HybridRetriever, MemoryStore
    from retrieval.hybrid import SEED_FUSION_KEYWORDS, names_fusion

    store = MemoryStore(str(tmp_path / "db"))
    cal = RRF(k=20, weights=(0.3, 0.7))
    r = HybridRetriever(store, fusion=cal)
    assert r.retrieval_settings.strategy == cal and r.default_dense_weight == 0.3 and r.default_rrf_k == 20
    # a seed keyword beside the strategy changes that knob of it
    assert HybridRetriever(store, fusion=cal, default_dense_weight=0.9).retrieval_settings.strategy == \
        RRF(k=20, weights=(0.9, 0.7))
    assert HybridRetriever(store, fusion=Convex(normalization="minmax", weights=(0.2, 0.8))).defaults["fusion"] \
        == "convex"
    assert not names_fusion({"preset": "hybrid", "rerank_weight": 0.4, "fusion": None})
    for keyword in (*SEED_FUSION_KEYWORDS, "settings"):
        assert names_fusion({keyword: object()}), keyword
    with pytest.raises(ValueError, match="give either settings= or fusion, not both"):
        HybridRetriever(store, settings=RetrievalSettings(), fusion=cal)


def test_the_config_parser_uses_the_value():
    cfg = PipelineConfig.for_preset("hybrid", fusion="dbsf", dense_weight=0.7, sparse_weight=0.3)
    assert cfg.retrieval_settings().fusion == DBSF(weights=(0.7, 0.3))
    with pytest.raises(ValueError, match="config: dense_weight and sparse_weight are both 0"):
        PipelineConfig.for_preset("hybrid", dense_weight=0.0, sparse_weight=0.0)
    with pytest.raises(ValueError, match="both 0"):
        PipelineConfig.from_json('{"dense_weight": 0, "sparse_weight": 0}')
    s = RetrievalSettings(fusion=Convex(normalization="zscore", weights=(0.6, 0.4)))
    assert s.strategy == s.fusion and s["normalization"] == "zscore" and s.with_(dense_weight=0.9).strategy == \
        Convex(normalization="zscore", weights=(0.9, 0.4))


def test_a_config_file_holds_the_knobs_as_the_canonical_string_and_old_files_still_read():
    import json

    cfg = PipelineConfig.for_preset("agentos", dense_weight=0.6, sparse_weight=0.4, rrf_k=25, reranker="embedding",
                                    split_threshold=0.5, valence=-0.4)
    data = json.loads(cfg.to_json())
    assert data["settings"] == ("preset=agentos fusion=rrf(dense_weight=0.6,sparse_weight=0.4,rrf_k=25.0) "
                                "rerank_weight=0.3 recall_top_k=10 over_fetch_multiplier=3 split_threshold=0.5 "
                                "adaptive=false")
    assert not {"preset", "fusion", "dense_weight", "rrf_k", "split_threshold", "adaptive"} & set(data)
    assert (data["reranker"], data["valence"]) == ("embedding", -0.4)
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    old = {"preset": "agentos", "fusion": "rrf", "normalization": "minmax", "dense_weight": 0.6,
           "sparse_weight": 0.4, "rrf_k": 25, "reranker": "embedding", "split_threshold": 0.5, "valence": -0.4,
           "top_k": 10}  # a file (or a snapshot row) in the old shape
    assert PipelineConfig.from_json(json.dumps(old)) == cfg
    # a knob left out of the string is the preset's; a knob given twice or a bad string is named
    assert PipelineConfig.from_json('{"settings": "fusion=rrf"}').settings["rrf_k"] == 10
    with pytest.raises(ValueError, match=r"config field\(s\) dense_weight beside 'settings'"):
        PipelineConfig.from_json('{"settings": "fusion=rrf", "dense_weight": 0.2}')
    with pytest.raises(ValueError, match="config field 'settings': rrf_k=0.0 must be"):
        PipelineConfig.from_json('{"settings": "fusion=rrf(rrf_k=0)"}')


def test_a_preset_holds_its_fusion_defaults_as_strategy_values():
    from retrieval.pipeline.presets import AGENTOS_PRESET, HYBRID_PRESET

    assert HYBRID_PRESET.strategies == (Convex(normalization="theoretical", weights=(0.5, 0.5)),
                                        RRF(k=10, weights=(0.5, 0.5)))
    assert HYBRID_PRESET.defaults() == {"fusion": "convex", "dense_weight": 0.5, "sparse_weight": 0.5, "rrf_k": 10.0,
                                        "normalization": "theoretical", "rerank_weight": 0.3}
    assert AGENTOS_PRESET.defaults() == {"fusion": "rrf", "dense_weight": 0.7, "sparse_weight": 0.3, "rrf_k": 60.0,
                                         "normalization": "minmax", "rerank_weight": 0.3}
    assert RetrievalSettings().fusion == HYBRID_PRESET.strategies[0]
    assert RetrievalSettings.parse("fusion=rrf").fusion == HYBRID_PRESET.strategies[1]  # a switch finds its defaults
    with pytest.raises(ValueError, match="must be fusion strategies among its fusions"):
        dataclasses.replace(AGENTOS_PRESET, strategies=(Convex(weights=(0.5, 0.5)),))


def _lists(d, strategy):
    """The (id, score) lists and per-list weights `assemble` hands `strategy` (agentos: no rank completion)."""
    lists = [[(t.id, t.retrieval_score) for t in lst] for lst in d.record.dense_lists] + [
        list(lst) for lst in d.record.sparse_lists]
    w = strategy.weights
    return lists, [w[0]] * len(d.record.dense_lists) + [w[1]] * len(d.record.sparse_lists)


def test_a_config_holds_the_value_and_with_routes_a_knob_into_it():
    cfg = PipelineConfig.for_preset("agentos", reranker="embedding")
    assert cfg.settings == RetrievalSettings(preset="agentos") and cfg.reranker == "embedding"
    moved = cfg.with_(dense_weight=0.9, facts=False)  # a knob by its name, beside a component
    assert moved.settings.strategy == RRF(k=60, weights=(0.9, 0.3)) and moved.facts is False
    assert moved.search_key() != cfg.search_key()  # facts changed: a new search
    assert cfg.with_(dense_weight=0.9).search_key() == cfg.search_key()  # a weight only: a re-fusion
    assert cfg.with_(dense_weight=0.9).fusion_knobs()["fusion"] == RRF(k=60, weights=(0.9, 0.3))
    assert cfg.with_(split_threshold=0.5).with_(split_threshold=0).settings.split_threshold is None  # 0 = off
    with pytest.raises(ValueError, match="unknown config field"):
        cfg.with_(zoom=2)
    with pytest.raises(ValueError, match="config field 'fusion': fusion='convex': the agentos preset is always RRF"):
        cfg.with_(fusion="convex")


def test_with_takes_a_strategy_as_it_is_or_routes_a_knob_into_the_one_in_the_value():
    s = RetrievalSettings(preset="agentos")
    assert s.with_(fusion=RRF(k=5, weights=(0.2, 0.8)), recall_top_k=3) == RetrievalSettings(
        preset="agentos", fusion=RRF(k=5, weights=(0.2, 0.8)), recall_top_k=3)
    assert s.with_(fusion=RRF(k=5, weights=(0.2, 0.8)), dense_weight=0.6).strategy == RRF(k=5, weights=(0.6, 0.8))
    assert s.with_(rrf_k=30).strategy == RRF(k=30, weights=(0.7, 0.3)) and s.with_() is s
    with pytest.raises(ValueError, match="rrf_k=0 must be"):
        RetrievalSettings().with_(rrf_k=0)  # checked even though convex does not use it
    with pytest.raises(ValueError, match="unknown setting"):
        s.with_(zoom=1)
