"""Retention: LanceDB's clean-up removes old versions; the project never cleans up a tagged version."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest

from conftest import NOW, make_trace
from retrieval.models import HashingEmbedder
from retrieval.store.versions import create_tag, list_versions, optimize
from retrieval.workspace import Workspace


def _ws(path):
    return Workspace(str(path), embedder=HashingEmbedder(16), clock=lambda: NOW, fact_extractor="none")


def test_optimize_prunes_old_versions_but_keeps_a_tagged_one(tmp_path):
    ws = _ws(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha note")])
    ws.ingest([make_trace("b", "beta note")])
    old = ws.store.version()
    time.sleep(1.5)
    ws.ingest([make_trace("c", "gamma note")])
    tagged = ws.store.version()
    ws.ingest([make_trace("d", "delta note")])
    tbl = ws.store.table()
    create_tag(tbl, "keep-me", tagged)
    with pytest.raises(Exception, match="tagged version"):  # what LanceDB's own optimize does with a tag
        tbl.optimize(cleanup_older_than=timedelta(0))
    optimize(tbl, keep=timedelta(0))
    stored = [v for v, _ in list_versions(tbl)]
    assert old not in stored and tagged in stored
    assert sorted(t.id for t in ws.retriever(as_of="keep-me").memory_store.all_traces()) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=f"version {old} does not exist"):
        ws.retriever(as_of=old)


def test_a_tag_name_is_checked_and_never_reused(tmp_path):
    ws = _ws(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha note")])
    tbl = ws.store.table()
    assert create_tag(tbl, "v1") == ws.store.version()
    with pytest.raises(ValueError, match="already exists"):
        create_tag(tbl, "v1")
    with pytest.raises(ValueError, match="tag name"):
        create_tag(tbl, "../etc")
    with pytest.raises(ValueError, match="does not exist"):
        create_tag(tbl, "later", 999)
