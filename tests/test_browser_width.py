"""Nothing in the main area scrolls sideways at 1366 px or at 1920 px, on any page (issue 35, items 6 and 7).

The pages are the ones on disk (`app.py` and `pages/*.py`, the list the non-interference test walks), so a new
page is checked with no edit here. Each is opened on the demo store (hashing embedder) and driven, with the fewest
clicks, to show its tables: Compare's two lists and its labelled-set table, Tune's evaluation, Snapshots'
comparison, Facts' table, Inspect's explanation with every expander of its notes open, Judge's queue, the Log
after an import. Then, with every expander in the main area open and each tab shown in turn, no element inside
`[data-testid=stMain]` whose overflow-x is auto or scroll is wider inside than its box, no data grid's columns are
wider than the grid, no element sticks out of the main column, and the page itself does not scroll sideways.
Waits are on texts and on the app's "not running" state, never on the clock. Screenshots (the whole main area)
go to tests/artifacts/screenshots/width (RETRIEVAL_SHOTS_DIR moves them).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from apphelpers import ROOT, served_demo

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]

PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
SIZES = [(1366, 900), (1920, 1080)]
LONG = 240_000
SHOTS = Path(os.environ.get("RETRIEVAL_SHOTS_DIR") or Path(__file__).resolve().parent / "artifacts" / "screenshots")
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
# The offenders in the main area, as short descriptions (an empty list: nothing scrolls sideways).
OVERFLOW_JS = (Path(__file__).resolve().parent / "js" / "overflow.js").read_text(encoding="utf-8")
LOG_LINES = [{"timestamp": "2025-09-01T12:00:00+00:00", "query": "washing machine error code", "scope": "user:maya",
              "results": [{"id": "maya-washer-error", "score": 0.91}, {"id": "maya-washer-order", "score": 0.52}],
              "feedback": "up"},
             {"timestamp": "2025-09-01T12:05:00+00:00", "query": "status of ticket FX-209847", "scope": "user:priya",
              "results": [{"id": "priya-lens-repair", "score": 0.9}]}]


def url_path(path: str) -> str:
    """Streamlit's address of a page file: `pages/3_Compare.py` → `Compare`, `app.py` → the root."""
    return "" if path == "app.py" else re.sub(r"^\d+_", "", Path(path).stem)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The demo store (its case `demo` and two snapshots) plus an imported query log, served."""
    from retrieval.replay.store import QueryLog

    gen = served_demo(tmp_path_factory, "width")
    url, db = next(gen)
    assert QueryLog(str(db)).import_lines([json.dumps(r) for r in LOG_LINES]).added == len(LOG_LINES)
    yield url
    next(gen, None)


def settle(page, text: str | None = None) -> None:
    """The script has run (and `text` is on screen): the app's own state, never a fixed wait."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if text:
        page.get_by_text(text).locator("visible=true").first.wait_for(timeout=LONG)
    page.locator(IDLE).wait_for(state="attached", timeout=LONG)
    # Every element has replaced its loading skeleton and every data grid on screen has drawn its scroller: both
    # come after the script has finished (a widget's, a grid's and a chart's code loads on first use).
    undrawn = ("() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stDataFrame], "
               "[data-testid=stMain] [data-testid=stSkeleton]')].filter(d => d.checkVisibility() && "
               "(d.dataset.testid === 'stSkeleton' || !d.querySelector('.dvn-scroller')))")
    try:
        page.wait_for_function(f"() => !({undrawn})().length", timeout=LONG)
    except PlaywrightTimeout:
        raise AssertionError("never drawn: " + str(page.evaluate(f"() => ({undrawn})().map(d => d.outerHTML"
                                                                        ".slice(0, 400))"))) from None
    laid_out(page)


# A grid in a tab that was hidden keeps the width it had there (50 px) until its resize observer has run and React
# has drawn it again, a frame or more after the tab shows: the widths of the grids on screen, once they have stayed
# the same for three frames in a row and none is as narrow as that.
STILL_JS = """() => {
  const grids = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stDataFrame]')]
    .filter(d => d.checkVisibility()).map(d => d.getBoundingClientRect().width);
  const now = grids.join(';');
  const s = window.__still || (window.__still = {last: null, same: 0});
  s.same = now === s.last ? s.same + 1 : 0;
  s.last = now;
  return s.same >= 3 && !grids.some(w => w < 60);  // no grid has a column's room: still the hidden tab's 52 px
}"""


def laid_out(page) -> None:
    """Every data grid on screen has the width of its place on the page (no grid is measured mid-resize)."""
    page.evaluate("() => { window.__still = null; }")
    page.wait_for_function(STILL_JS, polling="raf", timeout=LONG)


def button(page, text: str):
    return page.locator("[data-testid=stMain] [data-testid=stButton] button", has_text=text).first


def pick(page, label: str, option: str) -> None:
    page.locator("[data-testid=stMain] [data-testid=stSelectbox]", has_text=label).first.click()
    page.get_by_role("option", name=option).first.click()


# ---------------------------------------------------------------- per page: the clicks that show its tables
# Each yields a name for every state to check (after waiting for it); a page not listed is checked as it opens.
def as_opened(page):
    settle(page)
    yield "as opened"


def home(page):
    settle(page, "Try an example")
    yield "home"


def inspect(page):
    page.locator("table.rt-stages tr[data-pick]").first.wait_for(timeout=LONG)
    page.locator(".explained").first.wait_for(state="attached", timeout=LONG)
    settle(page, "Rank and score per stage")
    yield "explained"


def compare(page):
    settle(page, "Type a query to compare A and B")
    query = page.get_by_label("Query", exact=True)
    query.fill("status of ticket FX-209847")
    query.press("Enter")
    settle(page, "Entered B's top-k")
    pick(page, "Scope", "user:priya")
    settle(page, "nDCG@10 (B)")
    yield "one query"
    page.locator("[data-testid=stMain] [data-testid=stRadio] label", has_text="a labelled set").click()
    button(page, "labelled queries").click()
    settle(page, "Click a query to open it in Inspect")
    yield "labelled set"


def tune(page):
    settle(page, "Evaluate on labelled queries")
    button(page, "Evaluate").click()
    settle(page, "Best of the search")
    yield "evaluated"


def facts(page):
    settle(page, "Injected by the last query")
    yield "facts"
    table = page.locator("[data-testid=stMain] [data-testid=stDataFrame]").first
    table.scroll_into_view_if_needed()  # below the chart: a click outside the viewport reaches nothing
    grid = table.bounding_box()
    page.mouse.click(grid["x"] + 17, grid["y"] + 35 + 17)  # the first row's selection box: its whole fact below
    settle(page, "The fact clicked")
    yield "a fact clicked"


def snapshots(page):
    settle(page, "Snapshots of this case")
    page.get_by_text("B − A").first.wait_for(timeout=LONG)
    settle(page)
    yield "comparison"


def judge(page):
    settle(page, "Start judging")
    button(page, "Start judging").click()
    settle(page, "Stop judging")
    yield "judging"


def log(page):
    settle(page, "matching logged queries")
    yield "log"


SHOW = {"app.py": home, "pages/2_Inspect.py": inspect, "pages/3_Compare.py": compare, "pages/4_Tune.py": tune,
        "pages/5_Facts.py": facts, "pages/6_Snapshots.py": snapshots, "pages/7_Judge.py": judge,
        "pages/8_Log.py": log}
ADDRESS = {"pages/2_Inspect.py": "?i_q=washing+machine+error&i_scope=user%3Amaya&i_id=maya-washer-error-again"}


def opened(page) -> None:
    """Open every collapsed expander of the main area (their notes and tables are what must fit too)."""
    closed = "[data-testid=stMain] [data-testid=stExpander] details:not([open])"
    for summary in page.locator(f"{closed} > summary").element_handles():
        if summary.is_visible():  # not one in a tab that is not shown
            summary.click()
    page.wait_for_function(f"() => ![...document.querySelectorAll('{closed}')].some(d => d.checkVisibility())",
                           timeout=LONG)
    settle(page)


def offenders(page) -> list:
    """What scrolls sideways now, once each tab set of the main area has shown each of its tabs."""
    found = page.evaluate(OVERFLOW_JS)
    tabs = page.locator("[data-testid=stMain] [role=tab]")
    for n in range(tabs.count()):
        tab = tabs.nth(n)
        tab.click()
        page.locator("[data-testid=stMain] [role=tab][aria-selected=true]", has_text=tab.inner_text()).wait_for()
        settle(page)
        opened(page)
        found += [f"tab {tab.inner_text()!r}: {o}" for o in page.evaluate(OVERFLOW_JS)]
    return found


def shoot(page, name: str) -> None:
    """The whole main area in one picture (Streamlit scrolls inside its own box: the viewport grows to fit)."""
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(height + 40, 12_000))})
    settle(page)
    (SHOTS / "width").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "width" / f"{name}.png"), timeout=LONG)
    page.set_viewport_size(size)


def resized(page, size: tuple[int, int]) -> None:
    """The page at `size`, laid out again: two frames drawn after the resize, then the app settled."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    settle(page)


@pytest.mark.parametrize("path", PAGES)
def test_nothing_in_the_main_area_scrolls_sideways(browser, served, path):
    """Each page is opened and driven once; every state it reaches is checked at each width in turn (a resize lays
    the page out again as a fresh load at that width would: both widths are above the sidebar's breakpoint)."""
    page = browser.new_page(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    page.set_default_timeout(LONG)
    try:
        page.goto(f"{served}/{url_path(path)}{ADDRESS.get(path, '')}")
        page.locator(IDLE).wait_for(state="attached", timeout=LONG)
        bad = {}
        for state in SHOW.get(path, as_opened)(page):
            for size in SIZES:
                resized(page, size)
                opened(page)
                found = offenders(page)
                if found:
                    bad[f"{state} at {size[0]}×{size[1]}"] = found
                shoot(page, f"{url_path(path) or 'Home'}-{re.sub(r'[^a-z]+', '-', state)}-{size[0]}")
            resized(page, SIZES[0])
        assert bad == {}, f"{path} scrolls sideways:\n" + json.dumps(bad, indent=1, ensure_ascii=False)
    finally:
        page.close()


def test_every_page_action_names_a_page_on_disk():
    assert set(SHOW) | set(ADDRESS) <= set(PAGES)
    assert "pages/2_Inspect.py" in PAGES and len(PAGES) == 1 + len(list((ROOT / "pages").glob("*.py")))
