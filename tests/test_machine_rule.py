"""Machine grading has one rule (`retrieval.access.may_write`, asked by `check_machine_grading`): a run
calls a text generator for each ungraded trace and stores grades, so it needs write access outside demo mode and
the snapshot's scopes — asked by `machine_grade` itself (before any generator call), so the CLI, the Snapshots page
and any other caller refuse alike. And where an OpenAI-compatible call goes is asked in one place too
(`ui.panel.openai_server`): in a shared deployment a visitor never types a server address (checked on every page
and ui module on disk: no other text box for a URL)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from retrieval.access import Access, AccessDenied, ReadOnlyError
from retrieval.access import may_write
from retrieval.judgments.machine import machine_grade
from test_judgments import graded_setup

ROOT = Path(__file__).resolve().parent.parent


class Counting:
    """A generator that counts its calls (any call before the refusal would be a leak of cost and text)."""
    name = "counting"

    def __init__(self):
        self.calls = 0

    def generate(self, system: str, prompt: str) -> str:
        self.calls += 1
        return "2"


REFUSED = [(Access("demo", None, grade=True, read_only=True), ReadOnlyError),  # a demo grader: grades, no runs
           (Access("reader", None, grade=True), ReadOnlyError),  # may grade by hand, may not write
           (Access("other", frozenset({"user:someone-else"}), write=True, grade=True), AccessDenied)]


@pytest.mark.parametrize(("access", "error"), REFUSED, ids=["demo-grader", "grader-without-write", "other-scope"])
def test_machine_grade_refuses_before_calling_the_generator(tmp_path, access, error):
    js, snap, texts = graded_setup(tmp_path)
    before = js.grades(snap.queries[0].scope, snap.queries[0].query)
    gen = Counting()
    assert not may_write(access) or error is AccessDenied
    with pytest.raises(error, match="nothing was"):
        machine_grade(js, snap, gen, texts, access=access)
    assert gen.calls == 0
    assert js.grades(snap.queries[0].scope, snap.queries[0].query) == before


def test_a_writer_in_the_snapshots_scopes_machine_grades(tmp_path):
    js, snap, texts = graded_setup(tmp_path)
    writer = Access("writer", frozenset({str(snap.queries[0].scope)}), write=True)
    assert may_write(writer) and may_write(None)
    rep = machine_grade(js, snap, Counting(), texts, access=writer)
    assert (rep.graded, rep.stopped) == (3, None)  # q1's b and c, q2's b (d is not in the store)


def ui_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]


def url_boxes(path: Path) -> list[str]:
    """`text_input` calls whose label names a URL or server, outside `openai_server` ("file:line")."""
    tree = ast.parse(path.read_text(), str(path))
    allowed = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "openai_server"
               for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "text_input" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and any(w in node.args[0].value.lower() for w in ("url", "server", "endpoint", "host")) \
                and id(node) not in allowed:
            out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}")
    return out


def test_no_page_asks_for_a_server_address_but_through_the_one_rule():
    found = [hit for f in ui_files() for hit in url_boxes(f)]
    assert not found, ("these ask a visitor for a server address themselves; call ui.panel.openai_server, which "
                       "shows only the operator's endpoint in a shared deployment:\n" + "\n".join(found))


def test_the_walk_finds_a_server_box(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import streamlit as st\nurl = st.text_input('Server URL', 'http://x')\n"
                      "def openai_server():\n    return st.text_input('Server URL', 'http://y')\n")
    assert url_boxes(sample) == ["sample.py:2"]


@pytest.mark.parametrize("access", [Access("demo", None, grade=True, read_only=True), Access("reader", None),
                                    Access("gone", None, write=True, denied="not on the list")],
                         ids=["demo", "reader", "denied"])
def test_a_log_import_is_refused_by_the_import_itself_and_writes_nothing(tmp_path, access):
    """The Log page and `import-log` share `import_log`, which asks the write rule (`may_write`) before reading."""
    import json

    from retrieval.judgments import JudgmentStore
    from retrieval.replay.store import QueryLog, import_log

    log = QueryLog(str(tmp_path / "db"))
    line = json.dumps({"timestamp": "2026-03-03T12:00:00+00:00", "query": "q", "scope": "user:a",
                       "results": [{"id": "t1", "score": 0.9}], "feedback": "up"})
    assert not may_write(access) and may_write(None)
    with pytest.raises(ReadOnlyError, match="nothing was imported"):
        import_log(log, JudgmentStore(str(tmp_path / "db")), [line], access=access)
    assert log.count() == 0


class StopsAfterOne(Counting):
    """Answers once, then its server is gone."""

    def generate(self, system: str, prompt: str) -> str:
        self.calls += 1
        if self.calls > 1:
            raise ConnectionError("cannot connect to http://127.0.0.1:9")
        return "2"


def test_a_run_that_stops_keeps_its_grades_and_the_audit_names_them(tmp_path):
    """What a stopped run graded is kept, so it is audited as a finished run's grades are: who, how many, where."""
    js, snap, texts = graded_setup(tmp_path)
    writer = Access("writer", None, write=True)
    rep = machine_grade(js, snap, StopsAfterOne(), texts, access=writer)
    assert rep.graded == 1 and rep.stopped and "cannot connect" in rep.stopped
    runs = [e for e in js.audit.entries() if e.action == "grade" and e.detail.startswith("machine")]
    assert [(e.actor, e.traces) for e in runs] == [("writer", 1)], runs
    assert "stopped" in runs[0].detail
