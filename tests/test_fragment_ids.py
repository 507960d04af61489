"""A fragment keeps its id from run to run, on every page (generated from the page list).

Streamlit names a fragment by its function and its position on the page, and drops without a word a rerun request
for a fragment id it no longer holds. A page that draws an element above a fragment on one run and not on the next
(Inspect's search status: drawn on a fresh search, not on a re-fusion) gives the fragment a new id; a click or a
grade the browser sent from the page as the earlier run drew it is then lost. Seen: a grade clicked right after
two live-panel commits, before their answers arrived, was never saved (tests/test_browser_refuse.py holds the
answers back; 5 of 9 runs lost it). Here each page runs twice, then once more after a setting change, and every
run must register the fragments of the first under the same ids. A page whose fragment only exists after an action
(Judge's step, once judging starts) is also run from that state: `OPENED` names the action."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from apphelpers import demo_app_env, open_page

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
TIMEOUT = 60
QUERY, SCOPE = "status of ticket FX-209847", "user:priya"
# Pages whose fragments appear only after an action: the button that opens that state, and how many it registers.
OPENED = {"pages/7_Judge.py": ("j_start", 1)}


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "fragment-ids")


@pytest.fixture
def registered(monkeypatch) -> list[str]:
    """The fragment ids registered, in order, by the runs of the test (AppTest runs the page in this process)."""
    from streamlit.runtime.fragment import MemoryFragmentStorage

    ids: list[str] = []
    real = MemoryFragmentStorage.register

    def register(self, key, fragment, **kw):
        ids.append(key)
        return real(self, key, fragment, **kw)
    monkeypatch.setattr(MemoryFragmentStorage, "register", register)
    return ids


def params(path: str) -> dict[str, str]:
    """The page's own query and scope parameters (its `P = "x_"` prefix), so that it searches."""
    m = re.search(r'^P = "([a-z]+_)"', (ROOT / path).read_text(), re.M)
    return {f"{m.group(1)}q": QUERY, f"{m.group(1)}scope": SCOPE} if m else {}


def a_setting_changed(at) -> None:
    """Move the page's first sidebar slider to another value (a re-fusion on Inspect), if it has one."""
    sliders = [s for s in at.sidebar.slider if isinstance(s.value, float)]
    if sliders:
        s = sliders[0]
        s.set_value(s.min if s.value != s.min else s.max)


def test_every_opened_state_names_a_page():
    assert set(OPENED) <= set(PAGES), set(OPENED) - set(PAGES)


@pytest.mark.parametrize("path", PAGES + [f"{p}#opened" for p in OPENED])
def test_every_run_keeps_each_fragment_id(demo_env, registered, path):
    path, _, opened = path.partition("#")
    at = open_page(path, TIMEOUT, **params(path))
    assert not at.exception, at.exception
    if opened:
        button, count = OPENED[path]
        registered.clear()
        at.button(key=button).click().run()
        assert not at.exception, at.exception
        assert len(registered) == count, f"{path}: opened with {button}, fragments {registered}"
    first = list(registered)
    if path == "pages/2_Inspect.py":
        assert len(first) == 2, first  # the explorer and its grading panel: the test sees them
    for step in ("rerun", "setting"):
        registered.clear()
        if step == "setting":
            a_setting_changed(at)
        at.run()
        assert not at.exception, at.exception
        assert registered == first, f"{path}: after a {step}, fragment ids {registered} != {first}"
