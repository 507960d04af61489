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
             "broken line"]
    rep = QueryLog(path).import_lines(lines)
    assert rep.added == 2 and [e.line for e in rep.errors] == [3]
    yield path, then
    next(gen, None)


def test_the_log_page_replays_then_now_and_as_of(db):
    at = open_page("pages/8_Log.py", TIMEOUT)
    assert not at.exception
    text = page_texts(at).replace("\\", "")
    assert "status of ticket FX-209847" in text
    assert "agent got: priya-lens-repair" in text
    assert NEW in text  # now: the new trace answers
    assert "as of then (version" in text and "overlap@" in text and "drift" in text
    assert "**bold**" not in "\n".join(str(m.value) for m in at.markdown).replace("\\*", "")  # shown plain
    links = [e for e in at.get("page_link")]
    assert links, "each logged query links to Inspect as of then"


def test_filters_low_top_score_and_feedback(db):
    at = open_page("pages/8_Log.py", TIMEOUT)
    at.selectbox(key="l_feedback").select("positive").run()
    text = page_texts(at).replace("\\", "")
    assert "status of ticket FX-209847" in text and "lens bold" not in text.replace("*", "")
    at.selectbox(key="l_feedback").select("any").run()
    at.selectbox(key="l_order").select("low top score").run()
    at.number_input(key="l_low").set_value(0.5).run()
    assert not at.exception
    text = page_texts(at).replace("\\", "")
    assert "status of ticket" not in text and "lens" in text


def test_make_a_case_from_the_queries_shown(db):
    path, _ = db
    at = open_page("pages/8_Log.py", TIMEOUT)
    at.text_input(key="l_case").input("from-log").run()
    at.button(key="l_make_case").click().run()
    assert not at.exception
    case = JudgmentStore(path).case("from-log")
    assert {q.query for q in case.queries} == {"status of ticket FX-209847", "lens **bold** [x](http://e.vil)"}
