"""Driving the app from outside: start `streamlit run app.py` on a free port and wait until it is
healthy, and the flags Debian's headless Chromium needs here. Shared by the browser tests, the
browser benchmarks and the screenshot script (no Streamlit import: this runs in the driver process); and
waiting in a Playwright page for the app's own state, never for a fixed time.

The app marks its root `[data-testid=stApp]` with `data-test-script-state` (`running`, `notRunning`, …) and each
element left over from the previous run with `data-stale="true"` until the run ends. A click, key or upload
starts a run a moment later (the widget message goes to the server first), so "is it idle?" right after an
action can still see the old idle state: `rerun_after` counts the runs that ended (a MutationObserver on that
attribute) and waits for one more than before the action.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling hosts this closed network refuses.
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic"]
LONG_MS = 120_000  # a ceiling for a failure, not a wait: the page waits below return as soon as their state holds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path, embedder: str = "minilm", *, env: dict[str, str] | None = None, log: Path | None = None,
              timeout_s: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Serve the app on the store `db`; returns the process and its URL once `/_stcore/health` says ok.

    `env` adds to (and a value of None removes from) this process's environment; the log goes to
    `log` (default: beside the store). Raises RuntimeError with the log's tail if it does not start.
    """
    port = free_port()
    full = {**os.environ, "RETRIEVAL_DB": str(db), "RETRIEVAL_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    log = log or Path(db).parent / f"streamlit-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false"], cwd=ROOT, env=full, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    if wait_healthy(url, proc, timeout_s):
        return proc, url
    proc.terminate()
    raise RuntimeError(f"streamlit did not start: {log.read_text()[-2000:]}")


def stop_app(proc: subprocess.Popen, grace_s: float = 60.0) -> None:
    """Stop a server `start_app` started: SIGTERM, then SIGKILL if it has not exited within `grace_s` (on a loaded
    machine Streamlit has taken over 30 s to stop; a test's teardown must not fail on that)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.05)  # sleep-ok: the poll interval of a deadline wait
    return False


# ---------------------------------------------------------------- waiting in a Playwright page
_COUNT_RUNS = """() => {
  if (window.__rtRunsEnded === undefined) {
    window.__rtRunsEnded = 0;
    new MutationObserver(ms => { for (const m of ms) if (m.oldValue === 'running') window.__rtRunsEnded++; })
      .observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                          attributeFilter: ['data-test-script-state']});
  }
  return window.__rtRunsEnded;
}"""
_IDLE = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale=true]');
}"""
_RAN_SINCE = "n => window.__rtRunsEnded > n && (" + _IDLE + ")()"
# Every image decoded (or failed), every Plotly chart on show drawn (one in a hidden tab draws when shown), the web
# fonts loaded: what a screenshot shows.
_PAINTED = """() => document.fonts.status === 'loaded'
  && [...document.images].every(i => i.complete)
  && [...document.querySelectorAll('[data-testid=stPlotlyChart]')].every(c => !c.checkVisibility()
                                                                       || c.querySelector('.main-svg'))"""


def runs_ended(page: Any) -> int:
    """How many script runs this page has seen end (starts counting on the first call)."""
    return int(page.evaluate(_COUNT_RUNS))


def settled(page: Any, timeout: int = LONG_MS) -> None:
    """Until no script run is under way and no element of a previous run is left (use after waiting for
    something that run drew, so that the run is known to have started)."""
    page.wait_for_function(_IDLE, timeout=timeout)


def rerun_after(page: Any, action: Callable[[], object], timeout: int = LONG_MS) -> None:
    """Do `action` (a click, a key press, an upload: something that reruns the script) and wait until a run
    that ended after it leaves the page idle."""
    before = runs_ended(page)
    action()
    page.wait_for_function(_RAN_SINCE, arg=before, timeout=timeout)


def painted(page: Any, timeout: int = LONG_MS) -> None:
    """Settled, then drawn: fonts, images and charts are in (before a screenshot), and one more frame painted."""
    settled(page, timeout)
    page.wait_for_function(_PAINTED, timeout=timeout)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
