"""Chart builders, table rows and link parsing: pure functions, tested without Streamlit."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from retrieval.pipeline.config import PipelineConfig
from ui import view
from ui.charts import (ORIGIN_COLORS, bm25_figure, dense_terms_figure, heatmap_figure, rank_flow_figure, short_id,
                       timings_figure)
from ui.links import read_link, store_changed, write_link

STAGE_IDS = {"dense": ["a", "b", "c", "deep"], "sparse": ["x", "a"], "merged": ["a", "x", "b", "c", "deep"],
             "reranked": [], "final": ["f1", "a", "x", "b"]}


# ------------------------------------------------------------------ rank flow
def test_rank_flow_has_a_fixed_band_colours_per_origin_and_ids_on_points():
    ids = {**STAGE_IDS, "dense": ["a", "b", "c"] + [f"d{i}" for i in range(30)] + ["deep"]}
    fig = rank_flow_figure(ids, fact_ids=["f1"], top=3)
    assert list(fig.layout.yaxis.range) == [4.6, 0.4]  # 1..3 plus one "deeper" row, best at the top
    assert list(fig.layout.yaxis.tickvals) == [1, 2, 3, 4] and fig.layout.yaxis.ticktext[-1] == "> 3"
    by_id = {tr.customdata[0]: tr for tr in fig.data}
    # every trace in any stage's top 3, nothing deeper
    assert set(by_id) == {"a", "b", "c", "x", "f1"}
    assert by_id["a"].line.color == ORIGIN_COLORS["both"] and by_id["b"].line.color == ORIGIN_COLORS["dense"]
    assert by_id["x"].line.color == ORIGIN_COLORS["sparse"] and by_id["f1"].line.color == ORIGIN_COLORS["fact"]
    # c is merged #4 (deeper than 3): drawn on the "> 3" row, its hover says the real rank
    assert list(by_id["c"].y) == [3, 4] and "rank 4" in by_id["c"].hovertemplate[1]
    assert list(by_id["a"].x) == ["Dense", "Sparse (BM25)", "Merged", "Final"] and list(by_id["a"].y) == [1, 2, 1, 2]
    assert list(by_id["a"].text) == ["", "", "", "a"]  # labelled at its last point
    assert {tr.name for tr in fig.data if tr.showlegend} == {"dense + BM25", "dense only", "BM25 only", "fact graph"}
    assert min(tr.textfont.size for tr in fig.data) >= 12


def test_rank_flow_deeper_ranks_on_request():
    fig = rank_flow_figure(STAGE_IDS, top=10)
    assert list(fig.layout.yaxis.range) == [11.6, 0.4]
    assert "deep" in {tr.customdata[0] for tr in fig.data}


# ------------------------------------------------------------------ heatmap
# Rank 10 as the newcomer saw it: lines that end at Merged and at Reranked (they left before the final list) beside
# the final #10, each labelled at rank 10 of its own column.
AT_TEN = {"dense": [f"maya-dense-note-{i}" for i in range(1, 11)], "sparse": [f"maya-sparse-{i}" for i in range(10)],
          "merged": [f"maya-merged-{i}" for i in range(1, 10)] + ["maya-promotion"],
          "reranked": [f"maya-merged-{i}" for i in range(1, 10)] + ["maya-reranked-only"],
          "final": [f"maya-merged-{i}" for i in range(1, 10)] + ["maya-northwind-interview"]}


def labels_of(fig) -> list[tuple[int, float, str, str]]:
    """(column, rank, shown text, textposition) of every label the figure draws."""
    columns = list(fig.layout.xaxis.categoryarray)
    return [(columns.index(t.x[-1]), t.y[-1], _shown(t.text[-1]), t.textposition) for t in fig.data if t.text[-1]]


def test_rank_flow_labels_at_one_rank_of_neighbouring_columns_are_not_drawn_on_one_row():
    """A label stands right of its point: at the same rank, a label of the column before runs into this one's
    (Merged's #10 into Final's #10) unless one of them is drawn above or below its point."""
    labels = labels_of(rank_flow_figure(AT_TEN, top=10))
    at_ten = sorted((c, p) for c, r, _, p in labels if r == 10)
    assert {2, 3, 4} <= {c for c, _ in at_ten}, at_ten  # Merged, Reranked and Final each label their #10
    clash = [(a, b) for a in at_ten for b in at_ten if b[0] == a[0] + 1 and a[1] == b[1] and a[1].endswith("right")]
    assert not clash, f"labels on one row run into the next column's: {clash}"


@pytest.mark.parametrize("seed", range(40))
def test_no_two_rank_flow_labels_lie_on_each_other(seed):
    """Whatever the lists, the label boxes (measured at the narrowest the chart is drawn) never overlap."""
    import random

    from ui.charts import label_box, overlaps

    rnd = random.Random(seed)
    pool = [f"{rnd.choice(['maya', 'priya', 'fact-graph:user'])}-{rnd.choice(['washer', 'promotion', 'x'])}-{n}"
            for n in range(40)]
    ids = {s: rnd.sample(pool, rnd.randint(0, 15)) for s in ("dense", "sparse", "merged", "reranked")}
    ids["final"] = rnd.sample(ids["merged"] or pool, min(10, len(ids["merged"] or pool)))
    moved = {t: rnd.choice(["new", "▲3", "▼12", ""]) for t in ids["final"]}
    for fig in (rank_flow_figure(ids, top=10, moved=moved), rank_flow_figure(AT_TEN, top=10)):
        boxes = [label_box(c, r, text, p) for c, r, text, p in labels_of(fig)]
        hits = [(a, b) for n, a in enumerate(boxes) for b in boxes[n + 1:] if overlaps(a, b)]
        assert not hits, hits


def test_heatmap_axes_are_categorical_labels_readable_and_the_best_value_visible():
    m = [[0.1, 0.2, 0.3], [0.4, 0.9, 0.5]]
    fig = heatmap_figure(m, [1, 5, 100], [0.3, 0.7], (1, 1), "RRF k", "dense weight", "nDCG@10")
    hm = fig.data[0]
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"
    assert list(hm.x) == ["1", "5", "100"] and list(hm.y) == ["0.3", "0.7"]
    assert hm.textfont.size >= 12 and fig.layout.xaxis.tickfont.size >= 12
    assert hm.text[1][1] == "★ 0.900" and hm.text[0][0] == "0.100"
    assert len(fig.data) == 1  # no marker on top of the value
    shape = fig.layout.shapes[0]
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (0.5, 1.5, 0.5, 1.5)


# ------------------------------------------------------------------ score charts
def test_dense_bars_sum_to_the_dense_score_and_show_the_weights():
    terms = [{"term": "similarity", "weight": 0.6, "value": 0.5, "points": 0.3},
             {"term": "recency", "weight": 0.4, "value": 0.25, "points": 0.1}]
    fig = dense_terms_figure(terms)
    bar = fig.data[0]
    assert math.isclose(sum(bar.x), 0.4)
    assert list(bar.y) == ["similarity (weight 0.6)", "recency (weight 0.4)"]
    assert list(bar.text) == ["0.6 × 0.500 = 0.300", "0.4 × 0.250 = 0.100"]
    assert "0.4000" in fig.layout.title.text


def test_bm25_bars_sum_to_the_bm25_score():
    tree = [{"term": "fx", "qtf": 1, "idf": 2.0, "saturation": 0.5, "score": 1.0},
            {"term": "ticket", "qtf": 2, "idf": 1.0, "saturation": 0.25, "score": 0.5},
            {"term": "status", "qtf": 1, "idf": 3.0, "saturation": 0.0, "score": 0.0}]
    fig = bm25_figure(tree)
    assert list(fig.data[0].x) == [1.0, 0.5, 0.0]
    assert list(fig.data[0].text) == ["1 × 2.000 × 0.500 = 1.000", "2 × 1.000 × 0.250 = 0.500", "0"]
    assert "1.5000" in fig.layout.title.text


def test_timings_show_every_recorded_stage_in_pipeline_order_and_skip_missing():
    t = {"refusion": 0.4, "search": 120.0, "rerank": 50.0, "embed": 20.0, "facts": 1.0, "hyde": None,
         "multi_query": 30.0, "dense": 10.0, "sparse": 5.0, "hydrate": 2.0, "split": 7.0, "assemble": 0.5,
         "scope_filter": 0.2}
    fig = timings_figure(t)
    assert list(fig.data[0].y) == ["fact graph", "multi-query", "embed query", "dense search", "BM25 search",
                                   "hydrate sparse-only", "rerank", "split halves", "assemble (fuse, blend, cut)",
                                   "re-fusion (slider move)", "scope filter"]
    assert list(fig.data[0].x) == [1.0, 30.0, 20.0, 10.0, 5.0, 2.0, 50.0, 7.0, 0.5, 0.4, 0.2]
    assert "search took 120 ms" in fig.layout.title.text


# ------------------------------------------------------------------ rows ("—", never None)
def test_clean_replaces_every_missing_value():
    out = view.clean({"a": None, "b": [1.0, float("nan"), None], "c": {"d": None}, "e": "x"})
    assert out == {"a": "—", "b": [1.0, "—", "—"], "c": {"d": "—"}, "e": "x"}
    assert "null" not in json.dumps(out).lower() and "nan" not in json.dumps(out).lower()


def test_stage_rows_name_a_completed_rank_instead_of_none():
    ex = SimpleNamespace(stages={"dense": None, "sparse": (1, 7.5), "merged": (1, 0.0909), "reranked": None,
                                 "final": (1, 1.0)},
                         rrf={"imputed": "dense", "ranks": {"dense": 31, "sparse": 1}})
    rows = view.stage_rows(ex)
    assert rows[0] == {"stage": "Dense", "rank": "—", "score": "—",
                       "note": "not returned by dense search; fusion used rank 31, estimated from its real score "
                               "(rank completion)"}
    assert rows[1] == {"stage": "Sparse (BM25)", "rank": "1", "score": "7.5", "note": ""}
    assert rows[3]["rank"] == "—" and rows[3]["note"] == "not in this list"
    assert all(v is not None and "None" not in str(v) for r in rows for v in r.values())


def test_fusion_rows_rrf_and_convex():
    rrf = {"fusion": "rrf", "k": 10, "score": 0.5 / 41 + 0.5 / 11, "weights": {"dense": 0.5, "sparse": 0.5},
           "ranks": {"dense": 31, "sparse": 1}, "contributions": {"dense": 0.5 / 41, "sparse": 0.5 / 11},
           "imputed": "dense"}
    rows = view.fusion_rows(rrf)
    assert rows[0] == {"list": "dense", "rank": "31 (completed)", "formula": "0.5 / (10 + 31)",
                       "contribution": "0.012195"}
    assert rows[1] == {"list": "sparse", "rank": "1", "formula": "0.5 / (10 + 1)", "contribution": "0.045455"}
    assert rows[2]["contribution"] == "0.05765"
    convex = {"fusion": "convex", "normalization": "minmax", "score": 0.5, "weights": {"dense": 0.7, "sparse": 0.3},
              "ranks": {"dense": 2, "sparse": None}, "contributions": {"dense": 0.35, "sparse": 0.0}, "imputed": None}
    rows = view.fusion_rows(convex)
    assert rows[0]["formula"] == "0.7 × 0.5" and rows[1] == {"list": "sparse", "rank": "—",
                                                             "formula": "not in this list: 0", "contribution": "0"}


def test_bm25_rows_add_up_and_dense_rows_total():
    tree = [{"term": "fx", "qtf": 1, "tf": 1.0, "df": 1, "idf": 5.0, "doc_len": 20.0, "avgdl": 10.0, "k1": 1.5,
             "b": 0.75, "norm": 1.75, "saturation": 0.4878, "score": 2.439},
            {"term": "ticket", "qtf": 1, "tf": 0.0, "df": 4, "idf": 3.0, "doc_len": 20.0, "avgdl": 10.0, "k1": 1.5,
             "b": 0.75, "norm": 1.75, "saturation": 0.0, "score": 0.0}]
    rows = view.bm25_rows(tree)
    assert rows[0]["term score"] == "2.439" and rows[0]["doc len / avg"] == "20 / 10"
    assert rows[-1]["term"] == "= BM25 score" and rows[-1]["term score"] == "2.439"
    assert view.bm25_params(tree) == "k1 = 1.5, b = 0.75"
    d = view.dense_rows([{"term": "similarity", "weight": 0.6, "value": 0.5, "points": 0.3},
                         {"term": "recency", "weight": 0.4, "value": 0.5, "points": 0.2}])
    assert d[-1] == {"term": "= dense score", "weight": "", "value": "", "points = weight × value": "0.5"}


def test_picked_id_from_a_row_or_a_point():
    assert view.picked_id({"selection": {"rows": [1], "columns": []}}, ["a", "b"]) == "b"
    assert view.picked_id({"selection": {"rows": [5]}}, ["a"]) is None
    assert view.picked_id({"selection": {"points": [{"customdata": ["x-1"], "x": "Final"}]}}, []) == "x-1"
    assert view.picked_id({"selection": {"points": [{"customdata": "x-2"}]}}, []) == "x-2"
    assert view.picked_id({"selection": {"rows": [], "points": []}}, ["a"]) is None
    assert view.picked_id(None, ["a"]) is None


# ------------------------------------------------------------------ links
SCOPES = ["user:maya", "user:priya"]


def test_link_round_trip_writes_every_field_including_defaults():
    cfg = PipelineConfig.for_preset("hybrid", dense_weight=0.35, reranker="embedding", split_threshold=0.5)
    params = write_link("i_", cfg, "where do I live?", "user:maya", "maya-intro", 20, 7)
    assert params["i_settings"] == ("preset=hybrid fusion=convex(dense_weight=0.35,sparse_weight=0.5,"
                                    "normalization=theoretical) rerank_weight=0.3 recall_top_k=10 "
                                    "over_fetch_multiplier=3 split_threshold=0.5 adaptive=false")
    assert params["i_hyde"] == "false" and params["i_v"] == "7" and params["i_depth"] == "20"
    assert "i_openai_base_url" not in params
    link = read_link(params, "i_", SCOPES)
    assert link.ignored == ()
    assert (link.query, link.scope, link.target, link.depth, link.version) == ("where do I live?", "user:maya",
                                                                               "maya-intro", 20, 7)
    assert PipelineConfig(openai_base_url=cfg.openai_base_url).with_(**link.config) == cfg


def test_invalid_parameters_are_named_not_dropped_silently():
    link = read_link({"i_scope": "user:nobody", "i_rrf_k": "99999", "i_reranker": "bogus", "i_hyde": "maybe",
                      "i_dense_weight": "nan", "i_openai_base_url": "http://evil", "i_speed": "3",
                      "i_recall_top_k": "7", "other": "x"}, "i_", SCOPES)
    why = {i.param: i.why for i in link.ignored}
    assert why == {"i_scope": "no such scope in this store", "i_rrf_k": "allowed: an integer from 1 to 200",
                   "i_reranker": "not one of none, embedding, cohere, cross-encoder",
                   "i_hyde": "must be true or false", "i_dense_weight": "allowed: a number from 0 to 1",
                   "i_openai_base_url": "the server URL is never read from a link (a link must not choose where a "
                                        "query, or a key, is sent)",
                   "i_speed": "unknown parameter"}
    assert link.config == {"recall_top_k": 7} and link.scope is None


def test_agentos_link_with_convex_fusion_ignores_the_fusion():
    link = read_link({"i_preset": "agentos", "i_fusion": "convex"}, "i_", SCOPES)
    assert link.config == {"preset": "agentos"}
    assert [(i.param, i.why) for i in link.ignored] == [("i_fusion", "the agentos preset is always RRF")]


def test_all_scopes_and_store_version():
    assert read_link({"i_scope": "all"}, "i_", SCOPES).scope == "(all scopes)"
    assert write_link("i_", PipelineConfig(), "q", None)["i_scope"] == "all"
    assert store_changed(None, 5) is None and store_changed(5, 5) is None
    assert store_changed(3, 5).startswith("This link was made when the store was at version 3; it is now at version 5")


@pytest.mark.parametrize("value", ["0", "201", "1.5", "x", "inf"])
def test_rrf_k_out_of_the_slider_range_is_ignored(value):
    assert read_link({"i_rrf_k": value}, "i_", SCOPES).config == {}


def test_bm25_figure_reads_lancedb_fts_rows_without_idf():
    from ui.charts import bm25_figure

    rows = [{"term": "refund", "qtf": 1, "tf": None, "df": None, "idf": None, "saturation": None, "score": 1.25,
             "backend": "lancedb-fts"}, {"term": "x", "qtf": 1, "idf": None, "saturation": None, "score": 0.0}]
    fig = bm25_figure(rows)
    assert list(fig.data[0].text) == ["1.250 (LanceDB full-text score)", "0"]


# ------------------------------------------------------------------ untrusted ids and labels in plotly
HOSTILE = "x%{customdata}<a href='http://evil'>{y}</a>&amp;"


def _shown(text: str) -> str:
    """What plotly displays: the entities it decodes (named and numeric) decoded."""
    import html

    return html.unescape(text)


def test_rank_flow_escapes_ids_in_the_hover_template_and_the_label():
    fig = rank_flow_figure({"dense": [HOSTILE, "a"], "final": [HOSTILE]}, top=3)
    tr = next(t for t in fig.data if t.customdata[0] == HOSTILE)  # click-to-explain still gets the raw id
    for template in tr.hovertemplate:
        assert "%{" not in template and "<a" not in template and "{y}" not in template
        body = template.removeprefix("<b>").split("</b>")[0]
        assert _shown(body) == HOSTILE  # shown as typed
        assert template.endswith("<extra></extra>")
    label = tr.text[-1]
    assert "<a" not in label and "%{" not in label and _shown(label) == short_id(HOSTILE)


def test_facts_and_snapshot_charts_escape_typed_text():
    from ui.charts import facts_timeline_figure, snapshot_trend_figure

    rows = [{"subject": "<b>%{x}</b>", "predicate": "lives_in", "object": "<a href='http://e'>Oslo</a>",
             "timestamp": "2024-01-01", "key": "k"}]
    tr = facts_timeline_figure(rows).data[0]
    extra = tr.hovertemplate.split("<extra>")[1]
    assert "%{" not in extra and "<b>" not in extra and _shown(extra.removesuffix("</extra>")) == "<b>%{x}</b>"
    assert "<a" not in tr.text[0] and _shown(tr.text[0]) == rows[0]["object"][:28]
    fig = snapshot_trend_figure([{"snapshot": "s1", "label": "<a href='http://e'>run</a>", "ndcg@10": 0.5}],
                                ["ndcg@10"])
    assert "<a" not in fig.data[0].x[0] and _shown(fig.data[0].x[0]) == "1. <a href='http://e'>run</a>"
