"""A visitor limited to some scopes, items 2-4: no existence oracle (explain, Tune's "present" count, a
case import's "not in the store" list), no store-wide number (Home's BM25 and fact counts, other users' cases in
Tune), and every grade or case written from the app carries the visitor's `Access` (audited under their name,
refused as a message, never a traceback; "Add to case" never defaults to the shared `demo` case)."""
from __future__ import annotations

import json
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from demostore import copy_demo
from apphelpers import open_page, page_texts
from conftest import U1, U2

import ui.access
from retrieval.judgments import JudgmentStore
from retrieval.models import HashingEmbedder
from retrieval.pipeline.explain import explain
from retrieval.types import Scope
from retrieval.workspace.core import Workspace

TIMEOUT = 90
MAYA, TOMAS = Scope("user", "maya"), Scope("user", "tomas")
POLICY = """
[users."maya@example.com"]
scopes = ["user:maya"]

[users."writer@example.com"]
scopes = ["user:tomas"]
write = true
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui_access")
    copy_demo(str(root / "base"))
    return root


@pytest.fixture
def as_user(monkeypatch, built, tmp_path, request):
    """A fresh copy of the demo store per test (the app caches one Workspace per URI), served behind the proxy
    header with POLICY; returns (sign in as, store path)."""
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_ALLOW_GRADING", "RETRIEVAL_AUTH_HEADER", "RETRIEVAL_ALLOW_UNVERIFIED_EMAIL"):
        monkeypatch.delenv(k, raising=False)
    db = built / request.node.name.replace("[", "_").replace("]", "")
    shutil.copytree(built / "base", db)
    policy = tmp_path / "access.toml"
    policy.write_text(POLICY)
    monkeypatch.setenv("RETRIEVAL_DB", str(db))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    monkeypatch.setenv("RETRIEVAL_AUTH", "proxy")
    monkeypatch.setenv("RETRIEVAL_POLICY", str(policy))

    def sign_in(email: str) -> None:
        monkeypatch.setattr(ui.access, "request_headers", lambda: {"X-Forwarded-Email": email})

    return sign_in, str(db)


def run(path: str, **params) -> AppTest:
    return open_page(path, TIMEOUT, **params)


# ------------------------------------------------------------------ item 2: no existence oracle

def test_explain_gives_a_limited_visitor_one_sentence_for_a_hidden_id_and_an_unknown_one(retriever):
    d = retriever.retrieve("invoice INV-8842", scope=U1).diagnostics
    lookup = retriever.lookup(U1)  # ids the query never touched: read through the caller's look-up
    sees = {str(U1)}.__contains__
    hidden = explain(d, "other", lookup, sees=sees)  # "other" is stored, in user:u2
    unknown = explain(d, "no-such-trace", lookup, sees=sees)
    assert hidden.reason.replace("'other'", "ID") == unknown.reason.replace("'no-such-trace'", "ID")
    for ex in (hidden, unknown):
        assert (ex.exists, ex.visible, ex.dropped_at, ex.content, ex.scope, ex.dense_terms) == \
            (False, False, "dense", None, None, None)
    # Local use (every scope visible) still tells the two apart, and a trace of a visible scope is explained.
    assert "outside the scope" in explain(d, "other", lookup).reason
    assert "exists in this store" in explain(d, "no-such-trace", lookup).reason
    assert explain(d, "other", lookup, sees={str(U1), str(U2)}.__contains__).reason == \
        explain(d, "other", lookup).reason
    hike = explain(d, "hike", lookup, sees=sees)  # in the visitor's scope: explained as usual
    assert hike.visible and hike.content and hike.reason == explain(d, "hike", lookup).reason


def test_inspect_tells_a_limited_visitor_nothing_about_another_scopes_ids(as_user):
    sign_in, _ = as_user
    sign_in("maya@example.com")
    at = run("pages/2_Inspect.py", i_q="lens repair", i_scope="user:maya")
    assert not at.exception, at.exception
    said = {}
    for tid in ("priya-lens-repair", "no-such-trace-zz"):
        at.text_input(key="i_typed").input(tid).run()
        assert not at.exception, at.exception
        said[tid] = [w.value.replace(tid, "ID") for w in at.warning if tid in w.value]
    assert said["priya-lens-repair"] == said["no-such-trace-zz"] and len(said["no-such-trace-zz"]) == 1
    assert "not visible from this query" in said["no-such-trace-zz"][0]


def maya_case(db: str) -> None:
    """A case of maya's own (one query, in user:maya) graded on a maya trace and on one of priya's."""
    js = JudgmentStore(db)
    js.add_to_case("maya-set", "where did I fix my glasses?", MAYA)
    js.set_grade(MAYA, "where did I fix my glasses?", "maya-intro", 3)
    js.set_grade(MAYA, "where did I fix my glasses?", "priya-lens-repair", 2)


def test_tune_counts_only_judged_traces_the_visitor_may_see(as_user):
    sign_in, db = as_user
    maya_case(db)
    sign_in("maya@example.com")
    at = AppTest.from_file(str(__import__("apphelpers").ROOT / "app.py"), default_timeout=TIMEOUT)
    at.switch_page("pages/4_Tune.py")
    at.session_state["t_case"] = "maya-set"
    at.run()
    assert not at.exception, at.exception
    assert "1 labelled queries · 1/2 judged traces present in the store" in page_texts(at)


def test_a_case_import_lists_another_scopes_ids_as_not_in_the_store(as_user):
    sign_in, db = as_user
    sign_in("writer@example.com")
    line = {"qid": "w1", "query": "who is on call this week?", "scope": "user:tomas",
            "relevant": {"tomas-oncall": 2, "maya-intro": 1, "no-such-id-x": 1}}
    at = run("pages/6_Snapshots.py")
    assert not at.exception, at.exception
    at.file_uploader(key="s_imp_jsonl").set_value(("w.jsonl", json.dumps(line).encode(), "application/json")).run()
    at.text_input(key="s_imp_name").input("writer-import").run()
    at.button(key="s_imp_go").click().run()
    assert not at.exception, at.exception
    assert "Case writer-import: 1 queries, 1 grades stored." in page_texts(at)
    assert "2 judged id(s) not in the store, skipped: maya-intro; no-such-id-x" in page_texts(at)
    assert JudgmentStore(db).grades(TOMAS, line["query"], "writer@example.com")["human"] == {"tomas-oncall": 2}
    entry = next(e for e in Workspace(db, embedder=HashingEmbedder(384)).audit.entries(limit=20)
                 if e.action == "case" and e.detail == "writer-import")
    assert entry.actor == "writer@example.com"  # the import carried the visitor's Access


# ------------------------------------------------------------------ item 3: no store-wide number

def test_home_shows_a_limited_visitor_the_bm25_and_fact_counts_of_their_scopes(as_user):
    sign_in, db = as_user
    sign_in("maya@example.com")
    at = run("app.py")
    assert not at.exception, at.exception
    ws = Workspace(db, embedder=HashingEmbedder(384))
    metrics = {m.label: int(m.value) for m in at.metric}
    assert metrics["Traces"] == ws.store.count(MAYA)
    assert metrics["BM25 documents"] == ws.store.count(MAYA, active_only=True) < ws.status()["bm25_documents"]
    assert metrics["Facts"] == len(ws.facts.all(MAYA)) < ws.status()["facts"]
    assert metrics["Scopes"] == 1


def test_tune_offers_a_limited_visitor_only_cases_wholly_in_their_scopes(as_user):
    sign_in, db = as_user
    maya_case(db)
    sign_in("maya@example.com")
    at = run("pages/4_Tune.py")
    assert not at.exception, at.exception
    assert at.selectbox(key="t_case").options == ["maya-set"]  # not `demo`: its queries span three users
    assert "demo" not in page_texts(at)


def test_a_limited_visitor_without_a_case_of_theirs_is_told_why_not_to_run_build_demo(as_user):
    sign_in, _ = as_user
    sign_in("maya@example.com")  # the shipped `demo` case spans three users: none is hers
    for path in ("pages/6_Snapshots.py", "pages/7_Judge.py"):
        at = run(path)
        assert not at.exception, at.exception
        info = " ".join(i.value for i in at.info)
        assert "only cases whose queries all lie in your scopes are listed" in info, (path, info)
        assert "build-demo" not in info and "demo" not in page_texts(at), path


# ------------------------------------------------------------------ item 4: writes carry the visitor's Access

def grade_key(query: str, tid: str) -> str:
    from ui.grading import grade_key as key

    return key("i_g_", TOMAS, query, tid)


def test_a_grade_from_inspect_is_written_as_the_signed_in_visitor(as_user):
    sign_in, db = as_user
    sign_in("writer@example.com")
    query = "who is on call this week?"  # no grade yet (not a demo case query)
    at = run("pages/2_Inspect.py", i_q=query, i_scope="user:tomas")
    assert not at.exception, at.exception
    tid = at.session_state["i_result"][1].traces[0].id
    at.button_group(key=grade_key(query, tid)).set_value(2).run()
    assert not at.exception, at.exception
    # the grade is the signed-in visitor's, as a named rater
    assert JudgmentStore(db).grades(TOMAS, query, rater="writer@example.com")["human"] == {tid: 2}
    assert [(j.who, j.grade) for j in JudgmentStore(db).ratings(TOMAS, query)] == [("writer@example.com", 2)]
    entry = next(e for e in Workspace(db, embedder=HashingEmbedder(384)).audit.entries(limit=20)
                 if e.action == "grade")
    assert (entry.actor, entry.scopes) == ("writer@example.com", ("user:tomas",))


def test_add_to_case_offers_the_visitors_own_case_and_refuses_a_shared_one(as_user):
    sign_in, db = as_user
    sign_in("writer@example.com")
    query = "who is on call this week?"
    demo = JudgmentStore(db).case("demo").queries
    at = run("pages/2_Inspect.py", i_q=query, i_scope="user:tomas")
    assert not at.exception, at.exception
    assert at.text_input(key="i_g_case_name").value == "writer-cases"  # not the shared `demo`
    at.button(key="i_g_add_case").click().run()
    assert not at.exception, at.exception
    case = JudgmentStore(db).case("writer-cases")
    assert [(q.query, q.scope) for q in case.queries] == [(query, TOMAS)]
    at.text_input(key="i_g_case_name").input("demo").run()
    at.button(key="i_g_add_case").click().run()
    assert not at.exception, at.exception
    refusal = [e.value for e in at.error if "Nothing was saved" in e.value]
    assert refusal and "user:maya" not in refusal[0] and "user:priya" not in refusal[0]  # no other scope named
    assert JudgmentStore(db).case("demo").queries == demo  # nothing added to the shared case


REFUSED = """
import os
from retrieval.access import Access
from retrieval.judgments import JudgmentStore
from retrieval.types import Scope
from ui.grading import grade_widget

js = JudgmentStore(os.environ["RETRIEVAL_DB"])
maya = Access("maya@example.com", frozenset({"user:maya"}), write=True, grade=True)
grade_widget(js, Scope("user", "priya"), "a query in another scope", "priya-lens-repair", key_prefix="r_",
             access=maya)
"""


def test_a_refused_grade_is_an_error_message_and_nothing_is_written(as_user):
    _, db = as_user
    at = AppTest.from_string(REFUSED, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    at.button_group[0].set_value(3).run()
    assert not at.exception, at.exception
    assert any("not yours to grade in" in e.value for e in at.error)
    assert at.button_group[0].value is None  # the control shows what is stored: nothing
    assert JudgmentStore(db).grades(Scope("user", "priya"), "a query in another scope")["human"] == {}
