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


def test_home_page_serves_in_a_real_browser(browser, app_url, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_url)
    page.get_by_text("Hybrid retrieval inspector").first.wait_for(timeout=60_000)
    page.get_by_text("Traces").first.wait_for(timeout=30_000)
    page.screenshot(path=str(artifacts / "home.png"), full_page=True)
    page.close()
