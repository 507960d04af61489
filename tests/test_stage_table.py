"""The aligned stage table (ui.stages) and the derivations under it (ui.derive), without Streamlit.

The rows and marks are checked against the pipeline's own lists; every derivation the page prints is checked
against the numbers the pipeline produced (fused ÷ top fused, the blend, each list's normalisation), over
every fusion and normalisation, so a sentence on the page cannot drift from the code that made the number.
"""
from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from conftest import U1, StubReranker
from retrieval import BM25Index, HybridRetriever
from retrieval.pipeline.explain import list_names
from ui import derive, stages
from ui.charts import rank_flow_figure, when

QUERY = "refund invoice INV-8842"
IDS = st.lists(st.sampled_from([f"t{i}" for i in range(12)]), unique=True, max_size=12)


# ------------------------------------------------------------------ what moved

def test_moves_by_hand():
    assert stages.moves(None, ["a", "b"]) == {}
    assert stages.moves(["a", "b", "c"], ["c", "a", "d"]) == {"c": "▲2", "a": "▼1", "d": "new", "b": "left"}
    assert stages.moves(["a", "b"], ["a", "b"]) == {}


@given(IDS, IDS)
def test_moves_say_exactly_how_far_each_trace_went(before, after):
    marks = stages.moves(before, after)
    for n, tid in enumerate(after):
        m = marks.get(tid, "")
        if tid not in before:
            assert m == "new"
        elif m == "":
            assert before.index(tid) == n
        else:
            step = int(m[1:])
            assert step > 0 and before.index(tid) - n == (step if m[0] == "▲" else -step)
    assert {t for t, m in marks.items() if m == "left"} == set(before) - set(after)


def test_remember_final_marks_a_new_setting_and_keeps_the_marks_on_a_rerun():
    memory: dict = {}
    assert stages.remember_final(memory, "q", "user:a", "s1", ["a", "b"]) == (False, {})  # a first search
    assert stages.remember_final(memory, "q", "user:a", "s1", ["a", "b"]) == (False, {})  # a click: nothing new
    changed, moved = stages.remember_final(memory, "q", "user:a", "s2", ["b", "a", "c"])
    assert changed and moved == {"b": "▲1", "a": "▼1", "c": "new"}
    assert stages.remember_final(memory, "q", "user:a", "s2", ["b", "a", "c"]) == (False, moved)  # marks stay
    assert stages.remember_final(memory, "other", "user:a", "s2", ["a"]) == (False, {})  # a new query: no marks
    assert stages.remember_final(memory, "q", "user:a", "s2", ["c", "b"]) == (False, {})  # same setting, other list
    for n in range(30):
        stages.remember_final(memory, f"q{n}", None, "s", [], keep=5)
    assert len(memory) == 5


# ------------------------------------------------------------------ rows, order, HTML

@pytest.fixture
def diag(retriever):
    return retriever.retrieve(QUERY, scope=U1).diagnostics


def test_aligned_rows_hold_each_stage_rank_and_score(diag):
    rows = stages.aligned_rows(diag, {}, 3)
    want = []
    for s in stages.STAGE_ORDER:
        want += [i for i in diag.stage_ids[s][:3] if i not in want]
    assert [r.id for r in rows] == want
    for r in rows:
        for s in stages.STAGE_ORDER:
            ids = list(diag.stage_ids[s])
            assert r.ranks[s] == (ids.index(r.id) + 1 if r.id in ids else None)
            assert r.scores[s] == diag.stage_scores[s].get(r.id)
    left = stages.aligned_rows(diag, {}, 3, {"gone": "left"})
    assert left[-1].id == "gone" and left[-1].move == "left"


def test_sort_by_any_stage_puts_its_order_first(diag):
    rows = stages.aligned_rows(diag, {}, 10)
    for s in ("dense", "sparse", "merged", "final"):
        ordered = [r.id for r in stages.sort_rows(rows, s)]
        listed = [i for i in diag.stage_ids[s] if i in ordered]
        assert ordered[: len(listed)] == listed
        assert all(r.ranks[s] is None for r in stages.sort_rows(rows, s)[len(listed):])


class Cells(HTMLParser):
    """The tags and text of a fragment, to check that only our own markup is in it."""

    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.picks: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.picks += [v for k, v in attrs if k == "data-pick"]

    def handle_data(self, data):
        self.text.append(data)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60), st.text(min_size=1, max_size=30))
def test_table_html_shows_any_text_and_id_as_text(text, tid):
    row = stages.Row(id=tid, origin="both", text=text, split="", ranks={"final": 1}, scores={"final": 0.5})
    out = stages.table_html([row], "refund", "final", 10, target=tid)
    p = Cells()
    p.feed(out)
    assert p.tags <= {"style", "div", "table", "colgroup", "col", "thead", "tr", "th", "span", "tbody", "td", "mark",
                      "i"}
    assert p.picks == [tid]
    body = html.unescape(re.sub(r"<[^>]+>", "", out.split("<tbody>")[1]))
    assert " ".join(text.split())[:40] in body or not text.strip()


def test_marked_snippet_marks_query_terms_and_escapes():
    out = stages.marked("A <b>refund</b> for INV-8842 & more", "refund INV-8842")
    assert out == "A &lt;b&gt;<mark>refund</mark>&lt;/b&gt; for <mark>INV</mark>-<mark>8842</mark> &amp; more"


def test_short_id_keeps_head_and_tail():
    tid = "fact-graph:user:livesIn:1755725640000"
    short = stages.short_id(tid)
    assert len(short) == stages.ID_CHARS and short.startswith("fact-graph") and short.endswith("640000")
    assert stages.short_id("abc") == "abc"


# ------------------------------------------------------------------ derivations match the pipeline

FUSIONS = [("rrf", "minmax"), ("convex", "minmax"), ("convex", "theoretical"), ("convex", "zscore")]


@pytest.mark.parametrize("fusion,norm", FUSIONS)
def test_each_normalised_score_is_what_fusion_used(retriever, fusion, norm):
    d = retriever.retrieve(QUERY, scope=U1, fusion=fusion, normalization=norm).diagnostics
    assert d.fused
    lists = derive.fusion_lists(d)
    weights = [d.settings["dense_weight"] if n.startswith("dense") else d.settings["sparse_weight"]
               for n in list_names(d.record)]
    for tid, f in d.fused.items():
        for lst, w, c, rank in zip(lists, weights, f.contributions, f.ranks):
            if fusion == "rrf" or rank is None:
                continue
            value, how = derive.normalisation_formula([sc for _, sc in lst], dict(lst)[tid], norm)
            assert math.isclose(w * value, c, rel_tol=1e-9, abs_tol=1e-12)
            assert how.startswith(f"{value:.4g}")
        assert bool(derive.normalisations(d, tid)) == (fusion == "convex")


def test_theoretical_normalisation_reads_score_over_list_max():
    value, how = derive.normalisation_formula([0.1865, 0.1044, 0.05], 0.1044, "theoretical")
    assert how == f"{0.1044 / 0.1865:.4g} = 0.1044 ÷ list max 0.1865" and value == pytest.approx(0.1044 / 0.1865)


@pytest.mark.parametrize("preset", ["hybrid", "agentos"])
def test_final_rule_without_a_reranker_is_the_pipelines_arithmetic(retriever, preset):
    d = retriever.retrieve(QUERY, scope=U1, preset=preset).diagnostics
    rule = derive.final_rule(d)
    top = d.stage_scores["merged"][d.stage_ids["merged"][0]]
    for tid in d.stage_ids["final"]:
        final = d.stage_scores["final"][tid]
        if preset == "hybrid":
            assert math.isclose(final, d.fused[tid].score / top, rel_tol=1e-12)
            assert derive.final_how(d, tid).startswith(f"= Merged {d.fused[tid].score:.5g} ÷ top Merged {top:.5g}")
        else:
            assert final == d.stage_scores["dense"][tid]
            assert derive.final_how(d, tid) == "= its Dense score (no reranker)"
    assert rule.startswith("No reranker: Final = Merged ÷" if preset == "hybrid" else "No reranker: Final keeps")


def test_final_rule_with_a_reranker_is_the_blend(store, traces):
    r = HybridRetriever(store, bm25=BM25Index(), reranker=StubReranker(lambda q, t: len(t) / 100))
    r.index(traces)
    d = r.retrieve(QUERY, scope=U1).diagnostics
    assert "Final = Reranked = (1 − 0.3) × base + 0.3 × reranker score" in derive.final_rule(d)
    for tid in d.stage_ids["final"]:
        b = d.blend[tid]
        assert math.isclose(d.stage_scores["final"][tid], (1 - b.weight) * b.base + b.weight * b.rerank)
        assert derive.final_how(d, tid).startswith(f"= (1 − {b.weight:.3g}) × base {b.base:.4g}")


# ------------------------------------------------------------------ charts: labels and dates

def test_rank_flow_labels_stay_off_the_deeper_row_and_carry_moves():
    ids = {"dense": [f"d{i}" for i in range(15)], "sparse": ["s1"],
           "final": ["s1", "d5", "d6", "d7", "d8", "d0", "d1", "d2"]}
    fig = rank_flow_figure(ids, top=5, moved={"s1": "▲1", "d5": "new", "d0": "▼5"})
    labels = {t.customdata[0]: t.text[-1] for t in fig.data}
    assert labels["s1"] == "s1 ▲1" and labels["d5"] == "d5 new"
    assert labels["d0"] == labels["d1"] == labels["d2"] == ""  # final ranks 6-8 share the "> 5" row: no pile
    d0 = next(t for t in fig.data if t.customdata[0] == "d0")
    assert "down 5 against the previous setting" in d0.hovertemplate[-1]
    escaped = rank_flow_figure({"dense": ["<b>"], "final": ["<b>"]}, top=5)
    assert escaped.data[0].text[-1] == "&lt;b&gt;"


def test_timestamps_read_as_people_write_them():
    from datetime import UTC, datetime

    assert when(datetime(2024, 6, 3, 8, 2, tzinfo=UTC)) == "3 Jun 2024 08:02"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=14), min_size=1, max_size=80),
       st.sampled_from(["", "c", "abc", "zzz"]), st.integers(20, 160))
@example(["aaa", "aaaaa", "aaaaa", "aaaaa"], "", 20)  # a body that occurs twice: skipped, not misread
@example(["abcdefgh"] * 3 + ["hgfedcba"], "", 20)
def test_a_snippet_is_cut_between_words_and_marked_where_cut(words, query, limit):
    from ui.view import snippet

    text = " ".join(words)
    out = snippet(text, query, limit)
    body = out.removeprefix("…").removesuffix("…")
    assert body and body in text and len(body) <= limit
    # where the snippet lies is read back from the text: only where it occurs once ("aaa aaaaa aaaaa aaaaa" cut to
    # its first 15 characters also ends with them, and was then read as unmarked at its end)
    assume(text.find(body) == text.rfind(body))
    assert out.startswith("…") == (not text.startswith(body))
    assert out.endswith("…") == (not text.endswith(body))
    at = text.index(body) if not out.startswith("…") else text.rindex(body)
    # no word cut in half where a space lies in the last quarter of the window
    if at and text[at - 1] != " ":
        assert " " not in text[at: at + limit // 4]
    end = at + len(body)
    if end < len(text) and text[end] != " ":
        assert " " not in text[end - limit // 4: end]
