"""Audit log (a LanceDB table `audit` beside `traces`) and the Workspace's read-only (demo) guard."""
from __future__ import annotations

from datetime import timedelta

import pytest

from conftest import NOW, make_trace
from retrieval.access import ReadOnlyError
from retrieval.workspace.audit import TABLE, AuditLog
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace


class Clock:
    def __init__(self):
        self.t = NOW

    def __call__(self):
        self.t += timedelta(seconds=1)
        return self.t


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    w = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), fact_extractor="none")
    w.audit.clock = Clock()
    return w


def corpus():
    return [make_trace("a1", "I live in Lisbon.", "alice"), make_trace("a2", "Invoice INV-1 paid.", "alice"),
            make_trace("b1", "Bob's note about a trip.", "bob")]


def test_every_write_is_recorded_with_who_what_and_how_many(ws):
    ws.ingest(corpus(), actor="alice@example.com")
    ws.ingest(corpus()[:2], actor="alice@example.com")  # a re-upload is a write too
    assert ws.set_active(["a2"], False, actor="bob@example.com") == 1
    assert ws.set_active(["a2"], True) == 1
    assert ws.delete(["b1", "nope"], actor="root") == 1
    got = [(e.actor, e.action, e.traces, e.scopes, e.ids) for e in ws.audit.entries()]
    assert got == [  # newest first
        ("root", "delete", 1, ("user:bob",), ("b1",)),
        ("local", "activate", 1, ("user:alice",), ("a2",)),
        ("bob@example.com", "deactivate", 1, ("user:alice",), ("a2",)),
        ("alice@example.com", "ingest", 2, ("user:alice",), ("a1", "a2")),
        ("alice@example.com", "ingest", 3, ("user:alice", "user:bob"), ("a1", "a2", "b1")),
    ]
    assert [e.at for e in ws.audit.entries()] == sorted((e.at for e in ws.audit.entries()), reverse=True)
    assert TABLE in ws.store.db.table_names()  # in the store, beside the traces
    assert [e.action for e in AuditLog(ws.uri).entries()] == [e.action for e in ws.audit.entries()]  # reopened


def test_entries_for_a_limited_visitor_show_only_writes_inside_their_scopes(ws):
    ws.ingest(corpus()[:2], actor="alice")
    ws.ingest(corpus(), actor="root")
    ws.delete(["b1"], actor="root")
    assert [(e.actor, e.action) for e in ws.audit.entries(scopes={"user:alice"})] == [("alice", "ingest")]
    assert [e.action for e in ws.audit.entries(scopes={"user:bob"})] == ["delete"]
    assert ws.audit.entries(scopes=set()) == []
    assert len(ws.audit.entries(limit=2)) == 2


def test_a_failing_audit_write_never_undoes_the_trace_write(ws, monkeypatch, caplog):
    def broken(create):
        raise OSError("disk full")

    monkeypatch.setattr(ws.audit, "_table", broken)
    rep = ws.ingest(corpus(), actor="alice")
    assert rep.written == 3 and ws.store.count() == 3
    assert "could not record ingest by alice" in caplog.text
    assert ws.audit.entries() == []  # unreadable: empty, with a warning, never an exception


def test_unknown_action_is_refused(tmp_path):
    with pytest.raises(ValueError, match="audit action 'wipe' is not one of ingest"):
        AuditLog(str(tmp_path / "db")).record("x", "wipe", 1)


@pytest.mark.parametrize("write", [
    lambda w: w.ingest([make_trace("new", "A new note.", "alice")]),
    lambda w: w.delete(["a1"]),
    lambda w: w.set_active(["a1"], False),
    lambda w: w.set_active(["a1"], True, actor="root"),
])
def test_demo_mode_refuses_every_write_path_and_writes_nothing(ws, monkeypatch, write):
    ws.ingest(corpus())
    before = (ws.store.count(), ws.store.count(active_only=True), len(ws.bm25), ws.store.version(),
              len(ws.audit.entries()))
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    demo = Workspace(ws.uri, embedder=HashingEmbedder(32), fact_extractor="none")
    assert demo.demo_mode
    with pytest.raises(ReadOnlyError, match="refused: the app runs read-only"):
        write(demo)
    assert (demo.store.count(), demo.store.count(active_only=True), len(demo.bm25), demo.store.version(),
            len(demo.audit.entries())) == before
    # Reading works as usual in demo mode.
    assert demo.retriever().retrieve("Lisbon").ids[0] == "a1" and demo.status()["traces"] == 3


def test_the_flag_set_on_a_shared_workspace_refuses_too(ws):
    ws.demo_mode = True  # what ui.access does when the mode comes from secrets.toml rather than the env
    with pytest.raises(PermissionError):
        ws.ingest(corpus())
    assert ws.store.count() == 0
