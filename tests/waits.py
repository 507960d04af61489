"""Waiting for a state, never for a fixed time (issue 34 item 7): a polled predicate with a deadline that fails
naming what it waited for; the browser tests' waits on Streamlit's own script-run state live beside the app
driver (`ui.serve`, shared with the browser benchmarks) and are re-exported here."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ui.serve import LONG_MS, painted, rerun_after, runs_ended, settled

__all__ = ["LONG_MS", "painted", "rerun_after", "runs_ended", "settled", "stage_table_listening", "wait_until"]
T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """The predicate's first truthy value, polled until `timeout` seconds; else AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)  # sleep-ok: the poll interval of a deadline wait


def stage_table_listening(page) -> None:
    """Inspect's stage table takes clicks: its listener (a component, `ui.widgets.stage_table`) is mounted only
    once it is in view, so a click that scrolls a row into view can land before it and be lost. Scroll the table
    into view and wait for the listener's mark on <html>."""
    page.locator("table.rt-stages").first.scroll_into_view_if_needed()
    page.wait_for_function("() => Number(document.documentElement.dataset.rtTableEvents || 0) > 0")


def pump_until(page, predicate, what: str, timeout_ms: int = 30_000) -> None:
    """Poll `predicate` (state kept by Playwright's route handlers, which run only while Playwright is called) until
    it holds; fail naming `what`."""
    for _ in range(timeout_ms // 20):
        if predicate():
            return
        page.wait_for_timeout(20)  # sleep-ok: the poll interval of a deadline wait that lets the handlers run
    raise AssertionError(f"timed out waiting for {what}")
