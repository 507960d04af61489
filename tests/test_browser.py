"""Real browser: `streamlit run` on a free port, driven by Playwright in Debian's headless Chromium."""
from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from demostore import copy_demo
from ui.serve import ROOT, free_port, start_app, stop_app
from waits import painted, stage_table_listening, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]


# Tests write pictures to an ignored folder; `make screenshots` points this at docs/screenshots.
SHOTS = Path(os.environ.get("RETRIEVAL_SHOTS_DIR") or Path(__file__).resolve().parent / "artifacts" / "screenshots")
SPLIT_LINK = ("/Inspect?i_q=who+has+been+complaining+about+the+driver+app%3F&i_scope=user%3Amaya"
              "&i_reranker=embedding&i_split_threshold=1.0")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The demo index built with the hashing embedder (the model is not the point here), then served."""

    db = tmp_path_factory.mktemp("browser") / "db"
    copy_demo(str(db))
    proc, url = start_app(db, embedder="hashing")
    yield url
    stop_app(proc)


def wait_text(page, text: str, timeout: int = 90_000):
    page.get_by_text(text).locator("visible=true").first.wait_for(timeout=timeout)


def stage_ids(page, stage: str) -> list[str]:
    loc = page.locator(f".stage-ids[data-stage={stage}]").last
    loc.wait_for(state="attached", timeout=90_000)
    return loc.get_attribute("data-ids").split(",")


def explained(page) -> str:
    return page.locator("input[aria-label='Trace id to explain']").last.input_value()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    painted(page)
    page.screenshot(path=str(SHOTS / name), full_page=True, timeout=120_000)


def test_click_to_explain_links_escalations_and_split_columns(browser, app_url):
    page = browser.new_page(viewport={"width": 1600, "height": 1800})
    page.set_default_timeout(90_000)
    page.goto(app_url)
    wait_text(page, "Try an example")
    shot(page, "home.png")
    page.goto(f"{app_url}/Corpus")
    page.locator("[data-testid=stMetric], [data-testid=stTabs]").first.wait_for()
    shot(page, "corpus.png")

    # Split columns: the merged column shows the stored text, Reranked/Final mark the split with both scores.
    page.goto(app_url + SPLIT_LINK)
    final = stage_ids(page, "final")
    wait_text(page, "Split-on-ambiguous (threshold 1)")
    # Under the stage table: drawn later in that run than the split note above it (a count read here was early).
    page.get_by_text("whole text of").first.wait_for(state="attached")
    page.get_by_text("whole text of").last.click()
    wait_text(page, "vs whole")
    shot(page, "inspect.png")

    # Click the final #3's row of the stage table: that trace is explained and put in the link (once the table's
    # listener is mounted: it mounts when the table comes into view, and a click that scrolled it there was lost).
    stage_table_listening(page)
    page.locator(f"table.rt-stages tr[data-pick='{final[2]}'] .rt-text").click()
    page.wait_for_function("(id) => [...document.querySelectorAll(\"input[aria-label='Trace id to explain']\")]"
                           ".some(e => e.value === id)", arg=final[2])
    wait_text(page, "Rank 3 of 10")
    # the address follows at the end of that run (at load 18 it came after the text)
    page.wait_for_function("id => location.search.includes('i_id=' + encodeURIComponent(id))", arg=final[2])
    assert f"i_id={final[2]}" in page.url

    # Click a point in the rank flow: the first line is the dense #1.
    dense = stage_ids(page, "dense")
    target = next(i for i in dense if i != final[2])
    n = dense.index(target)
    page.locator(".js-plotly-plot .scatterlayer .trace").nth(n).locator("path.point").first.click(force=True)
    page.wait_for_function("(id) => [...document.querySelectorAll(\"input[aria-label='Trace id to explain']\")]"
                           ".some(e => e.value === id)", arg=target)
    shot(page, "inspect-explain.png")

    # Copy link round trip: the link in the popover opens the same view in a new tab.
    page.locator("[data-testid=stPopover] button").first.click()
    code = page.locator("[data-testid=stCode] code").last
    # The link is drawn last in the click's run (after the explained id's box waited for above): wait for it to name
    # the clicked point, as it must (a read before then gets the previous click's link).
    page.wait_for_function("id => { const c = [...document.querySelectorAll('[data-testid=stCode] code')];"
                           " return c.length > 0 && c[c.length - 1].innerText.includes('i_id=' + id); }", arg=target)
    link = code.inner_text().strip()
    assert link.startswith(app_url + "/Inspect?") and "i_v=" in link and "i_settings=preset%3Dhybrid" in link
    assert f"i_id={target}" in link and "openai_base_url" not in link
    other = browser.new_page(viewport={"width": 1600, "height": 1800})
    other.set_default_timeout(90_000)
    other.goto(link)
    assert stage_ids(other, "final") == final
    other.locator("input[aria-label='Trace id to explain']").last.wait_for()
    assert explained(other) == target
    assert other.get_by_text("Ignored link parameter").count() == 0
    other.close()

    # An unknown id says no such trace exists, and shows nothing else about it.
    box = page.locator("input[aria-label='Trace id to explain']").last
    box.fill("no-such-trace")
    box.press("Enter")
    wait_text(page, "No trace with id 'no-such-trace' exists in this store")
    page.get_by_text("Rank and score per stage").wait_for(state="detached")  # stale elements go at the run's end

    # An escalation is a sentence; the code is small print.
    page.goto(f"{app_url}/Inspect?i_q=%21%21%21%3F%3F%3F&i_scope=user%3Amaya")
    wait_text(page, "No query word matched any trace in BM25")
    wait_text(page, "hybrid-retriever:sparse-empty")

    # Compare and Tune.
    page.goto(f"{app_url}/Compare")
    page.get_by_label("Query", exact=True).fill("status of ticket FX-209847")
    page.keyboard.press("Enter")
    wait_text(page, "Entered B's top-k")
    page.locator("[data-testid=stSelectbox]", has_text="Scope").click()
    page.get_by_role("option", name="user:priya").click()
    wait_text(page, "nDCG@10 (B)")  # the query is judged in user:priya
    shot(page, "compare.png")
    page.goto(f"{app_url}/Tune")
    page.locator("[data-testid=stButton] button", has_text="Evaluate").click()
    wait_text(page, "Best of the search", timeout=240_000)
    page.locator(".js-plotly-plot").nth(1).wait_for()
    shot(page, "tune.png")
    page.close()


def test_make_run_builds_the_demo_index_and_serves_home(browser, tmp_path, artifacts):
    """The README's first command: builds the index when missing, then serves Home."""
    import signal

    db, port = tmp_path / "lancedb", free_port()
    proc = subprocess.Popen(["make", "run", f"DB={db}", f"PORT={port}"], cwd=ROOT, start_new_session=True,
                            stdout=open(tmp_path / "make-run.log", "w"), stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            assert proc.poll() is None, (tmp_path / "make-run.log").read_text()[-2000:]
            try:
                return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
            except OSError:
                return False

        wait_until(healthy, 240, "make run to serve the app (/_stcore/health)", interval=0.5)
        assert (db / "traces.lance").exists() and (db / "bm25.npz").exists()
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(url)
        page.get_by_text("Try an example").first.wait_for(timeout=60_000)
        metric = page.locator("[data-testid=stMetric]", has_text="Traces")
        assert "294" in metric.inner_text()
        page.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
