"""Real browser: import an agent log on the Log page → open a logged query in Inspect as of its time → Changes.
Hashing embedder: no model load."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from demostore import copy_demo
from ui.serve import start_app, stop_app
from waits import rerun_after

from retrieval.history import pin
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace
from retrieval.workspace import Workspace

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
LONG = 120_000
NEW = "priya-ticket-update"
QUERY = "status of ticket FX-209847"


def wait_text(page, text: str, timeout: int = LONG):
    page.get_by_text(text).first.wait_for(timeout=timeout)


def test_import_a_log_then_inspect_a_logged_query_as_of_its_time(browser, tmp_path, artifacts):
    db = tmp_path / "db"
    copy_demo(str(db))
    ws = Workspace(str(db), embedder=HashingEmbedder(384))
    before = ws.store.version()
    then = pin(ws.store, before).timestamp + timedelta(microseconds=1)
    ws.ingest([MemoryTrace(id=NEW, content="Ticket FX-209847 status: FX-209847 repaired, ticket FX-209847 closed.",
                           scope="user", scope_id="priya", created_at=datetime(2024, 9, 1, tzinfo=UTC))])
    log = tmp_path / "agent.jsonl"
    log.write_text(json.dumps({"timestamp": then.isoformat(), "query": QUERY, "scope": "user:priya",
                               "results": [{"id": "priya-lens-repair", "score": 0.91}], "feedback": "up"})
                   + "\n{broken\n")
    proc, url = start_app(db, embedder="hashing")
    page = browser.new_page(viewport={"width": 1600, "height": 3000})
    try:
        page.goto(f"{url}/Log")
        wait_text(page, "No logged queries yet")
        upload = page.locator("[data-testid=stFileUploader] input[type=file]").first
        rerun_after(page, lambda: upload.set_input_files(str(log)))  # an Import click during that run is lost
        page.locator("[data-testid=stButton] button", has_text="Import").first.click()
        wait_text(page, "1 logged query imported")
        wait_text(page, "line 2: not JSON")
        page.goto(f"{url}/Log")  # the page as a returning visitor sees it
        wait_text(page, "agent got: priya-lens-repair")
        wait_text(page, f"as of then (version {before})")
        page.screenshot(path=str(artifacts / "log.png"), full_page=True)
        page.get_by_text("Inspect as of then").first.click()
        wait_text(page, "Showing an earlier state")
        wait_text(page, f"version {before}")
        assert "asof=" in page.url
        page.get_by_text("Show changes").first.click()
        wait_text(page, f"displaced by {NEW}")
        wait_text(page, "new trace (added after version A)")
        page.screenshot(path=str(artifacts / "log-inspect-changes.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(artifacts / "log-fail.png"), full_page=True)
        raise
    finally:
        stop_app(proc)
