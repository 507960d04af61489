"""Presenter mode's optional live step in a real browser (issue 35, item 5), on the demo store built with the real
embedder (all-MiniLM-L6-v2: with it the meaning search misses ticket FX-209847, as the step says).

On the identifier step, "Try it yourself" shows the balance: at the keyword end the ticket note is #1, at the meaning
end it is out of the top five — exactly the library's lists for those weights — re-fused in the browser as the slider
moves, and the arrow keys move the slider without stepping through the story. A screenshot at 1366 px.
"""
from __future__ import annotations

import pytest

from test_browser_refuse import ERRORS, SHOTS

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
QUERY, SCOPE, TARGET = "status of ticket FX-209847", "user:priya", "priya-lens-repair"
PV = ".pv"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from demostore import copy_demo
    from ui.serve import start_app, stop_app

    db = tmp_path_factory.mktemp("present_live") / "db"
    copy_demo(db, "minilm")
    proc, url = start_app(db, embedder="minilm")
    yield url, db
    stop_app(proc)


def library_rank(db, dense: float) -> int:
    """The ticket note's rank in the step's final top 5 at this balance (0: not there), by the library."""
    from retrieval.models.registry import make_embedder
    from retrieval.pipeline.assemble import reweight
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.retrievers import run_config
    from retrieval.types import Scope
    from retrieval.workspace import Workspace

    ws = Workspace(str(db), embedder=make_embedder("minilm"))
    result, _ = run_config(ws, PipelineConfig(), QUERY, Scope.parse(SCOPE))
    ids = reweight(result, dense_weight=dense, sparse_weight=1 - dense).ids[:5]
    return ids.index(TARGET) + 1 if TARGET in ids else 0


def drag_to(page, fraction: float) -> None:
    slider = page.locator("input[aria-label='Balance between keyword search and meaning search']")
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    value = float(slider.input_value()) / 100
    page.mouse.move(box["x"] + 8 + (box["width"] - 16) * value, y)  # on the thumb
    page.mouse.down()
    page.mouse.move(box["x"] + 1 + (box["width"] - 2) * fraction, y, steps=10)
    page.mouse.up()


def test_the_audience_drags_the_balance_and_the_ticket_note_flips(browser, served):
    url, db = served
    keyword, meaning = library_rank(db, 0.0), library_rank(db, 1.0)
    assert keyword == 1 and meaning == 0  # the flip this step shows (the real embedder misses the code)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(120_000)
    page.goto(url + "/Present")
    page.get_by_text("Step 1 of").wait_for()
    page.get_by_text("Try it yourself: slide the balance").click()
    page.locator(f"{PV}[data-balance='50']").wait_for()
    drag_to(page, 1.0)
    page.locator(f"{PV}[data-balance='100'][data-target-rank='0']").wait_for()
    say = page.locator(".pv-say").inner_text()
    assert say == "Almost all meaning search: the note this step is about is not in the top 5.", say
    page.locator(".pv-say").scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "present-live-meaning-1366.png"))
    drag_to(page, 0.0)
    page.locator(f"{PV}[data-balance='0'][data-target-rank='{keyword}']").wait_for()
    assert page.locator(".pv-say").inner_text() == ("Almost all keyword search: the note this step is about comes out "
                                                    "on top.")
    assert page.locator(".pv-target .pv-how").inner_text() .endswith("★ the one this step is about")
    page.screenshot(path=str(SHOTS / "present-live-keyword-1366.png"))
    slider = page.locator("input[aria-label='Balance between keyword search and meaning search']")
    slider.focus()
    page.keyboard.press("ArrowRight")  # moves the slider; the page's → (next step) must not fire
    page.locator(f"{PV}[data-balance='5']").wait_for()
    assert page.get_by_text("Step 1 of").count() == 1
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.locator(ERRORS).count() == 0
    page.close()
