"""Links carry the retrieval knobs as one field, `i_settings`: `RetrievalSettings`' canonical string, parsed and
validated by it; old links (one parameter per knob) are still read."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import DBSF, RRF, Convex
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.settings import RetrievalSettings
from ui.links import FIELDS, read_link, relinked, write_link

SCOPES = ["user:maya"]


def test_a_link_holds_the_knobs_in_one_settings_field_and_reads_back():
    cfg = PipelineConfig.for_preset("hybrid", fusion="rrf", dense_weight=0.35, rrf_k=25, split_threshold=0.5,
                                    reranker="embedding", adaptive=True)
    params = write_link("i_", cfg, "where do I live?", "user:maya")
    assert params["i_settings"] == ("preset=hybrid fusion=rrf(dense_weight=0.35,sparse_weight=0.5,rrf_k=25.0) "
                                    "rerank_weight=0.3 recall_top_k=10 over_fetch_multiplier=3 split_threshold=0.5 "
                                    "adaptive=true")
    knob_fields = {"preset", "fusion", "normalization", "dense_weight", "sparse_weight", "rrf_k", "rerank_weight",
                   "recall_top_k", "over_fetch_multiplier", "split_threshold", "adaptive"}
    assert not knob_fields & {k[2:] for k in params}  # no knob travels beside the settings field
    assert {f"i_{n}" for n in set(FIELDS) - knob_fields} <= set(params) and params["i_reranker"] == "embedding"
    link = read_link(params, "i_", SCOPES)
    assert link.ignored == () and link.settings == RetrievalSettings.parse(params["i_settings"])
    assert PipelineConfig().with_(**link.config) == cfg


def test_a_link_carries_the_value_exactly_and_the_slider_keeps_float_noise_out_of_it():
    noisy = PipelineConfig().with_(dense_weight=0.1 + 0.2)  # a value is what it is: the link does not round it
    params = write_link("i_", noisy, "q", None)
    assert "dense_weight=0.30000000000000004," in params["i_settings"]
    assert read_link(params, "i_", SCOPES).settings == noisy.settings
    # the slider is where noise is made, so that is where it is removed (`Field.clean`); an off-grid value stays
    dense = FIELDS["dense_weight"]
    assert (dense.clean(0.1 + 0.2), dense.clean(0.35000000000000003), dense.clean(0.123456789)) == (0.3, 0.35,
                                                                                                  0.123456789)
    assert FIELDS["valence"].clean(-0.30000000000000004) == -0.3 and FIELDS["split_threshold"].clean(0.0) == 0.0


weight = st.floats(0.0, 1.0)
fusions = st.one_of(
    st.builds(lambda k, d, s: RRF(k=k, weights=(d, s)), st.floats(0.0, 1000.0, exclude_min=True), weight, weight),
    st.builds(lambda n, d, s: Convex(normalization=n, weights=(d, s)),
              st.sampled_from(("minmax", "theoretical", "zscore")), weight, weight),
    st.builds(lambda d, s: DBSF(weights=(d, s)), weight, weight)).filter(lambda f: f.weights != (0.0, 0.0))
values = st.builds(RetrievalSettings, preset=st.just("hybrid"), fusion=fusions,
                   rerank_weight=weight, recall_top_k=st.integers(1, 1000), over_fetch_multiplier=st.integers(1, 100),
                   split_threshold=st.one_of(st.none(), st.floats(0.0, 1.0, exclude_min=True)),
                   adaptive=st.booleans())
agentos = st.builds(RetrievalSettings, preset=st.just("agentos"),
                    fusion=fusions.filter(lambda f: f.name == "rrf"), rerank_weight=st.one_of(st.none(), weight))


@settings(max_examples=300, deadline=None)
@given(st.one_of(values, agentos))
def test_any_valid_value_travels_through_a_link_exactly(s):
    params = write_link("i_", PipelineConfig(settings=s), "q", "user:maya")
    link = read_link(params, "i_", SCOPES)
    assert link.settings == s and str(link.settings) == params["i_settings"]  # every float bit for bit
    on_sliders = [i for i in link.ignored if i.why.split(" on the slider")[0] in FIELDS]
    assert link.ignored == tuple(on_sliders)  # only a value beyond its slider's range is left to the preset
    if not link.ignored:  # what the panel's widgets are set to makes the same value again
        assert PipelineConfig().with_(**link.config).settings == s


OLD_LINKS = [  # links as earlier versions wrote them: each must still open the same setting
    ({"i_settings": "preset=hybrid fusion=rrf(dense_weight=0.35,sparse_weight=0.5,rrf_k=25.0) rerank_weight=0.3 "
                    "recall_top_k=10 over_fetch_multiplier=3 split_threshold=0.5 adaptive=true", "i_hyde": "false"},
     RetrievalSettings(fusion=RRF(k=25, weights=(0.35, 0.5)), split_threshold=0.5, adaptive=True)),
    ({"i_preset": "hybrid", "i_fusion": "convex", "i_normalization": "zscore", "i_dense_weight": "0.6",
      "i_sparse_weight": "0.4", "i_rrf_k": "60", "i_rerank_weight": "0.3", "i_top_k": "7", "i_over_fetch": "3",
      "i_split_threshold": "0", "i_adaptive": "false"},
     RetrievalSettings(fusion=Convex(normalization="zscore", weights=(0.6, 0.4)), recall_top_k=7)),
    ({"i_preset": "agentos", "i_fusion": "rrf", "i_dense_weight": "0.7", "i_sparse_weight": "0.3", "i_rrf_k": "60",
      "i_rerank_weight": "0.3", "i_recall_top_k": "10", "i_over_fetch_multiplier": "3", "i_split_threshold": "0.25"},
     RetrievalSettings(preset="agentos", fusion=RRF(k=60, weights=(0.7, 0.3)), rerank_weight=0.3,
                       split_threshold=0.25)),
]


@pytest.mark.parametrize("params, expected", OLD_LINKS)
def test_old_links_still_open_the_same_setting(params, expected):
    link = read_link(params, "i_", SCOPES)
    assert link.ignored == ()
    assert PipelineConfig().with_(**link.config).settings == expected


def test_an_old_link_with_one_field_per_knob_still_reads():
    link = read_link({"i_q": "q", "i_preset": "agentos", "i_dense_weight": "0.6", "i_rrf_k": "25",
                      "i_top_k": "7", "i_adaptive": "true"}, "i_", SCOPES)
    assert link.ignored == () and link.settings is None
    assert link.config == {"preset": "agentos", "dense_weight": 0.6, "rrf_k": 25, "recall_top_k": 7,
                           "adaptive": True}


def test_a_partial_settings_field_is_the_preset_for_the_rest_and_beats_old_fields():
    link = read_link({"i_settings": "preset=agentos recall_top_k=5", "i_dense_weight": "0.1"}, "i_", SCOPES)
    assert link.settings == RetrievalSettings(preset="agentos", recall_top_k=5)
    assert link.settings.fusion == RRF(k=60, weights=(0.7, 0.3))
    assert (link.config["dense_weight"], link.config["rrf_k"], link.config["recall_top_k"]) == (0.7, 60, 5)
    assert [(i.param, i.why) for i in link.ignored] == [("i_dense_weight", "the link's i_settings field holds "
                                                                            "this knob")]


def test_a_bad_settings_field_is_named_and_the_defaults_stay():
    link = read_link({"i_settings": "preset=agentos fusion=convex", "i_hyde": "true"}, "i_", SCOPES)
    assert link.config == {"hyde": True} and link.settings is None
    assert [(i.param, i.why) for i in link.ignored] == [
        ("i_settings", "fusion='convex': the agentos preset is always RRF; use preset='hybrid' for the others")]
    why = read_link({"i_settings": "fusion=rrf(rrf_k=0)"}, "i_", SCOPES).ignored[0].why
    assert why == "rrf_k=0.0 must be a number > 0 and <= 1000"


def test_a_valid_value_beyond_its_slider_keeps_the_rest():
    link = read_link({"i_settings": "fusion=rrf(rrf_k=500) recall_top_k=200"}, "i_", SCOPES)
    assert link.settings is not None and link.settings.fusion == RRF(k=500, weights=(0.5, 0.5))
    assert "rrf_k" not in link.config and "recall_top_k" not in link.config and link.config["fusion"] == "rrf"
    assert [(i.param, i.value, i.why) for i in link.ignored] == [
        ("i_settings", "rrf_k=500", "rrf_k on the slider: allowed: an integer from 1 to 200"),
        ("i_settings", "recall_top_k=200", "recall_top_k on the slider: allowed: an integer from 1 to 100")]


texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(["preset=", "hybrid", "agentos", "fusion=", "rrf", "convex", "dbsf", "(", ")", ",", "=",
                              " ", "rrf_k", "dense_weight", "sparse_weight", "normalization", "zscore", "0", "1",
                              "-1", "1e400", "nan", "0.5", "none", "true", "recall_top_k", "split_threshold",
                              "adaptive", "over_fetch_multiplier", "rerank_weight", "x"]),
             max_size=25).map("".join))


@settings(max_examples=400, deadline=None)
@given(texts)
def test_any_string_in_the_settings_field_is_a_value_or_a_named_error(text):
    link = read_link({"i_settings": text}, "i_", SCOPES)  # never raises
    if link.settings is None:
        assert [i.param for i in link.ignored] == ["i_settings"] and link.ignored[0].why
        assert link.config == {}
    else:
        assert link.settings == RetrievalSettings.parse(text) == RetrievalSettings.parse(str(link.settings))
        assert all(i.param == "i_settings" for i in link.ignored)
        PipelineConfig().with_(**link.config)  # what reaches the panel is a valid config


def test_a_fusion_applied_elsewhere_rewrites_the_links_settings_value():
    last = write_link("i_", PipelineConfig.for_preset("hybrid", fusion="rrf", rrf_k=60, recall_top_k=7), "q",
                      "user:maya")
    params = relinked(last, "i_", Convex(normalization="zscore").balanced(0.3))
    link = read_link(params, "i_", SCOPES)
    assert link.ignored == () and link.query == "q" and link.scope == "user:maya"
    assert link.settings == RetrievalSettings(fusion=Convex(normalization="zscore", weights=(0.3, 0.7)), recall_top_k=7)
    old = {"i_q": "q", "i_dense_weight": "0.2", "i_top_k": "5", "i_hyde": "true"}  # an old per-knob link
    params = relinked(old, "i_", RRF(k=20).balanced(0.6), preset="hybrid")
    assert set(params) == {"i_q", "i_hyde", "i_settings"}
    assert read_link(params, "i_", SCOPES).settings == RetrievalSettings(fusion=RRF(k=20, weights=(0.6, 0.4)),
                                                                         recall_top_k=5)


def test_set_sliders_moves_tune_and_inspect_and_inspects_remembered_view(monkeypatch):
    import ui.calibration as cal

    last = write_link("i_", PipelineConfig.for_preset("hybrid", recall_top_k=7), "q", "user:maya")
    state: dict = {"i_link": last}
    monkeypatch.setattr(cal.st, "session_state", state)
    cal.set_sliders(RRF(k=20).balanced(0.6))
    assert {k: state[f"{p}{k}"] for p in ("t_", "i_") for k in ("fusion", "dense_weight", "sparse_weight", "rrf_k")} \
        == {"fusion": "rrf", "dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k": 20}
    assert "i_normalization" not in state  # a knob the strategy does not use is left alone
    # Inspect restores this view on arrival: it must read the applied fusion, not the old one
    assert read_link(state["i_link"], "i_", SCOPES).settings == RetrievalSettings(fusion=RRF(k=20, weights=(0.6, 0.4)),
                                                                                 recall_top_k=7)
    cal.set_sliders(Convex().balanced(0.5), preset="hybrid")  # a calibration: the preset's other fusion knobs too
    assert (state["i_preset"], state["i_fusion"], state["i_rrf_k"], state["i_normalization"]) == ("hybrid", "convex",
                                                                                                  10, "minmax")
