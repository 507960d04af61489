"""The inspector read at laptop and desktop widths, in a real browser (Playwright + Debian's Chromium).

At 1366 × 768 and 1920 × 1080: a known trace's row in the stage table shows its text (query terms marked),
origin and score inside the viewport, with no horizontal scrolling of the table or the page — asserted on
the rendered page (bounding boxes, scroll widths), the expected score computed by the library itself. A
weight change marks what moved (and says it re-fused); a row click explains that row and does not claim a
re-fusion; an exported config imported in a fresh session applies its weights with no error element.
Screenshots go to tests/artifacts/screenshots (`make screenshots` points RETRIEVAL_SHOTS_DIR at docs/screenshots).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from apphelpers import served_demo
from waits import painted, stage_table_listening

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]

SHOTS = Path(os.environ.get("RETRIEVAL_SHOTS_DIR") or Path(__file__).resolve().parent / "artifacts" / "screenshots")
QUERY, SCOPE, TRACE = "status of ticket FX-209847", "user:priya", "priya-lens-repair"
LINK = "/Inspect?i_q=status+of+ticket+FX-209847&i_scope=user%3Apriya"
SIZES = [(1366, 768), (1920, 1080)]
EXPLAINED = "input[aria-label='Trace id to explain']"
ERRORS = "[data-testid=stException], [data-testid=stAlertContentError]"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The demo store built with the hashing embedder, served; yields (url, db)."""
    yield from served_demo(tmp_path_factory, "inspector")


def expected_final(db) -> dict[str, float]:
    """What the library ranks for the query under the default settings: id → final score."""
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.retrievers import run_config
    from retrieval.types import Scope
    from retrieval.workspace import Workspace

    ws = Workspace(str(db), embedder=HashingEmbedder(384))
    result, _ = run_config(ws, PipelineConfig(), QUERY, Scope.parse(SCOPE))
    return dict(result.diagnostics.stage_scores["final"])


def open_inspect(browser, url: str, size: tuple[int, int]):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.set_default_timeout(90_000)
    page.goto(url + LINK)
    page.locator("table.rt-stages tr[data-pick]").first.wait_for()
    return page


def within_viewport(page, locator) -> None:
    locator.scroll_into_view_if_needed()
    box, width = locator.bounding_box(), page.viewport_size["width"]
    assert box is not None and box["width"] > 0 and box["height"] > 0
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (box, width)


def shot(page, name: str) -> None:
    """The whole page at this width (Streamlit scrolls inside its own container: grow the viewport)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    tall = page.evaluate("() => Math.max(...[...document.querySelectorAll('section, div')].map(e => e.scrollHeight))")
    page.set_viewport_size({"width": width, "height": min(max(height, tall + 40), 6000)})
    painted(page)  # drawn at the new size: fonts, images and charts in, then a frame painted
    page.screenshot(path=str(SHOTS / name), full_page=True, timeout=120_000)
    page.set_viewport_size({"width": width, "height": height})


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_known_trace_is_readable_in_the_stage_table_without_horizontal_scrolling(browser, served, size):
    url, db = served
    scores = expected_final(db)
    page = open_inspect(browser, url, size)
    row = page.locator(f"table.rt-stages tr[data-pick='{TRACE}']")
    text, final = row.locator(".rt-text"), row.locator("td[data-stage=final]")
    assert "FX-209847" in text.inner_text()
    assert row.locator(".rt-text mark", has_text="FX").count() >= 1  # query terms marked
    assert final.locator(".rt-score").inner_text() == f"{scores[TRACE]:.4g}"
    assert row.locator(".rt-by").inner_text() in ("both", "BM25", "dense")
    assert final.locator(".rt-rank").inner_text() == str(sorted(scores, key=lambda i: -scores[i]).index(TRACE) + 1)
    for part in (text, final.locator(".rt-rank"), final.locator(".rt-score"), row.locator(".rt-by"),
                 row.locator(".rt-id")):
        within_viewport(page, part)
    # Nothing scrolls sideways: neither the table's box nor the page.
    table = page.locator(".rt-wrap").first
    assert table.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    # Every stage heading is on screen too.
    for stage in ("dense", "sparse", "merged", "reranked", "final"):
        within_viewport(page, page.locator(f"table.rt-stages th[data-sort-stage={stage}]"))
    assert page.locator(ERRORS).count() == 0
    page.locator("table.rt-stages").scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"inspect-stages-{size[0]}.png"))  # exactly what this screen shows
    shot(page, f"inspect-{size[0]}.png")
    page.close()


@pytest.mark.parametrize("link,mark", [
    ("/Inspect?i_q=who+has+been+complaining+about+the+driver+app%3F&i_scope=user%3Amaya&i_reranker=embedding"
     "&i_split_threshold=1.0", ".rt-split"),
    ("/Inspect?i_q=where+do+I+live+now%3F&i_scope=user%3Amaya", ".rt-by-fact")], ids=["split", "fact"])
def test_split_and_fact_marks_are_on_screen_at_1366(browser, served, link, mark):
    url, _ = served
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(90_000)
    page.goto(url + link)
    first = page.locator(f"table.rt-stages tr[data-pick] {mark}").first
    first.wait_for()
    within_viewport(page, first)
    assert ("✂ half" in first.inner_text()) if mark == ".rt-split" else first.inner_text() == "fact"
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.locator(".rt-wrap").first.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    page.close()


def test_a_weight_change_marks_what_moved_and_a_click_explains_without_claiming_a_refusion(browser, served):
    url, _ = served
    page = open_inspect(browser, url, SIZES[0])
    assert page.get_by_text("Re-fused from cached stage lists").count() == 0  # a first search is no re-fusion
    slider = page.locator("input[type=range][aria-label='Dense weight']")
    slider.focus()
    slider.press("Home")  # dense weight 0: only BM25 orders the list, so the embedding's order breaks up
    page.get_by_text("Re-fused from cached stage lists").first.wait_for()
    moved = page.locator("table.rt-stages td.rt-up, table.rt-stages td.rt-down, table.rt-stages td.rt-new")
    moved.first.wait_for()
    assert moved.count() >= 1
    # The rank flow marks them too; it is redrawn by the server's rerun, after the table's in-page repaint.
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot text')]"
                           ".some(t => /▲|▼|new/i.test(t.textContent))")
    shot(page, "inspect-moved-1366.png")

    # A row click explains that row; the marks stay, the re-fusion caption does not.
    row = page.locator("table.rt-stages tbody tr[data-pick]").nth(2)
    tid = row.get_attribute("data-pick")
    stage_table_listening(page)
    row.locator(".rt-text").click()
    page.wait_for_function("([sel, id]) => [...document.querySelectorAll(sel)].some(e => e.value === id)",
                           arg=[EXPLAINED, tid])
    page.locator(f"table.rt-stages tr.rt-hot[data-pick='{tid}']").wait_for()
    assert page.get_by_text("Re-fused from cached stage lists").count() == 0
    assert moved.count() >= 1
    # A click on a stage heading sorts by that stage: the sparse #1 comes first.
    page.locator("table.rt-stages th[data-sort-stage=sparse]").click()
    page.locator("table.rt-stages[data-sort=sparse]").wait_for()
    ids = page.locator(".stage-ids[data-stage=sparse]").get_attribute("data-ids").split(",")
    assert page.locator("table.rt-stages tbody tr[data-pick]").first.get_attribute("data-pick") == ids[0]
    assert page.locator(ERRORS).count() == 0
    page.close()


def test_config_export_then_import_in_a_fresh_session_applies_the_weights(browser, served, tmp_path):
    url, _ = served
    page = open_inspect(browser, url, SIZES[0])
    slider = page.locator("input[type=range][aria-label='Dense weight']")
    slider.focus()
    slider.press("End")
    page.wait_for_function("() => document.querySelector(\"input[aria-label='Dense weight']\")"
                           ".getAttribute('aria-valuetext') === '1.00'")
    page.get_by_text("Re-fused from cached stage lists").first.wait_for()
    with page.expect_download() as dl:
        page.locator("[data-testid=stDownloadButton] button", has_text="Export config").click()
    path = tmp_path / "retrieval-config.json"
    dl.value.save_as(path)
    exported = json.loads(path.read_text())  # the knobs travel as the settings' canonical string (SPEC §19)
    assert "fusion=convex(dense_weight=1.0," in exported["settings"]
    page.close()

    fresh = open_inspect(browser, url, SIZES[0])
    before = fresh.locator("input[type=range][aria-label='Dense weight']").get_attribute("aria-valuetext")
    assert before != "1.00"
    fresh.locator("[data-testid=stFileUploader] input[type=file]").first.set_input_files(str(path))
    fresh.get_by_text("Imported retrieval-config.json").first.wait_for()
    fresh.wait_for_function("() => document.querySelector(\"input[aria-label='Dense weight']\")"
                            ".getAttribute('aria-valuetext') === '1.00'")
    fresh.locator("table.rt-stages tr[data-pick]").first.wait_for()
    assert fresh.locator(ERRORS).count() == 0
    assert fresh.get_by_text("Traceback").count() == 0
    fresh.close()


def test_facts_timeline_reads_dates_as_people_write_them(browser, served):
    url, _ = served
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(90_000)
    page.goto(f"{url}/Facts")
    page.locator("[data-testid=stSelectbox]", has_text="Scope").click()
    page.get_by_role("option", name="user:maya").click()
    plot = page.locator(".js-plotly-plot").first
    plot.locator(".xtick text").first.wait_for()
    # Plotly draws the axes before the traces' text (and may draw again once its margins are known): the labels
    # below are read once the chart holds them and the page is drawn, not at the first tick.
    plot.locator(".scatterlayer text", has_text="Lisbon").first.wait_for(state="attached")
    painted(page)
    ticks = [t.text_content() for t in plot.locator(".xtick text").all()]
    assert ticks and all(re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}", t) for t in ticks), ticks
    labels = " ".join(t.text_content() for t in plot.locator(".scatterlayer text").all())
    assert "Lisbon" in labels and "+00:00" not in labels
    # Every object label lies inside the chart's own box (none cut at its edges).
    box = plot.bounding_box()
    for t in plot.locator(".scatterlayer text").all():
        b = t.bounding_box()
        if b and b["width"]:
            assert box["x"] <= b["x"] and b["x"] + b["width"] <= box["x"] + box["width"] + 1, t.text_content()
            assert box["y"] <= b["y"] and b["y"] + b["height"] <= box["y"] + box["height"] + 1, t.text_content()
    assert page.locator(ERRORS).count() == 0
    shot(page, "facts-1366.png")
    page.close()
