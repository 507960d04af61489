"""Trace content, ids and typed text never render as Markdown on the pages (item 1): the stage column's split box,
the explanation (reason, scope, fact), escalation details, a crafted link's ignored parameters, `highlight()` across
blank lines, the Facts page's last query, error messages on Inspect, Corpus and Tune. Each test renders what the page
shows with a CommonMark parser and looks for an image, a link or a raw tag that came from the hostile text."""
from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from apphelpers import demo_app_env, open_page

from retrieval.types import MemoryTrace, Scope

TIMEOUT = 120
MAYA = Scope("user", "maya")
IMG = "![x](http://127.0.0.1:9/img.png)"
CONTENT = f"zanzibarquux {IMG} [l](http://example.invalid) `tick` <b>bold</b> __strong__"
HOSTILE_ID = "zz`<b>id</b>` ![i](http://127.0.0.1:9/i.png)"
QUERY = "zanzibarquux"
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])  # raw HTML on, as st.markdown(unsafe_allow_html)
GFM_URL = re.compile(r"(?i)(https?://|www(?=\.))([-.\w]+)")  # what GFM's autolinker turns into a link


def inert(value: str) -> None:
    """`value` (Markdown) renders no image, no link, no raw <b> and no bare URL GFM would link."""
    out = MD.render(value)
    assert "<img" not in out and "<a " not in out and "<b>" not in out, (value, out)
    visible = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"(?s)<code>.*?</code>", "", out)))  # GFM: text only
    assert not GFM_URL.search(visible), (value, visible)


def shown(at) -> list[str]:
    """Every Markdown-reading value on the page."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [w.value for w in at.warning] + [s.value for s in at.success] + [e.value for e in at.error]
    parts += [e.label for e in at.expander]
    return [str(p) for p in parts]


def assert_page_inert(at, needle: str = "zanzibarquux") -> list[str]:
    hits = [v for v in shown(at) if needle in v or "127.0.0.1" in v or "example.invalid" in v]
    for v in hits:
        if v.lstrip().startswith("<div"):  # our own HTML (highlight, stage ids): escaped inside, one line
            assert "\n" not in v and "<img" not in MD.render(v) and "<a " not in MD.render(v), v
        else:
            inert(v)
    return hits


# ------------------------------------------------------------------ pure: highlight()

def test_highlight_keeps_the_html_block_on_one_line():
    from ui.widgets import highlight

    text = f"zanzibarquux first\n\n{IMG} and [l](http://example.invalid)\r\n\r\nlast <b>x</b>"
    out = highlight(text, QUERY, 600)
    assert "\n" not in out and "\r" not in out and out.count("<br>") == 4
    rendered = MD.render(f"<div style='font-size:0.92em'>{out}</div>")  # what explanation_summary writes
    assert "<img" not in rendered and "<a " not in rendered and "<b>" not in rendered, rendered
    assert "<mark>zanzibarquux</mark>" in rendered


def test_split_summary_escapes_the_replaced_ids():
    from types import SimpleNamespace

    from ui.view import split_summary

    diag = SimpleNamespace(split_on_ambiguous={"threshold": 1.0, "candidate_count": 1, "replaced_ids": [HOSTILE_ID]},
                           record=SimpleNamespace(rerank=SimpleNamespace(pool_ids=[HOSTILE_ID],
                                                                         split_halves={HOSTILE_ID: ("a", "b")})),
                           stage_ids={"final": [HOSTILE_ID, "other"]})
    inert(split_summary(diag))
    # how many replaced traces the final list holds, so the box and the ✂ column tell one story
    assert "replaced 1 whose" in split_summary(diag) and "1 of them is in the final list of 2" in split_summary(diag)


# ------------------------------------------------------------------ widgets on their own (AppTest scripts)

WIDGETS = f"""
from types import SimpleNamespace
from retrieval.fusion import RRF
from retrieval.pipeline.explain import Explanation
from retrieval.pipeline.settings import RetrievalSettings
from ui.widgets import escalation_view, explanation_details, explanation_summary, stage_table

HID, CONTENT = {HOSTILE_ID!r}, {CONTENT!r}
stages = {{"dense": (1, 0.5), "sparse": None, "merged": (1, 0.1), "reranked": None, "final": (1, 0.9)}}
fact = {{"subject": "user` " + HID, "predicate": "lives_in", "object": "![o](http://127.0.0.1:9/o.png)",
         "timestamp": "2025-01-01T00:00:00", "source_trace_ids": [HID], "source_span": CONTENT}}
found = Explanation(HID, stages, None, f"Rank 1 of 10 with score 0.9: found by the fact graph (lives_in from {{HID}}).",
                    content=CONTENT + "\\n\\n![late](http://127.0.0.1:9/late.png)", scope="user:" + HID, fact=fact)
dropped = Explanation(HID, stages, "truncate", f"It ranked #12 in {{HID}}.", content=CONTENT, scope="user:maya")
hidden = Explanation(HID, stages, "dense", f"No trace with id {{HID!r}} exists in this store.", exists=False,
                     visible=False)
for n, ex in enumerate((found, dropped, hidden)):
    if explanation_summary(ex, "zanzibarquux", f"x{{n}}"):
        explanation_details(ex, f"x{{n}}")
escalation_view(["reranker:error: TimeoutError quoting " + HID,
                 "odd `code` ![e](http://127.0.0.1:9/e.png): " + CONTENT])
split = SimpleNamespace(replaced=True, chosen="a", half_scores=(0.6, 0.4), whole=0.3)
settings = RetrievalSettings(fusion=RRF(k=10, weights=(0.5, 0.5)))  # hybrid: the blend base is the fused score
diag = SimpleNamespace(stage_ids={{"dense": [HID], "sparse": [], "final": [HID]}},
                       stage_scores={{"dense": {{HID: 0.5}}, "final": {{HID: 0.9}}}}, fact_ids=[],
                       splits={{HID: split}}, pool={{HID: SimpleNamespace(content="half a " + CONTENT)}},
                       settings=settings)
stage_table(diag, {{HID: "whole " + CONTENT + "\\n\\n" + CONTENT}}, "zanzibarquux", 10, "tbl", "target")
"""


def test_explanation_escalation_and_split_box_show_hostile_text_as_text():
    at = AppTest.from_string(WIDGETS, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    hits = assert_page_inert(at, "zz")
    assert len(hits) >= 8, hits  # reasons ×3, scope, fact, escalation details ×2, split box id and text
    fact = next(m.value for m in at.markdown if m.value.startswith("**Fact**"))
    out = MD.render(fact)
    assert out.count("<code>") == 1  # subject, predicate, object: one code span whatever backticks they hold
    assert html.unescape(out.split("<code>")[1].split("</code>")[0]) == \
        "user` " + HOSTILE_ID + " lives_in ![o](http://127.0.0.1:9/o.png)"
    assert any(c.value.startswith("code `reranker:error`") for c in at.caption)
    table = next(h.value for h in at.get("html") if "rt-stages" in h.value)  # st.html: HTML, not Markdown
    assert "<b>" not in table and "<img" not in table and "<a " not in table and "&lt;b&gt;" in table
    assert f"data-pick='{html.escape(HOSTILE_ID, quote=True)}'" in table


# ------------------------------------------------------------------ pages

@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory):
    """The demo store plus one trace in user:maya whose id and content are hostile Markdown."""
    for db in demo_app_env(tmp_path_factory, "integrity_ui_md"):
        from retrieval.models import HashingEmbedder
        from retrieval.workspace import Workspace

        ws = Workspace(db, embedder=HashingEmbedder(384))
        ws.ingest([MemoryTrace(id=HOSTILE_ID, content=CONTENT + "\n\n" + IMG, scope="user", scope_id="maya")],
                  extract_facts=False)
        yield db


def test_inspect_explaining_a_hostile_trace_shows_it_as_text(hostile_env):
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q=QUERY, i_scope="user:maya", i_id=HOSTILE_ID)
    assert not at.exception, at.exception
    assert at.text_input(key="i_typed").value == HOSTILE_ID
    hits = assert_page_inert(at)
    assert any(v.startswith("<div style=") for v in hits)  # the highlighted text is there, on one line


def test_a_crafted_link_parameter_is_named_as_text(hostile_env):
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q=QUERY, i_scope=f"`{IMG}`", i_reranker="[r](http://x.invalid)")
    assert not at.exception, at.exception
    note = next(w.value for w in at.warning if w.value.startswith("Ignored link parameter"))
    inert(note)
    assert "i_scope=`![x](http://127.0.0.1:9/img.png)`" in html.unescape(MD.render(note))


def test_inspect_error_quoting_the_query_is_text(hostile_env, monkeypatch):
    import ui.state

    def refuse(*args, **kwargs):
        raise ValueError(f"cannot search {CONTENT}")

    monkeypatch.setattr(ui.state, "run_config", refuse)
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q=QUERY, i_scope="user:maya")
    assert not at.exception, at.exception
    assert [e.value for e in at.error if "cannot search" in e.value]
    assert_page_inert(at)


def test_facts_page_shows_the_last_query_and_fact_as_text(hostile_env):
    at = AppTest.from_file(str(__import__("apphelpers").ROOT / "app.py"), default_timeout=TIMEOUT)
    at.switch_page("pages/5_Facts.py")
    from datetime import datetime, UTC

    at.session_state["last_injected_facts"] = {
        "scope": "user:maya", "query": CONTENT,
        "facts": [{"subject": "user", "predicate": "livesIn", "object": f"`{IMG}`", "timestamp": datetime.now(UTC),
                   "source_trace_ids": [HOSTILE_ID], "source_span": CONTENT}]}
    at.run()
    assert not at.exception, at.exception
    hits = assert_page_inert(at, "127.0.0.1")
    assert any("zanzibarquux" in v for v in hits) and any(v.startswith("- ") for v in hits)


def test_corpus_errors_and_search_echo_are_text(hostile_env, monkeypatch):
    import retrieval.ingest.demo

    def broken():
        raise ValueError(f"demo corpus line 3: {CONTENT}")

    monkeypatch.setattr(retrieval.ingest.demo, "load_demo_traces", broken)
    at = open_page("pages/1_Corpus.py", TIMEOUT)
    at.button(key="c_demo").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error if "demo corpus line 3" in e.value]
    assert_page_inert(at)
    at.text_input(key="c_needle").input(f"nothing-like-this {IMG}").run()
    assert not at.exception, at.exception
    assert [i.value for i in at.info if "nothing-like-this" in i.value]
    assert_page_inert(at, "nothing-like-this")


def test_tune_case_name_and_judgment_errors_are_text(hostile_env, monkeypatch):
    from retrieval.judgments import JudgmentStore

    js = JudgmentStore(hostile_env)
    js.add_to_case("x.__bold__", "a query nobody graded", MAYA)  # a valid name that Markdown would embolden
    at = AppTest.from_file(str(__import__("apphelpers").ROOT / "app.py"), default_timeout=TIMEOUT)
    at.switch_page("pages/4_Tune.py")
    at.session_state["t_case"] = "x.__bold__"
    at.run()
    assert not at.exception, at.exception
    info = next(i.value for i in at.info if "has no graded query" in i.value)
    assert "<strong>" not in MD.render(info) and "x.__bold__" in html.unescape(re.sub(r"<[^>]+>", "", MD.render(info)))

    def broken(self, case, grader="human"):
        raise ValueError(f"judgments line 2: {CONTENT}")

    monkeypatch.setattr(JudgmentStore, "labelled", broken)
    at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error if "judgments line 2" in e.value]
    assert_page_inert(at)
