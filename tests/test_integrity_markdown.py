"""Trace content and ids never render as Markdown: `ui.text.plain` / `ui.text.code` on their own (rendered by a
CommonMark parser), then in AppTest: grading labels (Inspect's "#1 id — content", the grade widget) and the
Snapshots page's "Grade B's top 10", with a stored trace whose id holds a backtick and whose content holds an
image, a link and an HTML tag."""
from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from apphelpers import ROOT, demo_app_env, open_page

from retrieval.types import MemoryTrace, Scope
from ui.text import ZWSP, code, plain

TIMEOUT = 120
MAYA = Scope("user", "maya")
CONTENT = "zanzibarquux ![x](http://127.0.0.1:9/img.png) [link](http://x) <b>bold</b> *em* www.evil.example"
HOSTILE_ID = "zz`<b>id</b>` ![i](http://127.0.0.1:9/i.png)"
QUERY = "zanzibarquux"
# Streamlit's GFM turns bare URLs into links from the parsed text (so after backslash escapes are gone): the
# pattern of mdast-util-gfm-autolink-literal, as shipped in streamlit/static (StreamlitMarkdown.*.js).
GFM_URL = re.compile(r"(?i)(https?://|www(?=\.))([-.\w]+)")
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
MARKUP_TAGS = re.compile(r"<(?!/?p>)[a-z/][^>]*>")  # any tag but the paragraph around the text


def rendered(markdown: str) -> str:
    return MD.render(markdown)


def shown_text(markdown: str) -> str:
    """The text a reader sees: tags stripped, entities decoded, the zero-width spaces dropped."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered(markdown))).replace(ZWSP, "").strip()


@pytest.mark.parametrize("text", [
    CONTENT, HOSTILE_ID, "# heading", "- item", "+ item", "1. one", "12) twelve", "> quote", "a | b\n--- | ---",
    "line\n===", "~~gone~~", "__strong__", "&amp; &lt;b&gt;", "<http://auto.link>", "trailing backslash \\",
    "[ref]\n\n[ref]: http://x", "![](data:image/png;base64,AAAA)", "<img src=x onerror=alert(1)>", "$x^2$",
])
def test_plain_renders_as_the_same_text_and_nothing_else(text):
    out = rendered(plain(text))
    assert not MARKUP_TAGS.search(out), out  # no image, link, emphasis, heading, list, table, code, raw HTML
    assert out.count("<p>") <= text.count("\n\n") + 1
    for para in text.split("\n\n"):
        for line in para.splitlines():
            assert line.strip() in shown_text(plain(text))
    visible = html.unescape(re.sub(r"<[^>]+>", "", out))  # zero-width spaces kept: what GFM's linker reads
    assert not GFM_URL.search(visible), visible


def test_plain_breaks_bare_urls_that_gfm_would_link():
    for text in ("see http://evil.example/x", "see https://evil.example", "see www.evil.example"):
        visible = html.unescape(re.sub(r"<[^>]+>", "", rendered(plain(text))))
        assert not GFM_URL.search(visible), visible  # a zero-width space sits inside "://" or "www."
        assert visible.replace(ZWSP, "").strip() == text


def test_plain_leaves_ordinary_ids_and_labels_alone():
    for text in ("maya-inv-20931", "#1 maya-inv-20931 — ordinary words", "mini.jsonl line 7: grade 4",
                 "maya@example.com", "user:maya"):
        assert plain(text) == text


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60).map(str.strip))
def test_plain_shows_any_ascii_line_as_typed(text):
    out = rendered(plain(text))
    assert not MARKUP_TAGS.search(out), (text, out)
    assert " ".join(shown_text(plain(text)).split()) == " ".join(text.split())


@pytest.mark.parametrize("text", ["a`b", "`x", "x``y`", " a ", "a\nb", HOSTILE_ID, "plain"])
def test_code_is_one_code_span_whatever_backticks_it_holds(text):
    out = rendered(f"id {code(text)} after")
    assert out.count("<code>") == 1 and "after" in out.split("</code>")[1]
    inner = html.unescape(out.split("<code>")[1].split("</code>")[0])
    assert inner == " ".join(text.splitlines())


# ------------------------------------------------------------------ AppTest

GRADE_SCRIPT = f"""
import os
from retrieval.judgments import JudgmentStore
from retrieval.types import Scope
from ui.grading import grade_widget

js = JudgmentStore(os.environ["RETRIEVAL_DB"])
grade_widget(js, Scope("user", "maya"), "hostile labels", {HOSTILE_ID!r}, key_prefix="h_")
grade_widget(js, Scope("user", "maya"), "hostile labels", "maya-dentist", key_prefix="h_",
             label={("#1 " + HOSTILE_ID + " — " + CONTENT)!r})
"""


def assert_escaped(value: str) -> None:
    """A Markdown-bearing value that quotes CONTENT / HOSTILE_ID escaped: no image, link or tag survives."""
    assert "![" not in value and "](http" not in value and "<b>" not in value, value
    assert not MARKUP_TAGS.search(rendered(value)), rendered(value)


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory):
    """The demo store plus one trace in user:maya whose id and content are hostile Markdown."""
    for db in demo_app_env(tmp_path_factory, "integrity_md"):
        from retrieval.models import HashingEmbedder
        from retrieval.workspace import Workspace

        ws = Workspace(db, embedder=HashingEmbedder(384))
        ws.ingest([MemoryTrace(id=HOSTILE_ID, content=CONTENT, scope="user", scope_id="maya")], extract_facts=False)
        yield db


def test_grade_widget_labels_are_plain_text(hostile_env):
    at = AppTest.from_string(GRADE_SCRIPT, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    labels = [b.proto.label for b in at.button_group]
    assert labels == [f"{plain(HOSTILE_ID)} · ○ not graded by you",
                      f"{plain('#1 ' + HOSTILE_ID + ' — ' + CONTENT)} · ○ not graded by you"]
    for label in labels:
        assert_escaped(label)
    assert shown_text(labels[1]).startswith("#1 " + HOSTILE_ID + " — zanzibarquux ![x](http")


def test_inspect_grading_labels_show_a_hostile_trace_as_text(hostile_env):
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q=QUERY, i_scope="user:maya")
    assert not at.exception, at.exception
    groups = [b.proto.label for b in at.button_group if b.proto.label.startswith("#")]
    mine = [g for g in groups if "zz" in g and "zanzibarquux" in g]
    assert mine, groups  # the hostile trace is in the final list, with its grade control
    for label in groups:
        assert_escaped(label)
    assert re.match(rf"#\d+ {re.escape(HOSTILE_ID)} — {re.escape(CONTENT[:40])}", shown_text(mine[0]))


def test_snapshots_grade_b_top_10_shows_a_hostile_trace_as_text(hostile_env):
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace import Workspace

    js = JudgmentStore(hostile_env)
    case = js.add_to_case("hostile", QUERY, MAYA)
    js.set_grade(MAYA, QUERY, HOSTILE_ID, 3)
    ws = Workspace(hostile_env, embedder=HashingEmbedder(384))
    for weight in (0.6, 0.9):
        cfg = PipelineConfig.for_preset("hybrid", dense_weight=weight, sparse_weight=round(1 - weight, 2))
        run_snapshot(ws, case, cfg, js, label=f"w{weight}")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.switch_page("pages/6_Snapshots.py")
    at.session_state["s_case"] = "hostile"
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="s_case").value == "hostile"
    rows = [m.value for m in at.markdown if "zanzibarquux" in m.value]
    assert rows, [m.value for m in at.markdown]
    for value in rows:
        out = rendered(value)
        # "**1.** `id` content": bold rank, the id as one code span (its backtick cannot close it early), the
        # content as text — no image, link or tag from either.
        assert set(re.findall(r"</?([a-z]+)", out)) == {"p", "strong", "code"} and out.count("<code>") == 1, out
        assert html.unescape(out.split("<code>")[1].split("</code>")[0]) == HOSTILE_ID
        assert_escaped(value.split(code(HOSTILE_ID))[1])
        assert shown_text(value).endswith(CONTENT)
    for label in (b.proto.label for b in at.button_group):
        assert_escaped(label)
