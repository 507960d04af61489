"""Links carry the retrieval knobs as one field, `i_settings`: `RetrievalSettings`' canonical string, parsed and
validated by it; old links (one parameter per knob) are still read."""
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import RRF
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.settings import RetrievalSettings
from ui.links import FIELDS, read_link, write_link

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


def test_slider_noise_is_not_written_into_the_link():
    params = write_link("i_", PipelineConfig().with_(dense_weight=0.1 + 0.2), "q", None)
    assert "dense_weight=0.3," in params["i_settings"]


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
