"""The Log page (AppTest): filters, then vs now vs as of then, the link to Inspect as of then, make a case."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from apphelpers import TICKET_UPDATE, demo_app_env, ingest_ticket_update, open_page, page_texts
from retrieval.history import pin
from retrieval.judgments.store import JudgmentStore
from retrieval.models import HashingEmbedder
from retrieval.replay import QueryLog
from retrieval.workspace import Workspace

TIMEOUT = 90
NEW = TICKET_UPDATE
EARLY = "lens repair, logged before the store's first version"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    gen = demo_app_env(tmp_path_factory, "log_app")
    path = next(gen)
    ws = Workspace(path, embedder=HashingEmbedder(384))
    then = pin(ws.store, ws.store.version()).timestamp + timedelta(microseconds=1)
    ingest_ticket_update(ws)
    lines = [json.dumps({"timestamp": then.isoformat(), "query": "status of ticket FX-209847", "scope": "user:priya",
                         "results": [{"id": "priya-lens-repair", "score": 0.9}], "feedback": "up"}),
             json.dumps({"timestamp": then.isoformat(), "query": "lens **bold** [x](http://e.vil)",
                         "scope": "user:priya", "results": [{"id": "priya-lens-repair", "score": 0.2}]}),
             "broken line",
             json.dumps({"timestamp": "2020-01-01T00:00:00+00:00", "query": EARLY, "scope": "user:priya",
                         "results": [{"id": "priya-lens-repair", "score": 0.8}]})]
    rep = QueryLog(path).import_lines(lines)
    assert rep.added == 3 and [e.line for e in rep.errors] == [3]
    yield path, then
    next(gen, None)


def shown(at) -> str:
    """The page's text, the queries (text elements) included."""
    return page_texts(at) + "\n" + "\n".join(t.value for t in at.text)


def test_the_log_page_replays_then_now_and_as_of(db):
    at = open_page("pages/8_Log.py", TIMEOUT)
    assert not at.exception
    text = shown(at).replace("\\", "")
    assert "status of ticket FX-209847" in text
    assert "agent got: priya-lens-repair" in text
    assert NEW in text  # now: the new trace answers
    assert "as of then (version" in text and "overlap@" in text and "drift" in text
    assert "**bold**" not in "\n".join(str(m.value) for m in at.markdown).replace("\\*", "")  # shown plain
    links = [e for e in at.get("page_link")]
    assert links, "each logged query links to Inspect as of then"


def test_queries_show_as_logged_times_in_one_format_and_inspect_only_with_an_as_of(db):
    """A logged query is a text element equal to it (no zero-width space in "http://", so a copy is the query);
    every time reads "YYYY-MM-DD HH:MM:SS UTC", never ISO; "Inspect as of then" is offered only on a row that has
    an as-of (a query logged before the store's first version has none, and Inspect would ignore it)."""
    import re

    from ui.text import ZWSP

    at = open_page("pages/8_Log.py", TIMEOUT)
    assert not at.exception
    shown = [t.value for t in at.text]
    assert "lens **bold** [x](http://e.vil)" in shown and EARLY in shown and not any(ZWSP in t for t in shown)
    text = page_texts(at).replace("\\", "")  # unescaped as shown
    assert "2020-01-01 00:00:00 UTC is before the first stored version (version " in text
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", text), "an ISO timestamp beside formatted ones"
    links = [e.proto for e in at.get("page_link") if e.proto.label == "Inspect as of then"]
    assert len(links) == 2 and EARLY not in "".join(p.query_string for p in links).replace("+", " ")
    assert "nothing to inspect as of then (see why above)" in text


def test_filters_low_top_score_and_feedback(db):
    at = open_page("pages/8_Log.py", TIMEOUT)
    at.selectbox(key="l_feedback").select("positive").run()
    text = shown(at).replace("\\", "")
    assert "status of ticket FX-209847" in text and "lens bold" not in text.replace("*", "")
    at.selectbox(key="l_feedback").select("any").run()
    at.selectbox(key="l_order").select("low top score").run()
    at.number_input(key="l_low").set_value(0.5).run()
    assert not at.exception
    text = shown(at).replace("\\", "")
    assert "status of ticket" not in text and "lens" in text


def test_make_a_case_from_the_queries_shown(db):
    path, _ = db
    at = open_page("pages/8_Log.py", TIMEOUT)
    at.text_input(key="l_case").input("from-log").run()
    at.button(key="l_make_case").click().run()
    assert not at.exception
    case = JudgmentStore(path).case("from-log")
    assert {q.query for q in case.queries} == {"status of ticket FX-209847", "lens **bold** [x](http://e.vil)", EARLY}
