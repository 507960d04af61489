"""The live panel's case mode and presenter mode's live step in a real browser (issue 35, items 3 and 5).

Case mode: on Inspect, choosing the demo case sends its 45 queries once; dragging the dense weight re-fuses every one
in the browser and the case's mean nDCG@10 and recall@10 become exactly the library's for the new weight
(`retrieval.judgments.live`), with the queries that win and lose listed, and no websocket message between press and
release; letting go saves the setting and the change against it returns to ±0; a query in the win and loss lists opens
in Inspect with the case still chosen. Screenshots at 1366 px.
"""
from __future__ import annotations


import pytest

from apphelpers import served_demo
from test_browser_refuse import ERRORS, SHOTS, open_inspect, press_and_drag_dense_to_zero

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
CASE_LINE = ".rf-case-metrics"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    yield from served_demo(tmp_path_factory, "refuse_case_browser")


def library_case(db, **knobs) -> dict:
    """The demo case's saved scores under the app's default setting with `knobs` changed (the library's numbers)."""
    from retrieval.judgments.live import case_payload, search_case
    from retrieval.judgments.store import JudgmentStore
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace import Workspace

    ws, js = Workspace(str(db), embedder=HashingEmbedder(384)), JudgmentStore(str(db))
    case = js.case("demo")
    searched = search_case(ws, case, PipelineConfig().with_(**knobs))
    return case_payload(case, searched, js.qrels(case))["saved"]


def shown(page, attr: str) -> float:
    return float(page.locator(f"{CASE_LINE} [{attr}]").get_attribute(attr))


def choose_case(page) -> None:
    page.locator("[data-testid=stSelectbox]", has_text="Case-wide metric").click()
    page.get_by_role("option", name="case demo").click()
    page.locator(".rf[data-mode=case]").wait_for()
    page.locator(CASE_LINE).wait_for()
    page.locator(".rf-status", has_text="The saved setting.").wait_for()


def test_a_drag_moves_the_case_mean_in_the_browser_and_release_saves(browser, served):
    url, db = served
    page, frames = open_inspect(browser, url)
    choose_case(page)
    saved = library_case(db)
    assert abs(shown(page, "data-ndcg") - saved["ndcg"]) <= 1e-9
    assert abs(shown(page, "data-recall") - saved["recall"]) <= 1e-9
    assert "45 graded of 45 queries" in page.locator(".rf-mode[data-mode=case]").inner_text()
    want = library_case(db, dense_weight=0.0)
    assert abs(want["ndcg"] - saved["ndcg"]) > 1e-3  # the drag must move the mean for this test to mean anything
    sent_at_press = press_and_drag_dense_to_zero(page, frames)
    page.wait_for_function("want => [...document.querySelectorAll('*')].filter(e => e.shadowRoot).some(h => {"
                           "const e = h.shadowRoot.querySelector('.rf-case-metrics [data-ndcg]');"
                           "return e && Math.abs(Number(e.dataset.ndcg) - want) <= 1e-9; })", arg=want["ndcg"])
    assert abs(shown(page, "data-recall") - want["recall"]) <= 1e-9
    status = page.locator(".rf-status").inner_text()
    assert status.startswith("Re-fused the case's 45 queries in your browser in "), status
    delta = f"{want['ndcg'] - saved['ndcg']:+.3f}".replace("-", "−")
    assert f"({delta} vs saved)" in page.locator(CASE_LINE).inner_text()
    moved = page.locator(".rf-case-loses li, .rf-case-wins li")
    assert moved.count() > 0 and "nDCG" in moved.first.inner_text() and "→" in moved.first.inner_text()
    assert len(frames) == sent_at_press  # nothing went to the server while the button was down
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "inspect-live-case-dragging-1366.png"))
    page.mouse.up()
    page.wait_for_function("() => (new URLSearchParams(location.search).get('i_settings') || '')"
                           ".includes('dense_weight=0.0,')")  # links carry the settings' canonical string
    page.locator(".rf-status", has_text="The saved setting.").wait_for()
    page.locator(CASE_LINE, has_text="(±0.000 vs saved)").wait_for()  # the saved setting is now dense weight 0
    assert abs(shown(page, "data-ndcg") - want["ndcg"]) <= 1e-9
    page.locator(".rf-mode[data-mode=query]").click()  # back to this query's table, no server call
    page.locator("table.rf-final tr[data-id]").first.wait_for()
    page.locator(".rf-mode[data-mode=case]").click()
    # A step not yet let go (an input event, no change event): the lists fill; a listed query opens in Inspect.
    page.locator("input[data-knob=dense_weight]").evaluate(
        "e => { e.value = '1'; e.dispatchEvent(new Event('input', { bubbles: true })); }")
    link = page.locator(".rf-case-loses a.rf-cq, .rf-case-wins a.rf-cq").first
    title = link.get_attribute("title")
    query = title.removeprefix("Open in Inspect: ").rsplit(" (", 1)[0]
    assert "i_q=" in link.get_attribute("href")
    link.click()
    page.wait_for_function("q => [...document.querySelectorAll('input[aria-label=Query]')].some(e => e.value === q)",
                           arg=query)
    page.locator(".rf[data-mode=query]").wait_for()
    page.locator(".rf-mode[data-mode=case]", has_text="Case demo").wait_for()  # the case stays chosen
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.locator(ERRORS).count() == 0
    page.close()
