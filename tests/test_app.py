"""Every page in streamlit.testing AppTest, on the demo corpus with the model-free hashing embedder."""
from __future__ import annotations

import re

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apphelpers import demo_app_env, open_page, page_texts
from retrieval.fusion import STRATEGIES
from ui.glossary import explain
from ui.text import plain
from datetime import UTC


ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "app")


def page(path: str | None = None, **params) -> AppTest:
    return open_page(path, TIMEOUT, **params)


def texts(at) -> str:
    return page_texts(at)


def test_home_shows_status_and_examples(demo_env):
    at = page()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Traces"] == "294" and metrics["Scopes"] == "3" and int(metrics["Facts"]) > 20
    import json

    from retrieval.ingest.demo import TRACES

    rows = [json.loads(line) for line in TRACES.read_text().splitlines()]
    active = sum(1 for r in rows if r.get("is_active", True))
    assert int(metrics["BM25 documents"]) == active < len(rows)  # inactive traces are never searched
    assert "in step with the store" in texts(at)
    assert "context: the previous 3 turns of the same thread" in texts(at)  # recorded; a no-op without threads
    assert "where do I live now?" in texts(at)


def test_home_says_where_to_type_a_query_and_links_there(demo_env):
    """Home has no query box: its "type a query" sentence names the page and the box that do, and links there."""
    at = page()
    said = [m.value for m in at.markdown if "type a query" in m.value.lower()]
    assert said and all("**Inspect** page" in s and "**Query** box" in s for s in said), said
    links = [e.proto for e in at.get("page_link")]
    assert [p for p in links if p.page == "Inspect" and "type a query" in p.label], links
    assert not [t for t in at.text_input if t.label == "Query"]  # the box is not on Home…
    inspect = page("pages/2_Inspect.py")
    assert [t for t in inspect.text_input if t.label == "Query"]  # …it is where the sentence says


def test_home_on_an_empty_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_DB", str(tmp_path / "empty"))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = page()
    assert not at.exception and "The store is empty" in texts(at)


def test_corpus_loads_the_demo_into_an_empty_store_and_browses(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_DB", str(tmp_path / "fresh"))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = page("pages/1_Corpus.py")
    at.button(key="c_demo").click().run()
    assert not at.exception
    assert any("Stored 294 trace(s)" in s.value for s in at.success)
    at.text_input(key="c_needle").input("INV-20931").run()
    table = [d for d in at.dataframe if len(d.value) and "content" in d.value.columns][0].value
    assert "maya-inv-20931" in set(table["id"])
    assert all("20931" in c or "20931" in i for c, i in zip(table["content"], table["id"]))
    # a click on a cell reads that trace whole, and selects nothing for deletion; a ticked row box does both
    at.session_state["c_table"] = {"selection": {"rows": [], "columns": [], "cells": [[0, "content"]]}}
    at.run()
    assert f"**Trace {table['id'][0]}**" in texts(at)
    assert not [c for c in at.checkbox if c.key == "c_confirm"]
    at.session_state["c_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert f"**Trace {table['id'][0]}**" in texts(at) and [c for c in at.checkbox if c.key == "c_confirm"]


def inspect(**params) -> AppTest:
    return page("pages/2_Inspect.py", **params)


def column_ids(at, stage: str) -> list[str]:
    """A stage's ids (its top 10) as the page lists them for tests and screen readers."""
    import html
    import re

    block = next((h.value for h in at.get("html") if f"data-stage='{stage}' data-ids=" in h.value), "")
    found = re.search(rf"data-stage='{stage}' data-ids='([^']*)'", block)
    return [i for i in html.unescape(found.group(1)).split(",") if i] if found else []


def stage_table(at) -> str:
    """The aligned stage table's HTML."""
    return next(h.value for h in at.get("html") if "class='rt-stages'" in h.value)


def table_rows(at) -> dict[str, dict[str, str]]:
    """The stage table's rows: id → the text of each cell part (by, split, text, each stage's rank and score)."""
    from html.parser import HTMLParser

    rows: dict[str, dict[str, str]] = {}

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.row, self.part = None, None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "tr" and a.get("data-pick") is not None:
                self.row = rows.setdefault(a["data-pick"], {})
            elif self.row is not None and tag == "td" and a.get("data-stage"):
                self.stage = a["data-stage"]
            cls = (a.get("class") or "").split()
            for name in ("rt-by", "rt-split", "rt-text", "rt-move", "rt-rank", "rt-score"):
                if self.row is not None and name in cls:
                    self.part = name[3:] if name not in ("rt-rank", "rt-score") else f"{self.stage} {name[3:]}"

        def handle_endtag(self, tag):
            if tag in ("span", "div", "td"):
                self.part = None

        def handle_data(self, data):
            if self.row is not None and self.part is not None:
                self.row[self.part] = self.row.get(self.part, "") + data

    Rows().feed(stage_table(at))
    return rows


def test_inspect_shows_five_stages_and_an_explanation(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya")
    assert not at.exception
    import re

    table = stage_table(at)
    assert re.findall(r"data-sort-stage='(\w+)'", table) == ["dense", "sparse", "merged", "reranked", "final"]
    assert "convex, theoretical" in table and "Merged ÷ top" in table  # how Merged and Final were made
    assert column_ids(at, "sparse")[0] == "priya-lens-repair"
    assert column_ids(at, "final")[0] == "priya-lens-repair"
    rows = table_rows(at)
    assert list(rows)[0] == "priya-lens-repair"  # sorted by the final rank
    row = rows["priya-lens-repair"]
    assert row["final rank"] == "1" and row["by"] == "both" and "FX-209847" in row["text"]  # hashing: dense too
    assert "<mark>FX</mark>" in table  # query terms marked in the table
    d = at.session_state["i_result"][1].diagnostics
    assert row["sparse score"] == f"{d.stage_scores['sparse']['priya-lens-repair']:.4g}"
    rule = next(c.value for c in at.caption if "Final = Merged ÷ the top Merged score" in c.value)
    ex = d.stage_ids["final"][1]
    assert f"{d.fused[ex].score:.5g} ÷ {d.fused[d.stage_ids['merged'][0]].score:.5g}" in rule
    assert any("Rank 1 of 10" in s.value for s in at.success)  # explanation of the final #1 by default
    assert any("<mark>FX</mark>" in m.value for m in at.markdown)  # its text, query terms highlighted
    stages = next(d.value for d in at.table if list(d.value.columns) == ["stage", "rank", "score", "note"])
    assert list(stages["stage"]) == ["Dense", "Sparse (BM25)", "Merged", "Reranked", "Final"]
    assert stages["rank"].tolist()[1:] == ["1", "1", "—", "1"]
    assert not any("None" in str(v) or str(v) == "nan" for d in at.dataframe for v in d.value.to_numpy().ravel())


def test_moving_a_fusion_slider_refuses_from_cache(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya")
    before = column_ids(at, "final")
    at.slider(key="i_dense_weight").set_value(0.0)
    at.slider(key="i_sparse_weight").set_value(1.0).run()
    assert not at.exception
    assert any("Re-fused from cached stage lists" in c.value for c in at.caption)
    after = column_ids(at, "final")
    assert after != before
    sparse = column_ids(at, "sparse")
    assert after[: len(sparse)] == sparse  # dense weight 0: BM25 order decides
    from ui.stages import moves

    marks = {i: r["move"] for i, r in table_rows(at).items() if r.get("move")}
    assert marks and marks == moves(before, after)  # what moved against the previous setting, in the table
    at.text_input(key="i_typed").input(after[1]).run()  # a click (or a typed id) re-fuses nothing new
    assert not any("Re-fused from cached stage lists" in c.value for c in at.caption)
    assert {i: r["move"] for i, r in table_rows(at).items() if r.get("move")} == marks  # the marks stay


def test_typed_id_and_agentos_preset_explain_why_not(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya", i_preset="agentos")
    assert at.radio(key="i_preset").value == "agentos"
    import json

    assert json.loads(at.json[0].value)["rrf_k"] == 60  # the settings the result was made with
    columns: list[str] = []  # the stages are one HTML table: no dataframe unless an explanation is shown
    at.text_input(key="i_typed").input("maya-intro").run()
    assert not at.exception
    assert [w.value for w in at.warning if "maya-intro" in w.value] == [
        "Trace 'maya-intro' is not visible from this query: it is outside the scope this query searched, so "
        "neither search can return it."]
    assert [d.key for d in at.dataframe] == columns  # no stage table for it: nothing about it is shown
    assert not any("Maya" in m.value for m in at.markdown)
    at.text_input(key="i_typed").input("no-such-trace").run()
    assert any(w.value.startswith("No trace with id 'no-such-trace' exists in this store") for w in at.warning)
    assert not any("Dropped" in w.value for w in at.warning)
    assert [d.key for d in at.dataframe] == columns
    assert at.query_params["i_id"] == "no-such-trace"  # the explained id is part of the link


def test_fact_query_injects_the_fact_first(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya")
    assert column_ids(at, "final")[0].startswith("fact-graph:user:livesIn")
    fact = column_ids(at, "final")[0]
    assert table_rows(at)[fact]["by"] == "fact"
    assert "Fact-graph traces come first with score 1" in texts(at)


def test_selecting_cohere_without_a_key_is_a_clear_error(demo_env, monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    at = inspect(i_q="where do I live now?", i_scope="user:maya", i_reranker="cohere")
    assert not at.exception and not at.error
    warn = [w.value for w in at.warning if "cohere reranker could not be loaded" in w.value]
    assert len(warn) == 1 and "COHERE_API_KEY" in warn[0] and "Showing the lists without reranking" in warn[0]
    assert column_ids(at, "final")[0].startswith("fact-graph:user:livesIn")  # the lists it has are kept
    assert column_ids(at, "reranked") == []


def test_empty_query_and_reranker_path(demo_env):
    at = inspect(i_scope="user:maya")
    assert not at.exception and any("Type a query" in c.value for c in at.caption)
    at = inspect(i_q="who has been complaining about the driver app?", i_scope="user:maya", i_reranker="embedding",
                 i_split_threshold="1.0")
    assert not at.exception
    assert column_ids(at, "reranked")
    split = next(i.value for i in at.info if i.value.startswith("Split-on-ambiguous"))
    d = at.session_state["i_result"][1].diagnostics
    replaced = d.split_on_ambiguous["replaced_ids"]
    assert f"split {len(d.record.rerank.split_halves)} of {d.split_on_ambiguous['candidate_count']} candidates" in split
    assert f"replaced {len(replaced)} " in split and replaced
    rows = table_rows(at)
    marked = [i for i, r in rows.items() if r.get("split")]
    assert marked == [i for i in d.stage_ids["final"] if i in replaced]
    sp = d.splits[marked[0]]
    assert rows[marked[0]]["split"] == f"✂ half {sp.chosen}: {max(sp.half_scores):.3f} vs whole {sp.whole:.3f}"
    half = " ".join(d.pool[marked[0]].content.split())  # the text the final list ranks: the chosen half
    assert rows[marked[0]]["text"].strip("…") in half
    assert any(e.label.startswith(f"✂ whole text of the {len(marked)} split trace") for e in at.expander)
    assert "Final = Reranked = (1 − " in texts(at)


def test_config_json_round_trips_and_bad_files_are_named():
    from ui.state import PipelineConfig

    cfg = PipelineConfig.for_preset("agentos", reranker="embedding", split_threshold=0.5, valence=-0.4)
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match="unknown config field"):
        PipelineConfig.from_json('{"speed": 3}')
    with pytest.raises(ValueError, match="not valid JSON"):
        PipelineConfig.from_json("{")
    with pytest.raises(ValueError, match="'rrf_k': rrf_k=0 must be"):
        PipelineConfig.from_json('{"rrf_k": 0}')
    for switch in ("hyde", "facts", "adaptive"):  # a switch is JSON true or false: "false" is not on
        for bad in ('"false"', "0", "1", "null"):
            with pytest.raises(ValueError, match=f"config field '{switch}' must be true or false"):
                PipelineConfig.from_json(f'{{"{switch}": {bad}}}')


def test_compare_one_query(demo_env):
    at = page("pages/3_Compare.py")
    at.text_input(key="cmp_q").input("status of ticket FX-209847").run()
    at.selectbox(key="cmp_scope").select("user:priya").run()
    assert not at.exception
    assert {m.label for m in at.metric} >= {"Overlap", "Jaccard", "nDCG@10 (B)", "recall@10 (B)"}
    assert any(c.value.startswith("Entered B's top-k:") for c in at.caption)
    assert any("Δ rank" in d.value.columns for d in at.dataframe)


def test_compare_labelled_set(demo_env):
    at = page("pages/3_Compare.py")
    at.radio(key="cmp_mode").set_value("a labelled set").run()
    at.button(key="cmp_run").click().run()
    assert not at.exception
    assert {m.label for m in at.metric} >= {"nDCG@10 (B)", "recall@10 (B)", "MRR (B)"}
    ivs = [c.value for c in at.caption if re.match(r"Δ [+-]\d\.\d{3}, 95 % interval \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\] "
                                                   r"over \d+ queries \((above|below|includes) 0\)", c.value)]
    assert len(ivs) == 3 and all("(paired bootstrap)" in c for c in ivs)  # one interval per metric delta


def test_compare_shows_a_change_that_rounds_to_zero_as_no_change(demo_env):
    """A and B alike: every metric's change is 0, shown neutral (grey, no arrow), never "↑ +0.000" in green."""
    from streamlit.proto.Metric_pb2 import Metric as MetricProto

    def unchanged(at, labels):
        shown = {m.label: m for m in at.metric if m.label in labels}
        assert set(shown) == labels, [m.label for m in at.metric]
        for m in shown.values():
            assert (m.proto.delta, m.proto.direction, m.proto.color) == (
                "no change vs A", MetricProto.MetricDirection.NONE, MetricProto.MetricColor.GRAY), (m.label, m.proto)

    at = page("pages/3_Compare.py")
    at.radio(key="cmp_a_preset").set_value("hybrid").run()
    at.text_input(key="cmp_q").input("status of ticket FX-209847").run()
    at.selectbox(key="cmp_scope").select("user:priya").run()
    assert not at.exception
    unchanged(at, {"nDCG@10 (B)", "recall@10 (B)"})
    at.radio(key="cmp_mode").set_value("a labelled set").run()
    at.button(key="cmp_run").click().run()
    assert not at.exception
    unchanged(at, {"nDCG@10 (B)", "recall@10 (B)", "MRR (B)"})


def test_compare_grades_a_fact_row_as_its_source(demo_env):
    """The grade column credits a fact row as the metrics do (retrieval.metrics.credited): its source's grade."""
    at = page("pages/3_Compare.py")
    at.text_input(key="cmp_q").input("where do I live now?").run()
    at.selectbox(key="cmp_scope").select("user:maya").run()
    assert not at.exception
    credit = at.session_state["cmp_rb"][1].diagnostics.credit
    b = next(d.value for d in at.dataframe if "Δ rank" in d.value.columns)
    grade = dict(zip(b["id"], b["grade"]))
    from retrieval.judgments import JudgmentStore
    from retrieval.types import Scope
    from ui.grading import UNRATED, grade_word, query_grades

    qrels = query_grades(JudgmentStore(demo_env), Scope.parse("user:maya"), "where do I live now?")
    facts = [i for i in grade if i in credit]
    assert facts and qrels, (list(grade), qrels)  # the demo's fact row is in B's list, and the query is graded
    for f in facts:
        src = credit[f]
        assert grade[f] == (grade_word(int(qrels[src])) if src in qrels else UNRATED), (f, src, grade, qrels)


def test_tune_evaluates_and_sweeps(demo_env):
    at = page("pages/4_Tune.py")
    at.button(key="t_run").click().run(timeout=180)
    assert not at.exception
    assert any("Best of the search" in m.value and "chosen on the tune half" in m.value for m in at.markdown)
    assert any("wins" in c.value and "losses" in c.value for c in at.caption)
    stages = [d.value for d in at.dataframe if "stage" in d.value.columns][0]
    assert list(stages["stage"]) == ["dense", "sparse", "merged", "final"]
    out = at.session_state["t_out"]  # a retrieval.eval.sessions.TuneResult
    rows, note, n = out.stages, out.note, len(out.deltas)
    merged = next(r for r in rows if r["stage"] == "merged")
    # the per-stage count is explained: fewer merged queries than the set holds says why (sparse-empty)
    assert (f"merged ran for {merged['queries']} of {n}" in note) == (merged["queries"] < n)
    assert any(plain(note) in c.value for c in at.caption)


def test_facts_page_and_last_injected(demo_env):
    at = inspect(i_q="where did I live first?", i_scope="user:maya")
    at.switch_page("pages/5_Facts.py").run()
    assert not at.exception
    at.selectbox(key="f_scope").select("user:maya").run()
    table = [d.value for d in at.dataframe if "predicate" in d.value.columns][0]
    assert {"Lisbon", "Porto", "Berlin"} <= set(table[table["predicate"] == "livesIn"]["object"])
    assert table["injected"].sum() == 3
    assert "where did I live first?" in texts(at)


def test_switching_preset_loads_its_fusion_defaults(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya")
    assert (at.slider(key="i_dense_weight").value, at.radio(key="i_fusion").value) == (0.5, "convex")
    at.radio(key="i_preset").set_value("agentos").run()
    assert not at.exception
    assert (at.slider(key="i_dense_weight").value, at.slider(key="i_sparse_weight").value,
            at.slider(key="i_rrf_k").value) == (0.7, 0.3, 60)
    at.slider(key="i_rrf_k").set_value(30).run()
    at.button(key="i_reset_fusion").click().run()
    assert at.slider(key="i_rrf_k").value == 60


def test_cohere_reranker_through_the_page_and_a_wrong_key(demo_env, monkeypatch):
    from fake_llm_server import FakeServer

    with FakeServer() as server:
        monkeypatch.setenv("COHERE_API_KEY", "sk-page-test-123456")
        monkeypatch.setenv("COHERE_BASE_URL", server.url)
        from ui.cache import get_reranker

        get_reranker.clear()
        at = inspect(i_q="where do I live now?", i_scope="user:maya", i_reranker="cohere")
        assert not at.exception and column_ids(at, "reranked")
        assert server.requests[-1]["path"] == "/v2/rerank"
        server.mode = "401"
        at = inspect(i_q="what's my dog called?", i_scope="user:maya", i_reranker="cohere")
        warn = " ".join(w.value for w in at.warning)
        assert "The reranker failed, so nothing was reranked" in warn and "reranker:error" not in warn
        small = " ".join(c.value for c in at.caption)
        assert "code `reranker:error`" in small and "wrong or expired" in small and "sk-page-test" not in small
        assert column_ids(at, "final")  # the merged order is kept, the page stays usable
        get_reranker.clear()


def test_a_link_carries_every_setting_and_round_trips(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya", i_dense_weight="0.3", i_fusion="rrf")
    qp = dict(at.query_params)
    from retrieval.pipeline.settings import SETTINGS_KNOBS
    from retrieval.workspace.core import Workspace
    from ui.links import FIELDS

    # every field, defaults included, the knobs as the one settings string, plus the store version; never the
    # server URL
    assert {f"i_{n}" for n in FIELDS if n not in SETTINGS_KNOBS} | {"i_q", "i_scope", "i_depth", "i_v",
                                                                     "i_settings"} <= set(qp)
    assert qp["i_settings"].startswith("preset=hybrid fusion=rrf(dense_weight=0.3,sparse_weight=0.5,rrf_k=10.0) ")
    assert qp["i_v"] == str(Workspace(demo_env).store.version()) and "i_openai_base_url" not in qp
    at.slider(key="i_rrf_k").set_value(25).run()
    assert "rrf_k=25.0)" in at.query_params["i_settings"]
    again = inspect(**dict(at.query_params))  # the copied link, opened in a new session
    assert again.slider(key="i_rrf_k").value == 25 and again.slider(key="i_dense_weight").value == 0.3
    assert column_ids(again, "final") == column_ids(at, "final")
    assert not [w for w in again.warning if "link" in w.value.lower()]


def test_invalid_link_parameters_and_a_changed_store_are_named(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:nobody", i_rrf_k="99999", i_reranker="bogus",
                 i_v="0", i_fusion="rrf")
    assert not at.exception
    warn = [w.value for w in at.warning]
    ignored = next(w for w in warn if w.startswith("Ignored link parameter"))
    assert "`i_scope=user:nobody` (no such scope in this store)" in ignored
    assert "`i_rrf_k=99999` (allowed: an integer from 1 to 200)" in ignored
    assert "`i_reranker=bogus` (not one of none, embedding, cohere, cross-encoder)" in ignored
    assert any(w.startswith("This link was made when the store was at version 0") for w in warn)
    assert at.slider(key="i_rrf_k").value == 10 and at.selectbox(key="i_reranker").value == "none"
    at.slider(key="i_rrf_k").set_value(20).run()  # once the view changes, the link's notes go
    assert not any(w.value.startswith("Ignored link") for w in at.warning)


def test_escalation_is_a_sentence_with_the_code_in_small_print(demo_env):
    at = inspect(i_q="!!!???", i_scope="user:maya")
    assert not at.exception
    assert any(w.value.startswith("No query word matched any trace in BM25") for w in at.warning)
    assert any(c.value == "code `hybrid-retriever:sparse-empty`" for c in at.caption)
    assert column_ids(at, "final") == column_ids(at, "dense")[:10]


def test_switching_fusion_is_a_refusion(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya")
    merged = "data-sort-stage='merged' title='Sort by Merged rank'>Merged<span class='rt-note'>{}</span>"
    assert merged.format("convex, theoretical") in stage_table(at)  # the hybrid default
    at.radio(key="i_fusion").set_value("rrf").run()
    assert not at.exception
    assert any("Re-fused from cached stage lists" in c.value for c in at.caption)
    assert merged.format("RRF") in stage_table(at)
    assert " fusion=rrf(" in at.query_params["i_settings"]
    at.radio(key="i_preset").set_value("agentos").run()  # agentos is always RRF
    assert at.radio(key="i_fusion").value == "rrf" and at.radio(key="i_fusion").disabled


def test_timings_keep_the_search_after_a_slider_move(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya")
    at.slider(key="i_dense_weight").set_value(0.8).run()
    d = at.session_state["i_result"][1].diagnostics

    import json

    assert "null" not in at.json[0].value.lower()
    assert json.loads(at.json[0].value)["split_threshold"] == "—"
    assert {"embed", "dense", "sparse", "facts"} <= set(d.timings_ms)


def test_compare_puts_rrf_and_convex_side_by_side(demo_env):
    at = page("pages/3_Compare.py")
    at.radio(key="cmp_b_preset").set_value("hybrid").run()
    at.radio(key="cmp_b_fusion").set_value("convex").run()
    at.text_input(key="cmp_q").input("status of ticket FX-209847").run()
    at.selectbox(key="cmp_scope").select("user:priya").run()
    assert not at.exception
    assert any(s.label.startswith("Ran A (agentos, rrf) and B (hybrid, convex)") for s in at.status)
    grades = [v for d in at.dataframe if "grade" in d.value.columns for v in d.value["grade"]]
    assert grades and all(g not in (None, "None", "nan") for g in grades)
    from ui.grading import UNRATED  # a grade reads as on every page ("2 · relevant"), never a bare number

    assert all(g in (UNRATED, "—") or " · " in g or g.endswith("(mean)") for g in grades), grades


def test_tune_apply_best_sets_the_sliders_here_and_on_inspect(demo_env):
    """One search, one best: the heatmap's starred cell is the lab's best RRF setting; Apply sets that best."""
    at = page("pages/4_Tune.py")
    at.button(key="t_run").click().run(timeout=180)
    lab = at.session_state["t_out"].lab
    heat = [c for c in at.get("plotly_chart") if json.loads(c.proto.spec)["data"][0]["type"] == "heatmap"]
    assert len(heat) == 1
    cells = json.loads(heat[0].proto.spec)["data"][0]["text"]
    assert sum(v.startswith("★") for row in cells for v in row) == 1  # one starred cell
    spec = json.loads(heat[0].proto.spec)["data"][0]
    r, c = next((i, j) for i, row in enumerate(cells) for j, v in enumerate(row) if v.startswith("★"))
    assert (float(spec["y"][r]), float(spec["x"][c])) == (lab.best_of("rrf").candidate.dense_weight,
                                                          lab.best_of("rrf").candidate.rrf_k)
    rrf = lab.best_of("rrf").candidate
    assert f"★ = the best RRF setting ({rrf.label})" in texts(at)
    best = lab.best.candidate
    iv = lab.interval()
    label = at.button(key="t_apply_best").proto.label
    assert label.startswith(f"Apply: {best.label}")
    assert ("interval includes zero" in label) == (not iv.above_zero and not iv.below_zero)
    at.button(key="t_apply_best").click().run()
    assert not at.exception
    assert at.session_state["t_dense_weight"] == best.dense_weight and at.session_state["t_fusion"] == best.fusion
    assert at.session_state["i_dense_weight"] == best.dense_weight and at.session_state["i_fusion"] == best.fusion
    assert any(s.value.startswith("Applied: the sliders here and on Inspect") for s in at.success)


def test_grade_final_results_in_inspect_and_they_survive_a_restart(demo_env):
    from retrieval.judgments import JudgmentStore
    from retrieval.types import Scope

    q, scope = "what is the status of my ticket FX-209847", Scope("user", "priya")  # no demo grades for it
    at = inspect(i_q=q, i_scope="user:priya")
    assert not at.exception
    final = column_ids(at, "final")
    groups = [b for b in at.button_group if b.proto.label.startswith("#")]
    assert [b.proto.label.split(" ")[1] for b in groups] == final  # one control per final result, in rank order
    assert all("○ not graded by you" in b.proto.label for b in groups)
    assert stage_table(at).count("○ ungraded") == len(final)  # the stage table marks ungraded results too
    groups[0].set_value(3).run()
    [b for b in at.button_group if b.proto.label.startswith("#2 ")][0].set_value(1).run()
    assert JudgmentStore(demo_env).grades(scope, q)["human"] == {final[0]: 3, final[1]: 1}
    again = inspect(i_q=q, i_scope="user:priya")  # a new session: the grades come from the store
    labels = [b.proto.label for b in again.button_group if b.proto.label.startswith("#")]
    assert "● 3" in labels[0] and "● 1" in labels[1] and "○ not graded by you" in labels[2]
    assert stage_table(again).count("○ ungraded") == len(final) - 2


def test_tune_reads_the_demo_case_and_its_fusion_lab_shows_intervals(demo_env):
    at = page("pages/4_Tune.py")
    assert at.selectbox(key="t_case").value == "demo"  # the demo case ships with the demo corpus
    at.button(key="t_run").click().run(timeout=240)
    assert not at.exception
    lab = at.session_state["t_out"].lab
    table = [d.value for d in at.dataframe if "held-out" in d.value.columns and "fusion" in d.value.columns][0]
    later = [" · ".join(s.from_knobs({}).family) for s in STRATEGIES[2:]]  # strategies registered after these
    assert list(table["fusion"]) == ["evaluated configuration", "RRF", "convex · minmax", "convex · theoretical",
                                     "convex · zscore", *later]
    assert table["tune"].iloc[1:].max() == pytest.approx(round(lab.best.tune, 4))
    rrf = lab.best_of("rrf")
    iv = lab.interval(rrf)
    assert table["95 % interval"].iloc[1] == f"[{iv.lo:+.4f}, {iv.hi:+.4f}]"
    assert table["Δ held-out vs evaluated"].iloc[1] == f"{iv.delta:+.4f}"
    assert iv.delta == pytest.approx(rrf.held_out - lab.baseline.held_out)
    stale = "The settings changed since this evaluation"
    assert stale not in texts(at)
    at.button(key="t_apply_best").click().run()  # the sliders now read the best: the tables say whose they are
    assert not at.exception and stale in texts(at)


def test_home_names_the_vector_index_a_store_has(tmp_path, monkeypatch):
    """Past the ANN threshold the store builds IVF-SQ; Home says so (forced here on a small store)."""
    from datetime import datetime

    from retrieval.models import HashingEmbedder
    from retrieval.types import MemoryTrace
    from retrieval.workspace.core import Workspace

    db = str(tmp_path / "db")
    ws = Workspace(db, embedder=HashingEmbedder(384), fact_extractor=None)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ws.ingest([MemoryTrace(id=f"t{i}", content=f"note {i} about topic {i % 37} and item {i % 11}", scope="user",
                           scope_id=f"u{i % 3}", created_at=now) for i in range(600)])
    assert ws.store.ensure_ann_index(force=True)
    monkeypatch.setenv("RETRIEVAL_DB", db)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = page()
    assert not at.exception and "vector index: ANN (IVF-SQ)" in texts(at)
    said = [c.value for c in at.caption if "vector index: ANN" in c.value][0]
    assert explain("ANN") in said and explain("IVF") in said  # said what ANN and IVF are


def test_home_tells_facts_behind_apart_from_bm25_out_of_step(tmp_path, monkeypatch):
    """A demo server on a store whose newest trace's facts were never extracted: BM25 is in step and Home says so,
    and says how many traces' facts wait for a writing process — not "BM25 out of step" (review: `in_step` also
    counts facts). A visitor limited to some scopes gets no store-wide count (`for_visitor`)."""
    from retrieval.access import Access, for_visitor
    from retrieval.models.registry import make_embedder
    from retrieval.types import MemoryTrace
    from retrieval.workspace import Workspace

    db = str(tmp_path / "db")
    ws = Workspace(db, embedder=make_embedder("hashing"))
    ws.ingest([MemoryTrace(id="x", content="I live in Porto.", scope="user", scope_id="maya")])
    ws.ingest([MemoryTrace(id="a", content="I live in Lisbon.", scope="user", scope_id="maya")], extract_facts=False)
    monkeypatch.setenv("RETRIEVAL_DB", db)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    said = texts(page())
    assert "BM25 in step with the store · facts of 1 trace(s) not extracted yet" in said, said
    assert "out of step" not in said
    status = {**ws.status(), "facts_pending": 1}
    maya = Access(user="maya", scopes=frozenset({"user:maya"}))
    assert for_visitor(status, maya, ws.store, ws.facts)["facts_pending"] is None


def test_home_names_every_registered_fusion(demo_env):
    """Home's first sentence lists the fusion strategies from the registry, so a new one is named there too
    (newcomer: DBSF was missing)."""
    said = texts(page())
    assert all(s.in_words in said for s in STRATEGIES), said[:400]
    assert "distribution-based score fusion" in said
