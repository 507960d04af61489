"""Shared AppTest helpers: a demo store built with the hashing embedder, opening a page, reading its text."""
from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest
from demostore import copy_demo


ROOT = Path(__file__).resolve().parent.parent


def demo_app_env(tmp_path_factory, name: str):
    """Build the demo index under a temp folder and point the app at it (RETRIEVAL_DB, hashing embedder)."""
    db = str(tmp_path_factory.mktemp(name) / "db")
    copy_demo(db)
    old = {k: os.environ.get(k) for k in ("RETRIEVAL_DB", "RETRIEVAL_EMBEDDER")}
    os.environ.update(RETRIEVAL_DB=db, RETRIEVAL_EMBEDDER="hashing")
    yield db
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def served_demo(tmp_path_factory, name: str):
    """The demo store built with the hashing embedder and served by a real app (browser tests); yields (url, db)."""
    from ui.serve import start_app, stop_app

    db = tmp_path_factory.mktemp(name) / "db"
    copy_demo(str(db))
    proc, url = start_app(db, embedder="hashing")
    yield url, db
    stop_app(proc)


def open_page(path: str | None, timeout: float, user: dict | None = None, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if user is not None:
        at.user = user
    if path and path != "app.py":
        at.switch_page(path)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def page_texts(at, headings: bool = False) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [w.value for w in at.warning] + [s.value for s in at.success] + [e.value for e in at.error]
    if headings:
        parts += [t.value for t in at.title] + [s.value for s in at.subheader]
    return "\n".join(str(p) for p in parts)


def load_script(name: str):
    """A module from scripts/ by file path (scripts are programs, not an installed package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"scripts_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TICKET_UPDATE = "priya-ticket-update"


def ingest_ticket_update(ws) -> None:
    """One more demo trace that answers "status of ticket FX-209847" best: a store version that moves that
    query's lists (the As-of picker, the Changes view and the Log page read the store before and after it)."""
    from datetime import UTC, datetime

    from retrieval.types import MemoryTrace

    ws.ingest([MemoryTrace(id=TICKET_UPDATE, scope="user", scope_id="priya",
                           created_at=datetime(2024, 9, 1, tzinfo=UTC),
                           content="Ticket FX-209847 status: FX-209847 repaired, ticket FX-209847 closed.")])
