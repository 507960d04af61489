"""Real browser: `streamlit run` on a free port, driven by Playwright in Debian's headless Chromium."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic"]

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path, embedder: str = "minilm"):
    port = free_port()
    env = {**os.environ, "RETRIEVAL_DB": str(db), "RETRIEVAL_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    log = open(db.parent / f"streamlit-{port}.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            break
    proc.terminate()
    raise RuntimeError(f"streamlit did not start: {(db.parent / f'streamlit-{port}.log').read_text()[-2000:]}")


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    db = tmp_path_factory.mktemp("browser") / "db"
    proc, url = start_app(db)
    yield url
    proc.terminate()
    proc.wait(timeout=20)


def wait_text(page, text: str, timeout: int = 60_000):
    page.get_by_text(text).first.wait_for(timeout=timeout)


def final_ids(page) -> list[str]:
    return page.locator(".trace-row[data-stage=final] code").all_inner_texts()


def test_end_to_end_in_a_real_browser(browser, app_url, artifacts, tmp_path):
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(app_url)
    wait_text(page, "Hybrid retrieval inspector")
    page.locator("[data-testid=stMetric]").first.wait_for(timeout=90_000)
    wait_text(page, "The store is empty")

    # Corpus: a bad file is a clear message; the demo corpus loads with a progress bar.
    page.goto(f"{app_url}/Corpus")
    wait_text(page, "Load the demo corpus")
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"id": "x1", "content": "I work at Acme Corp."}\n{broken json\n')
    page.locator("[data-testid=stFileUploader] input[type=file]").set_input_files(str(bad))
    page.locator("[data-testid=stButton] button", has_text="Ingest file").click()
    wait_text(page, "1 rejected line(s)")
    wait_text(page, "Stored 1 trace(s)")
    page.locator("[data-testid=stButton] button", has_text="Load the demo corpus").click()
    wait_text(page, "Stored 294 trace(s)", timeout=180_000)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "corpus.png"), full_page=True)

    # Home → an example opens Inspect pre-filled.
    page.goto(app_url)
    wait_text(page, "Try an example")
    wait_text(page, "in step with the store")
    page.get_by_text("Open in Inspect").first.wait_for()
    page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / "home.png"), full_page=True)
    page.get_by_text("Open in Inspect").first.click()
    page.locator(".trace-row[data-stage=final]").first.wait_for(timeout=90_000)
    for stage in ("dense", "sparse", "merged", "final"):
        assert page.locator(f".trace-row[data-stage={stage}]").count() > 0, stage
    before = final_ids(page)
    assert before[0] == "priya-lens-repair"
    wait_text(page, "Rank and score per stage")  # the explanation of the selected trace
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(artifacts / "inspect.png"), full_page=True)

    # Move the dense weight slider to its maximum: the final list re-fuses from cache.
    thumb = page.locator('input[type=range][aria-label="Dense weight"]')
    assert thumb.input_value() == "0.5"
    thumb.focus()
    page.keyboard.press("End")
    wait_text(page, "Re-fused from cached stage lists")
    page.wait_for_function("(b) => { const ids = [...document.querySelectorAll('.trace-row[data-stage=final] code')]"
                           ".map(e => e.innerText); return ids.join() !== b; }", arg=",".join(before), timeout=30_000)
    assert final_ids(page) != before

    # Type any id for its explanation.
    page.get_by_label("…or any trace id", exact=True).fill("maya-intro")
    page.keyboard.press("Enter")
    wait_text(page, "belongs to scope user:maya")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(artifacts / "inspect-explain.png"), full_page=True)

    # Compare and Tune.
    page.goto(f"{app_url}/Compare")
    page.get_by_label("Query", exact=True).fill("status of ticket FX-209847")
    page.keyboard.press("Enter")
    wait_text(page, "Entered B's top-k")
    page.locator("[data-testid=stSelectbox]", has_text="Scope").click()
    page.get_by_role("option", name="user:priya").click()
    wait_text(page, "Entered B's top-k: priya-lens-repair")
    wait_text(page, "nDCG@10 B")  # the query is judged in the demo set
    page.wait_for_timeout(1500)  # let the data grids paint
    page.screenshot(path=str(artifacts / "compare.png"), full_page=True)
    page.goto(f"{app_url}/Tune")
    page.locator("[data-testid=stButton] button", has_text="Evaluate").click()
    wait_text(page, "Best on the tune half", timeout=180_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    page.screenshot(path=str(artifacts / "tune.png"), full_page=True)
    page.close()


def test_make_run_builds_the_demo_index_and_serves_home(browser, tmp_path, artifacts):
    """The README's first command: builds the index when missing, then serves Home."""
    import signal

    db, port = tmp_path / "lancedb", free_port()
    proc = subprocess.Popen(["make", "run", f"DB={db}", f"PORT={port}"], cwd=ROOT, start_new_session=True,
                            stdout=open(tmp_path / "make-run.log", "w"), stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 240
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
            assert proc.poll() is None, (tmp_path / "make-run.log").read_text()[-2000:]
        else:
            raise AssertionError("make run did not serve the app in 240 s")
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
