"""The served app's log stays clean: opening an example link (which sets widgets through session state before they
are drawn) logs no Streamlit widget-state warning."""
from __future__ import annotations

import pytest

from demostore import copy_demo
from retrieval.ingest.demo import load_examples


@pytest.mark.browser
def test_opening_an_example_link_logs_no_widget_state_warning(browser, tmp_path):
    from urllib.parse import urlencode

    from ui.serve import start_app, stop_app

    db, log = tmp_path / "db", tmp_path / "streamlit.log"
    copy_demo(str(db))
    split = next(ex for ex in load_examples() if ex["id"] == "split")
    proc, url = start_app(db, embedder="hashing", log=log)
    try:
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/Inspect?{urlencode({k: str(v) for k, v in split['params'].items()})}")
        page.get_by_text("Why is it here?").first.wait_for()
        assert page.locator("[data-testid=stException]").count() == 0
    finally:
        stop_app(proc)
    text = log.read_text()
    assert "Uvicorn server started" in text or "You can now view" in text  # the log is the server's
    assert "Session State API" not in text, text[-3000:]
