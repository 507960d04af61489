"""Identity (issue 32, items 3 and 6): a grade, note, rating or imported row carries the identity that wrote it — the
sign-in, else the rater name the tab chose, else the local operator `local` — and the audit names the same one. A
rater column in an import is honoured only for the local operator, and the import says so; `machine` and `implicit`
are reserved (retrieval.judgments.identity)."""
from __future__ import annotations

import json

import pytest
from apphelpers import demo_app_env, open_page
from conftest import U1

from retrieval.access import Access, AccessDenied
from retrieval.judgments import Case, CaseQuery, Judgment, JudgmentStore, query_note, set_query_note
from retrieval.judgments.exchange import import_ratings
from retrieval.judgments.identity import writer
from retrieval.types import Scope
from retrieval.workspace.audit import AuditLog

Q = "refund for invoice INV-8842"
MAYA = Access("maya@example.com", write=True, grade=True)
LOCAL = Access("local", write=True, grade=True)  # no sign-in configured


def _store(tmp_path) -> JudgmentStore:
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.set_grade(U1, Q, "inv", 1, rater="bob")
    return js


def _rows(*rows) -> str:
    return "".join(json.dumps({"qid": "q1", **r}) + "\n" for r in rows)


FILE = _rows({"trace_id": "inv", "rater": "bob", "grade": 3}, {"trace_id": "a", "rater": "machine", "grade": 2},
             {"trace_id": "b", "rater": "implicit", "grade": 0}, {"trace_id": "c", "grade": 2})


def _grades(js) -> set:
    return {(j.trace_id, j.who, j.grader, j.grade) for j in js.judgments()}


def _last_grade_actor(uri: str) -> str:
    return next(e.actor for e in AuditLog(uri).entries(50) if e.action == "grade")


def test_a_signed_in_import_is_stored_under_the_sign_in_and_says_the_rater_column_was_ignored(tmp_path):
    js = _store(tmp_path)
    rep = import_ratings(js, "c", FILE, access=MAYA)
    assert rep.notes == ("rater column ignored: grades stored as maya@example.com (only the local operator, "
                         "without sign-in, imports as others)",)
    assert rep.raters == ("maya@example.com",) and rep.imported == 4 and rep.errors == ()
    assert _grades(js) == {("inv", "bob", "human", 1),  # bob's grade is bob's: untouched
                           ("inv", "maya@example.com", "human", 3), ("a", "maya@example.com", "human", 2),
                           ("b", "maya@example.com", "human", 0), ("c", "maya@example.com", "human", 2)}
    assert _last_grade_actor(js.uri) == "maya@example.com"  # the audit names the one the grades name


def test_the_local_operator_keeps_the_files_raters_but_never_the_reserved_ones(tmp_path):
    js = _store(tmp_path)
    rep = import_ratings(js, "c", FILE + _rows({"trace_id": "d", "rater": "x", "grader": "machine", "grade": 1}),
                         access=LOCAL, rater="ana")
    assert rep.notes == () and rep.raters == ("ana", "bob") and rep.imported == 2
    assert [(e.line, e.reason.split(";")[0]) for e in rep.errors] == [
        (2, "rater name 'machine' is reserved for the machine judge"),
        (3, "rater name 'implicit' is reserved for grades from logged feedback"),
        (5, "a machine grade cannot be imported: only the machine judge or a log import writes those")]
    assert _grades(js) == {("inv", "bob", "human", 3), ("c", "ana", "human", 2)}  # a row without a rater: the tab's


def test_the_store_refuses_a_person_writing_as_someone_else_or_as_a_reserved_rater(tmp_path):
    js = _store(tmp_path)
    with pytest.raises(AccessDenied, match="maya@example.com may write grades and notes only as maya@example.com, "
                                           "not as 'bob'"):
        js.set_grade(U1, Q, "inv", 3, access=MAYA, rater="bob")
    with pytest.raises(AccessDenied):
        js.add_judgments([Judgment(U1, Q, "x", 2, "human", "api", rater="implicit")], access=MAYA)
    for name in ("machine", "implicit"):
        with pytest.raises(ValueError, match=f"rater name '{name}' is reserved"):
            js.set_grade(U1, Q, "x", 2, rater=name)  # the local operator neither
    with pytest.raises(ValueError, match="a machine grade is stored under rater 'machine', not 'bob'"):
        js.add_judgments([Judgment(U1, Q, "x", 2, "machine", "llm", rater="bob")])
    assert _grades(js) == {("inv", "bob", "human", 1)}
    assert js.set_grade(U1, Q, "x", 2, access=MAYA).who == "maya@example.com"  # no name given: the sign-in
    assert js.set_grade(U1, Q, "y", 2).who == "local"  # local use, no name chosen: the local operator
    assert writer(MAYA, "bob") == "maya@example.com" and writer(LOCAL, "ana") == "ana" and writer(None) == "local"


def test_a_note_carries_its_writer(tmp_path):
    js = _store(tmp_path)
    assert set_query_note(js, U1, Q, "two tickets share the number", access=MAYA).author == "maya@example.com"
    with pytest.raises(AccessDenied):
        set_query_note(js, U1, Q, "x", access=MAYA, author="bob")
    assert query_note(js, U1, Q).author == "maya@example.com"
    assert _last_grade_actor(js.uri) == "maya@example.com"
    assert set_query_note(js, U1, Q, "y", author="ana").author == "ana"
    assert _last_grade_actor(js.uri) == "ana"


# ---------------------------------------------------------------- item 6: Inspect's grades and their audit
PRIYA = Scope("user", "priya")
QUERY = "what is the status of my ticket FX-209847"


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "identity")


@pytest.mark.parametrize("params, who", [({}, "local"), ({"rater": "maya"}, "maya")])
def test_a_grade_made_in_inspect_and_its_audit_name_the_same_rater(demo_env, params, who):
    at = open_page("pages/2_Inspect.py", 90, i_q=QUERY, i_scope="user:priya", **params)
    groups = [b for b in at.button_group if b.proto.label.startswith("#")]
    target = at.session_state["i_result"][1].traces[2 if params else 1].id
    groups[2 if params else 1].set_value(2).run()
    assert not at.exception
    mine = {j.trace_id: j.grade for j in JudgmentStore(demo_env).ratings(PRIYA, QUERY) if j.who == who}
    assert mine.get(target) == 2
    assert "human" not in {j.who for j in JudgmentStore(demo_env).ratings(PRIYA, QUERY)}
    assert _last_grade_actor(demo_env) == who


def test_the_cli_import_is_the_local_operators_and_may_name_its_rater(tmp_path, capsys):
    from retrieval.cli.main import main

    js = _store(tmp_path)
    path = tmp_path / "r.jsonl"
    path.write_text(FILE)
    args = ["judge", "import", "c", str(path), "--db", js.uri, "--no-id-check"]
    assert main(args + ["--rater", "machine"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("error: rater name 'machine' is reserved for the machine "
                                                       "judge; a person cannot write as it (pick another name)")
    assert main(args + ["--rater", "ana"]) == 0
    assert json.loads(capsys.readouterr().out)["raters"] == ["ana", "bob"]
    assert _grades(js) == {("inv", "bob", "human", 3), ("c", "ana", "human", 2)}
    assert _last_grade_actor(js.uri) == "local"  # two raters in one write: the local operator wrote it
