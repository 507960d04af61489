"""Integrity of grades, cases and snapshots in a shared store: writers stay in their scopes, concurrent
"add to case" loses nothing, an import never leaves a case without its grades, a damaged table is one
clear error, and every write is audited. Each test fails without its fix."""
from __future__ import annotations

import glob
import subprocess
import sys
import threading

import pytest

from retrieval.access import Access, AccessDenied, ReadOnlyError
from retrieval.judgments import CaseQuery, JudgmentStore
from retrieval.judgments.io import import_case
from retrieval.judgments.store import JudgmentStoreError
from retrieval.types import Scope

TOMAS, PRIYA = Scope("user", "tomas"), Scope("user", "priya")
GRADER = Access(user="tomas@example.com", scopes=frozenset({"user:tomas"}), grade=True)
VIEWER = Access(user="ana@example.com", scopes=frozenset({"user:tomas"}))


def test_a_limited_grader_cannot_grade_or_import_into_another_scope(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.set_grade(PRIYA, "where is my lens?", "priya-lens", 3)
    with pytest.raises(AccessDenied, match="user:priya"):
        js.set_grade(PRIYA, "where is my lens?", "priya-lens", 0, access=GRADER)
    with pytest.raises(AccessDenied):
        import_case(js, "mine", [CaseQuery("q1", "where is my lens?", PRIYA)], {"q1": {"priya-lens": 0}},
                    access=GRADER)
    assert js.grades(PRIYA, "where is my lens?")["human"] == {"priya-lens": 3}
    assert js.find_case("mine") is None
    js.set_grade(TOMAS, "invoice", "tomas-note", 2, access=GRADER)  # in its own scope: fine
    with pytest.raises(ReadOnlyError):
        js.set_grade(TOMAS, "invoice", "tomas-note", 1, access=VIEWER)


def test_a_limited_grader_cannot_add_to_a_case_spanning_other_scopes(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.add_to_case("demo", "where is my lens?", PRIYA)
    with pytest.raises(AccessDenied):
        js.add_to_case("demo", "my invoices", TOMAS, access=GRADER)
    assert len(js.case("demo").queries) == 1
    js.add_to_case("tomas-case", "my invoices", TOMAS, access=GRADER)
    assert [q.query for q in js.case("tomas-case").queries] == ["my invoices"]


def test_two_threads_adding_to_one_case_lose_nothing(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    n = 60

    def add(prefix: str) -> None:
        mine = JudgmentStore(js.uri)  # each session has its own store object, as in the app
        for i in range(n):
            mine.add_to_case("shared", f"{prefix} query {i}", TOMAS)

    threads = [threading.Thread(target=add, args=(p,)) for p in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(js.case("shared").queries) == 2 * n


CHILD = """
import sys
from retrieval.judgments import JudgmentStore
from retrieval.types import Scope
js = JudgmentStore(sys.argv[1])
for i in range(int(sys.argv[3])):
    js.add_to_case("shared", f"{sys.argv[2]} query {i}", Scope("user", "tomas"))
"""


def test_two_processes_adding_to_one_case_lose_nothing(tmp_path):
    uri, n = str(tmp_path / "db"), 40
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, uri, p, str(n)]) for p in ("a", "b")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert len(JudgmentStore(uri).case("shared").queries) == 2 * n


def test_adding_the_same_query_twice_keeps_it_once(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.add_to_case("c", "My invoices", TOMAS)
    js.add_to_case("c", "my  invoices", TOMAS)
    assert len(js.case("c").queries) == 1


def test_an_interrupted_import_leaves_no_case_without_its_grades(tmp_path, monkeypatch):
    js = JudgmentStore(str(tmp_path / "db"))
    queries, qrels = [CaseQuery("q1", "invoice", TOMAS)], {"q1": {"tomas-note": 2}}

    def killed(*a, **kw):
        raise KeyboardInterrupt("killed while writing the grades")

    monkeypatch.setattr(JudgmentStore, "add_judgments", killed)
    with pytest.raises(KeyboardInterrupt):
        import_case(js, "c", queries, qrels)
    monkeypatch.undo()
    assert js.find_case("c") is None  # never a case with 0 grades
    rep = import_case(js, "c", queries, qrels)  # a re-import completes it
    assert (rep.queries, js.qrels("c")) == (1, {"q1": {"tomas-note": 2}})


@pytest.mark.parametrize("damage", ["garbage", "no_versions"])
def test_a_damaged_judgments_table_is_one_clear_error(tmp_path, damage):
    import shutil

    uri = str(tmp_path / "db")
    JudgmentStore(uri).set_grade(TOMAS, "invoice", "tomas-note", 2)
    table = f"{uri}/judgments.lance"
    if damage == "garbage":
        for f in glob.glob(table + "/data/*"):
            with open(f, "wb") as fh:
                fh.write(b"garbage" * 10)
    else:
        shutil.rmtree(table + "/_versions")
    with pytest.raises(JudgmentStoreError, match="judgments table .* is unreadable .* move judgments.lance aside"):
        JudgmentStore(uri).grades(TOMAS, "invoice")


def test_grades_cases_and_snapshots_are_audited(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.set_grade(TOMAS, "invoice", "tomas-note", 2, access=GRADER)
    js.add_to_case("c", "invoice", TOMAS, access=GRADER)
    entries = js.audit.entries()
    assert [(e.action, e.actor, e.scopes) for e in entries[:2]] == [
        ("case", "tomas@example.com", ("user:tomas",)), ("grade", "tomas@example.com", ("user:tomas",))]


def test_a_snapshot_run_needs_write_access_even_where_grading_is_open(tmp_path):
    from retrieval.judgments.model import Snapshot, SnapshotQuery
    from retrieval.pipeline.config import PipelineConfig

    js = JudgmentStore(str(tmp_path / "db"))
    snap = Snapshot("s1", "c", 0.0, PipelineConfig(), (SnapshotQuery("q1", "invoice", TOMAS, {}, {}),), {})
    demo_grader = Access(user="visitor", grade=True, read_only=True)  # RETRIEVAL_MODE=demo with allow_grading
    for who in (demo_grader, GRADER, VIEWER):
        with pytest.raises(ReadOnlyError, match="nothing was saved"):
            js.save_snapshot(snap, access=who)
    writer = Access(user="priya@example.com", scopes=frozenset({"user:priya"}), write=True, grade=True)
    with pytest.raises(AccessDenied, match="user:tomas"):
        js.save_snapshot(snap, access=writer)
    assert js.snapshots() == []
    js.save_snapshot(snap, access=Access(user="tomas@example.com", scopes=frozenset({"user:tomas"}), write=True))
    assert [s.id for s in js.snapshots()] == ["s1"]
