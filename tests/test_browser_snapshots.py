"""Real browser, Snapshots page: import a case, run two snapshots with different weights, diff them, grade three
results, restart the app (the grades are still there), click into Inspect. Hashing embedder: no model load."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from demostore import copy_demo
from ui.serve import start_app, stop_app
from waits import rerun_after, settled

from retrieval.ingest.demo import JUDGMENTS
from retrieval.judgments import JudgmentStore
from retrieval.types import Scope

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
LONG = 120_000


def wait_text(page, text: str, timeout: int = LONG):
    page.get_by_text(text).first.wait_for(timeout=timeout)


def button(page, text: str):
    return page.locator("[data-testid=stButton] button", has_text=text).first


def slider_to(page, label: str, key: str):
    thumb = page.locator(f'[data-testid=stSidebar] input[type=range][aria-label="{label}"]').first
    thumb.wait_for(state="attached", timeout=LONG)
    thumb.focus(timeout=LONG)
    rerun_after(page, lambda: page.keyboard.press(key), LONG)  # the move reruns the page
    page.wait_for_function(f"document.querySelector('input[aria-label=\"{label}\"]').value == "
                           f"'{'1' if key == 'End' else '0'}'", timeout=LONG)


def open_grading(page):
    """Open the grading expander once the page has settled (a click during a rerun is lost)."""
    settled(page, LONG)
    page.get_by_text("Grade B's top 10 for").first.click()
    page.locator("[data-testid=stButtonGroup]").first.wait_for(state="visible", timeout=LONG)
    settled(page, LONG)


def pick_case(page, name: str):
    page.locator("[data-testid=stSelectbox]", has_text="Case").first.click()
    page.get_by_role("option", name=name).first.click()


def test_snapshots_in_a_real_browser(browser, tmp_path, artifacts):
    db = tmp_path / "db"
    copy_demo(str(db))
    cases = tmp_path / "mini.jsonl"
    rows = [json.loads(line) for line in JUDGMENTS.read_text().splitlines()[:6]]
    for r in rows:  # texts unlike the demo case's: its grades (per scope, query, trace) stay apart
        r["query"] += " please"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc, url = start_app(db, embedder="hashing")
    try:
        page = browser.new_page(viewport={"width": 1600, "height": 3200})
        page.set_default_timeout(LONG)  # a ceiling on a loaded machine, not a wait
        page.goto(f"{url}/Snapshots")
        wait_text(page, "Import a case")
        settled(page, LONG)  # an expander opened during the first run can be drawn closed again
        page.get_by_text("Import a case").first.click()
        page.locator("[data-testid=stFileUploader] input[type=file]").first.set_input_files(str(cases))
        name = page.locator('input[aria-label="Case name"]')
        name.fill("mini")
        rerun_after(page, lambda: name.press("Enter"), LONG)  # an Import click during that run is lost
        button(page, "Import").click()
        wait_text(page, "Case mini: 6 queries")

        label = page.locator('input[aria-label="Label for the next snapshot"]')
        label.fill("even")
        rerun_after(page, lambda: label.press("Enter"), LONG)
        button(page, "Run a snapshot of 6 queries").click()
        wait_text(page, "Snapshot s")
        settled(page, LONG)
        slider_to(page, "Dense weight", "End")
        slider_to(page, "Sparse weight", "Home")
        label.fill("dense-only")
        rerun_after(page, lambda: label.press("Enter"), LONG)
        button(page, "Run a snapshot of 6 queries").click()
        wait_text(page, "dense_weight 0.5 → 1")
        wait_text(page, "Judged traces that moved")
        snaps = JudgmentStore(str(db)).snapshots("mini")
        assert [(s.label, *s.config.settings.strategy.weights) for s in snaps] == [
            ("even", 0.5, 0.5), ("dense-only", 1.0, 0.0)]

        open_grading(page)
        # the caption reads "m05 · “…” · 2/8 graded"
        caption = page.get_by_text("“").filter(has_text=" graded").first.inner_text()
        qid = caption.split()[0]
        query = next(q.query for q in snaps[1].queries if q.qid == qid)
        before = JudgmentStore(str(db)).grades(Scope("user", "maya"), query)["human"]
        ungraded = page.locator("[data-testid=stButtonGroup]", has_text="○ not graded by you")
        n0 = ungraded.count()
        assert n0 >= 3
        for n in range(3):  # grade three ungraded results 3, by mouse
            ungraded.first.get_by_role("radio", name="3", exact=True).click()
            try:
                page.wait_for_function("n => [...document.querySelectorAll('[data-testid=stButtonGroup]')]"
                                       ".filter(e => e.innerText.includes('○ not graded by you')).length === n",
                                       arg=n0 - n - 1, timeout=LONG)
            except PlaywrightTimeout as e:
                page.screenshot(path=str(artifacts / "snapshots-fail.png"), full_page=True)
                stored = JudgmentStore(str(db)).grades(Scope("user", "maya"), query)["human"]
                raise AssertionError((n0, n, ungraded.count(), stored, before)) from e
        page.screenshot(path=str(artifacts / "snapshots.png"), full_page=True)
        after = JudgmentStore(str(db)).grades(Scope("user", "maya"), query)["human"]
        new = {t: g for t, g in after.items() if t not in before}
        assert list(new.values()) == [3, 3, 3]
    finally:
        stop_app(proc)

    proc, url = start_app(db, embedder="hashing")  # a restart: nothing in memory survives
    try:
        page = browser.new_page(viewport={"width": 1600, "height": 3200})
        page.set_default_timeout(LONG)  # a ceiling on a loaded machine, not a wait
        page.goto(f"{url}/Snapshots")
        wait_text(page, "AgentOS (the seed)")  # the default case, demo, opens on the two snapshots build-demo ships
        pick_case(page, "mini")
        wait_text(page, "dense_weight 0.5 → 1")
        wait_text(page, "Judged traces that moved")
        open_grading(page)
        # the three grades survived the restart, shown on their widgets
        assert page.locator("[data-testid=stButtonGroup]", has_text="● 3 · perfect").count() >= 3
        assert page.locator("[data-testid=stButtonGroup]", has_text="○ not graded by you").count() == n0 - 3
        page.get_by_text("with B's configuration").first.click()
        page.wait_for_url("**/Inspect?**", timeout=LONG)
        q = page.locator('input[aria-label="Query"]').first
        q.wait_for(timeout=LONG)
        assert q.input_value() == query
        from urllib.parse import parse_qs, urlparse  # the knobs are inside the link's one settings field
        assert "dense_weight=1.0," in parse_qs(urlparse(page.url).query)["i_settings"][0]
    finally:
        stop_app(proc)
