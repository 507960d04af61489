"""Inspect's click paths in a real browser (Playwright + Debian's Chromium), as fragments: a stage-table row click
explains that row (and puts it in the address and the copy link) without searching again; a grade click saves,
shows the grade and keeps the grading panel open — also across a slider move, which reruns the whole page.
The timings themselves are scripts/bench_browser.py's (docs/BENCHMARKS.md), never asserted here.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from apphelpers import served_demo
from waits import settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]

SHOTS = Path(os.environ.get("RETRIEVAL_SHOTS_DIR") or Path(__file__).resolve().parent / "artifacts" / "screenshots")
LINK = "/Inspect?i_q=status+of+ticket+FX-209847&i_scope=user%3Apriya"
EXPLAINED = "input[aria-label='Trace id to explain']"
ERRORS = "[data-testid=stException], [data-testid=stAlertContentError]"
TABLE_EVENTS = "[data-testid=stBidiComponentIsolated]"  # [0] live panel, [1] stage table events


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The demo store built with the hashing embedder, served; yields (url, db)."""
    yield from served_demo(tmp_path_factory, "speed")


def open_inspect(browser, url: str):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(90_000)
    page.goto(url + LINK)
    page.locator("table.rt-stages tr[data-pick]").first.wait_for()
    page.locator(".explained").first.wait_for(state="attached")
    page.locator(TABLE_EVENTS).nth(1).wait_for(state="attached")
    # a click before the table's listener is mounted is lost: ui.widgets marks the live listeners on <html>
    page.wait_for_function("() => Number(document.documentElement.dataset.rtTableEvents || 0) > 0")
    settled(page)
    return page


def grading_panel(page):
    return page.locator("[data-testid=stExpander]").filter(
        has=page.locator("summary", has_text="Grade the final list")).first


def test_a_row_click_explains_that_row_without_a_new_search(browser, served):
    url, _ = served
    page = open_inspect(browser, url)
    searched = page.locator("[data-testid=stExpander] summary", has_text="Searched in").first.inner_text()
    for n in (3, 1):
        row = page.locator("table.rt-stages tbody tr[data-pick]").nth(n)
        tid = row.get_attribute("data-pick")
        row.locator(".rt-text").click()
        page.wait_for_function(
            "([sel, id]) => [...document.querySelectorAll(sel)].some(e => e.value === id) && "
            "[...document.querySelectorAll('.explained')].some(e => e.dataset.id === id)", arg=[EXPLAINED, tid])
        page.locator(f"table.rt-stages tr.rt-hot[data-pick='{tid}']").wait_for()  # the table marks it too
        page.wait_for_function("id => location.search.includes('i_id=' + encodeURIComponent(id))", arg=tid)
        page.locator("[data-testid=stPopover] button").first.click()  # the copy link names it as well
        link = page.locator("[data-testid=stCode] code").last
        page.wait_for_function("([e, id]) => e.innerText.includes('i_id=' + encodeURIComponent(id))",
                               arg=[link.element_handle(), tid])
        page.keyboard.press("Escape")
    # No new search: the status of the first search is the same element, with the same time.
    assert page.locator("[data-testid=stExpander] summary", has_text="Searched in").first.inner_text() == searched
    assert page.get_by_text("Re-fused from cached stage lists").count() == 0
    assert page.locator(ERRORS).count() == 0
    page.close()


def test_a_grade_click_saves_and_the_panel_stays_open(browser, served):
    url, db = served
    page = open_inspect(browser, url)
    panel = grading_panel(page)
    panel.locator("summary").click()
    groups = panel.locator("[data-testid=stButtonGroup]")
    groups.first.wait_for()
    for n, grade in ((2, "3"), (3, "1")):
        groups.nth(n).locator("button", has_text=grade).first.click()
        groups.nth(n).locator("[data-testid=stWidgetLabel]").filter(has_text=f"● {grade} ·").wait_for()
        assert panel.locator("details").first.get_attribute("open") is not None  # still open
        assert groups.nth(n + 1).is_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "inspect-grading-1366.png"))  # the panel as a grader sees it
    # A slider move reruns the whole page (a re-fusion): the panel is still open, the grades still shown.
    slider = page.locator("input[type=range][aria-label='Dense weight']")
    slider.focus()
    slider.press("ArrowLeft")
    page.get_by_text("Re-fused from cached stage lists").first.wait_for()
    settled(page)  # the rest of that run (the panel below the table) has landed
    assert panel.locator("details").first.get_attribute("open") is not None
    assert groups.first.is_visible()
    from retrieval.judgments import JudgmentStore
    from retrieval.types import Scope

    stored = JudgmentStore(str(db)).grades(Scope("user", "priya"), "status of ticket FX-209847")["human"]
    assert sorted(stored.values()).count(3) >= 1 and 1 in stored.values()
    assert page.locator(ERRORS).count() == 0
    page.close()
