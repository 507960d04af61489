"""Retention: LanceDB's clean-up removes old versions; the project never cleans up a tagged version."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from conftest import NOW, make_trace
from waits import wait_until
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
    # optimize's cut-off sits 1 s before the oldest tagged version: the next version must be over 1 s newer
    old_at = dict(list_versions(ws.store.table()))[old]
    wait_until(lambda: datetime.now(UTC) - old_at > timedelta(seconds=1.1), 10, "the clock to pass 1 s after `old`")
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


def test_an_ingest_into_a_large_store_folds_its_tail_in_without_failing_on_an_old_tag(tmp_path, monkeypatch):
    """Issue 32 item 9: the ingest path's optimize is the tag-safe one. LanceDB's own `optimize()` cleans up
    versions older than 7 days and raises once a tag is older than that; here its default cut-off is moved to
    now (as if the tag were 8 days old), and the ingest's index upkeep (a large unindexed tail) must still pass."""
    import lancedb.table

    real = lancedb.table.LanceTable.optimize

    def aged(self, *a, cleanup_older_than=None, **kw):  # the clock moved past the tag: default cut-off is now
        return real(self, *a, cleanup_older_than=timedelta(0) if cleanup_older_than is None else cleanup_older_than,
                    **kw)

    monkeypatch.setattr(lancedb.table.LanceTable, "optimize", aged)
    ws = _ws(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha note")])
    create_tag(ws.store.table(), "old-tag", ws.store.version())
    ws.ingest([make_trace("a2", "another note")])
    with pytest.raises(Exception, match="tagged version"):
        ws.store.table().optimize()  # LanceDB's own
    monkeypatch.setattr(ws.store.ann, "has_index", lambda: True)  # a large store with a big unindexed tail
    monkeypatch.setattr(type(ws.store), "index_state", lambda self: {"rows": 10**6, "ann_index": True,
                                                                     "ann_type": "IVF_SQ", "unindexed_rows": 10**6})
    rep = ws.ingest([make_trace("b", "beta note")])
    assert rep.written == 1 and sorted(t.id for t in ws.store.all_traces()) == ["a", "a2", "b"]
    assert "old-tag" in ws.store.tags()
