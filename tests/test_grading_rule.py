"""One grading rule: every page and ui module asks `may_grade` / `can_grade` (retrieval/judgments/store.py) whether a
visitor may grade, never an `Access`'s `grade` field — which alone says nothing about a visitor who may write outside
demo mode. Checked two ways: an AST walk over the files on disk (a new page is covered without anyone listing it),
and the pages themselves for such a writer (AppTest)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.access import Access
from retrieval.judgments.store import JudgmentStore, may_grade
from retrieval.replay import QueryLog

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120
# A name that holds a visitor's Access in the UI (`acc = page_guard()`, `access: Access`); anything else spelled
# `x.grade` is a judgment's or a moved row's grade.
ACCESS_NAMES = {"acc", "access", "visitor"}
ACCESS_CALLS = {"page_guard", "session_access", "resolve", "current_access"}


def ui_files() -> list[Path]:
    """app.py, every page and every ui module, as they are on disk."""
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]


def _holds_access(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):  # self.access, st.session_state.acc
        return node.attr in names
    if isinstance(node, ast.Call):  # session_access().grade
        f = node.func
        return (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") in ACCESS_CALLS
    return False


def access_names(tree: ast.Module) -> set[str]:
    """ACCESS_NAMES, plus any parameter annotated `Access` and any name bound to a call that returns one."""
    names = set(ACCESS_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None and "Access" in ast.unparse(node.annotation):
            names.add(node.arg)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and _holds_access(node.value, set()):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def grade_reads(path: Path) -> list[str]:
    """Where `path` reads an Access's `grade` field: `acc.grade`, `getattr(acc, "grade")` ("file:line: code")."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    names = access_names(tree)
    return [f"{where}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree) if _reads_grade(node, names)]


# An Access's permission fields, each asked only through its one rule: `grade` through `may_grade`/`can_grade`,
# `write` through `retrieval.access.may_write` (which also says no to a denied visitor and in demo mode).
PERMISSIONS = {"grade", "write"}


def _reads_grade(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in PERMISSIONS and _holds_access(node.value, names)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and (node.args[1].value == "grade" or (node.args[1].value in PERMISSIONS
                                                   and _holds_access(node.args[0], names))))


def test_no_page_or_ui_module_reads_the_grade_permission_itself():
    files = ui_files()
    assert ROOT / "pages" / "6_Snapshots.py" in files and ROOT / "ui" / "replay.py" in files
    found = [hit for f in files for hit in grade_reads(f)]
    assert not found, ("these read an Access's `grade` or `write` field instead of its one rule; call "
                       "ui.grading.can_grade(access) (judgments.store.may_grade) or retrieval.access.may_write:\n"
                       + "\n".join(found))


def test_the_walk_finds_each_spelling_it_forbids(tmp_path):
    """The walk itself can fail: each way of reading the field is caught, a judgment's grade is not."""
    sample = tmp_path / "sample.py"
    sample.write_text("acc = page_guard()\nx = acc.grade\ndef f(who: Access):\n    return who.grade\n"
                      "y = getattr(access, 'grade', False)\nz = session_access().grade\nok = [j.grade for j in js]\n")
    assert sorted(int(h.split(":")[1]) for h in grade_reads(sample)) == [2, 4, 5, 6]
    sample.write_text("acc = page_guard()\nx = acc.write\ny = getattr(access, 'write', False)\nst.write('x')\n"
                      "f.write('x')\n")
    assert sorted(int(h.split(":")[1]) for h in grade_reads(sample)) == [2, 3]


WRITER = Access("writer@example.com", None, write=True, grade=False)  # may write, no grade flag, not read-only


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    gen = demo_app_env(tmp_path_factory, "grading_rule")
    path = next(gen)
    line = json.dumps({"timestamp": "2026-03-03T12:00:00+00:00", "query": "status of ticket FX-209847",
                       "scope": "user:priya", "results": [{"id": "priya-lens-repair", "score": 0.9}]})
    assert QueryLog(path).import_lines([line]).added == 1
    yield path
    next(gen, None)


@pytest.fixture
def as_writer(monkeypatch):
    import ui.access

    assert may_grade(WRITER) and not WRITER.grade  # the visitor the old pages got wrong
    monkeypatch.setattr(ui.access, "session_access", lambda: WRITER)


def test_a_writer_without_the_grade_flag_grades_on_snapshots(db, as_writer):
    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert not at.exception, at.exception
    controls = [c for c in at.get("button_group") if c.proto.label.startswith("#")]  # Grade B's top 10
    assert controls and not [c.proto.label for c in controls if c.proto.disabled]


def makes_a_case(at, db: str, box: str, button: str, name: str) -> None:
    """The page offers its case control (`box`, `button`), and a click stores the case `name` with the ticket query."""
    assert not at.exception, at.exception
    assert [b.key for b in at.button if b.key == button], f"the page hides its case button {button!r}"
    at.text_input(key=box).input(name).run()
    at.button(key=button).click().run()
    assert not at.exception, at.exception
    assert [q.query for q in JudgmentStore(db).case(name).queries] == ["status of ticket FX-209847"]


def test_a_writer_without_the_grade_flag_makes_a_case_on_the_log_page(db, as_writer):
    makes_a_case(open_page("pages/8_Log.py", TIMEOUT), db, "l_case", "l_make_case", "writer-case")


DEMO_GRADER = Access("demo-visitor", None, grade=True, read_only=True)  # demo mode, the operator allows grading


@pytest.fixture
def as_demo_grader(monkeypatch):
    import ui.access

    assert may_grade(DEMO_GRADER) and not DEMO_GRADER.write  # cases are grading writes: the store allows them
    monkeypatch.setattr(ui.access, "session_access", lambda: DEMO_GRADER)


def test_a_demo_visitor_allowed_to_grade_adds_to_a_case_on_inspect(db, as_demo_grader):
    """Home tells this visitor "grading, query notes and cases stay on": Inspect offers "Add to case" and it saves."""
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q="status of ticket FX-209847", i_scope="user:priya")
    makes_a_case(at, db, "i_g_case_name", "i_g_add_case", "demo-grader-case")


def test_a_demo_visitor_allowed_to_grade_may_import_a_case_on_snapshots(db, as_demo_grader):
    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert not at.exception, at.exception
    assert not [c.value for c in at.caption if "Importing cases needs" in c.value]
    assert [r for r in at.radio if r.key == "s_imp_fmt"], "Snapshots hides the case import from a demo grader"
