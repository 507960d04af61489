"""A read-only demo changes nothing on disk: every page browsed, with a stale BM25 sidecar and a facts
fact sources a crashed writer never marked, and the store directory hashes the same before and after."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from demostore import copy_demo
from apphelpers import open_page
from retrieval.models import HashingEmbedder
from retrieval.workspace import Workspace

PAGES = ["app.py", "pages/1_Corpus.py", "pages/2_Inspect.py", "pages/3_Compare.py", "pages/4_Tune.py",
         "pages/5_Facts.py", "pages/6_Snapshots.py"]


def tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("readonly")
    copy_demo(str(root / "base"))
    return root


def damaged_copy(built: Path, name: str) -> Path:
    """The demo store with a stale sidecar (as if another process wrote since) and facts a writer would catch up
    (no trace is marked as extracted: a writable open would reconcile every trace's facts)."""
    import lancedb

    db = built / name
    shutil.copytree(built / "base", db)
    (db / "bm25.npz").unlink()
    conn = lancedb.connect(str(db))
    if "fact_sources" in conn.table_names():
        conn.drop_table("fact_sources")
    return db


def test_a_demo_workspace_keeps_the_disk_as_it_was(built, monkeypatch):
    db = damaged_copy(built, "api")
    before = tree_hash(db)
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    ws = Workspace(str(db), embedder=HashingEmbedder(384))
    assert ws.status()["traces"] > 0 and len(ws.bm25) > 0  # BM25 rebuilt in memory
    ws.retriever().retrieve("where do I live?", scope=ws.store.scopes()[0])
    ws.refresh_if_stale()
    assert tree_hash(db) == before


@pytest.mark.parametrize("grading", ["false", "true"])
def test_browsing_every_page_in_demo_mode_writes_nothing(built, monkeypatch, grading):
    db = damaged_copy(built, f"pages-{grading}")
    before = tree_hash(db)
    for k, v in {"RETRIEVAL_DB": str(db), "RETRIEVAL_EMBEDDER": "hashing", "RETRIEVAL_MODE": "demo",
                 "RETRIEVAL_ALLOW_GRADING": grading}.items():
        monkeypatch.setenv(k, v)
    for page in PAGES:
        at = open_page(page, 120)
        assert not at.exception, (page, at.exception)
    inspect = open_page("pages/2_Inspect.py", 120, i_q="where do I live?", i_scope="user:maya")
    assert not inspect.exception
    assert tree_hash(db) == before
