"""Integrity of the write path for shared stores: a writer never reaches another scope's trace through
an id, a stale writer never writes with an old model, facts follow the trace they came from, and every
store-wide write is audited. Each test fails without its fix."""
from __future__ import annotations

import pytest

from conftest import NOW, make_trace
from retrieval.access import Access, AccessDenied, ReadOnlyError
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace, Scope
from retrieval.workspace import Workspace

TOMAS = Access(user="tomas@example.com", scopes=frozenset({"user:tomas"}), write=True)
READER = Access(user="ana@example.com", scopes=frozenset({"user:tomas"}), write=False)


def trace(tid: str, content: str, scope_id: str, **kw) -> MemoryTrace:
    return make_trace(tid, content, scope_id=scope_id, **kw)


@pytest.fixture
def ws(tmp_path):
    w = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    w.ingest([trace("maya-intro", "I live in Lisbon with my dog Biscuit.", "maya"),
              trace("tomas-note", "Invoice INV-77 was paid on Monday.", "tomas")])
    return w


def test_a_limited_writer_cannot_take_over_another_scopes_trace_by_reusing_its_id(ws):
    takeover = trace("maya-intro", "overwritten", "tomas")
    with pytest.raises(AccessDenied) as refused:
        ws.ingest([takeover], access=TOMAS)
    assert "user:maya" not in str(refused.value) and "maya-intro" in str(refused.value)  # names the id, not its scope
    [kept] = ws.store.get(["maya-intro"])
    assert (kept.scope_id, kept.content) == ("maya", "I live in Lisbon with my dog Biscuit.")
    assert ws.bm25.search("overwritten", 5) == []
    assert [e.action for e in ws.audit.entries()] == ["ingest"]  # the refused write left no audit row


def test_a_batch_with_one_foreign_id_writes_nothing_at_all(ws):
    batch = [trace("tomas-new", "A new note of mine.", "tomas"), trace("maya-intro", "mine now", "tomas")]
    with pytest.raises(AccessDenied):
        ws.ingest(batch, access=TOMAS)
    assert ws.store.get(["tomas-new"]) == []


def test_the_writer_may_replace_its_own_traces_and_add_new_ones(ws):
    rep = ws.ingest([trace("tomas-note", "Invoice INV-77 was paid on Tuesday.", "tomas"),
                     trace("tomas-new", "A new note of mine.", "tomas")], access=TOMAS)
    assert rep.written == 2
    assert ws.audit.entries()[0].actor == "tomas@example.com"


def test_delete_and_deactivate_refuse_another_scopes_ids(ws):
    with pytest.raises(AccessDenied):
        ws.delete(["maya-intro"], access=TOMAS)
    with pytest.raises(AccessDenied):
        ws.set_active(["maya-intro"], False, access=TOMAS)
    [kept] = ws.store.get(["maya-intro"])
    assert kept.is_active
    assert ws.delete(["tomas-note"], access=TOMAS) == 1


def test_a_reader_writes_nothing(ws):
    with pytest.raises(ReadOnlyError):
        ws.ingest([trace("tomas-x", "hello there", "tomas")], access=READER)
    assert ws.store.get(["tomas-x"]) == []


def test_store_wide_writes_need_an_unrestricted_writer_and_are_audited(ws):
    with pytest.raises(AccessDenied):
        ws.set_analyzer("english-stem", access=TOMAS)
    with pytest.raises(AccessDenied):
        ws.reembed(HashingEmbedder(32), access=TOMAS)
    ws.set_analyzer("english-stem")
    ws.reembed(HashingEmbedder(32))
    actions = [e.action for e in ws.audit.entries()]
    assert actions[:2] == ["reembed", "analyzer"]


def test_a_stale_writer_refuses_after_another_process_re_embedded_the_store(tmp_path):
    uri = str(tmp_path / "db")
    app = Workspace(uri, embedder=HashingEmbedder(64), clock=lambda: NOW)
    app.ingest([trace("a", "first note about tea", "u1")])

    class Other(HashingEmbedder):
        name = "other-model"

    Workspace(uri, clock=lambda: NOW).reembed(Other(64))  # the CLI, elsewhere
    with pytest.raises(ValueError, match="changed under this process"):
        app.ingest([trace("b", "second note about coffee", "u1")])
    assert Workspace(uri, clock=lambda: NOW).store.get(["b"]) == []


def test_a_raw_store_writer_also_refuses_after_a_re_embed(tmp_path):
    from retrieval.store import MemoryStore

    uri = str(tmp_path / "db")
    store = MemoryStore(uri, embedder=HashingEmbedder(64), clock=lambda: NOW)
    store.add([trace("a", "first note", "u1")])

    class Other(HashingEmbedder):
        name = "other-model"

    Workspace(uri, clock=lambda: NOW).reembed(Other(64))
    with pytest.raises(ValueError, match="other-model"):
        store.add([trace("b", "second note", "u1")])


def test_re_ingesting_a_trace_replaces_its_facts(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    home = Scope("user", "u1")
    ws.ingest([trace("home", "I live in Lisbon.", "u1")])
    assert ws.facts.count() == 1
    ws.ingest([trace("home", "I live in Lisbon.", "u1", days=3)])  # a new created_at: the same fact, re-dated
    assert ws.facts.count() == 1
    ws.ingest([trace("home", "I live in Porto.", "u1", days=5)])
    assert ws.facts.count() == 1
    assert ws.facts.latest(home, "user", "livesIn").object == "Porto"
    again = ws.ingest([trace("home", "I live in Porto.", "u1", days=5)])
    assert (again.facts, ws.facts.count()) == (0, 1)  # an unchanged re-ingest changes nothing


@pytest.mark.parametrize("scan_ids", [5_000, 0])  # filtered reads; one scan of the table
def test_deleting_many_traces_removes_their_facts_in_one_pass(tmp_path, monkeypatch, scan_ids):
    import retrieval.facts.store as fact_store

    monkeypatch.setattr(fact_store, "DELETE_SCAN_IDS", scan_ids)
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([trace(f"t{i}", f"I live in City{i}.", f"u{i % 7}") for i in range(1200)])
    assert ws.facts.count() == 1200
    calls = []
    real = fact_store.FactStore._rows
    monkeypatch.setattr(fact_store.FactStore, "_rows", lambda self, where: calls.append(where) or real(self, where))
    assert ws.delete([f"t{i}" for i in range(1100)]) == 1100
    assert ws.facts.count() == 100
    assert len(calls) <= 3  # 1,100 ids: three filtered reads of 500, or one scan — never one per id


def test_side_tables_open_with_the_stores_storage_options(tmp_path, monkeypatch):
    from retrieval.judgments import JudgmentStore

    opened = []
    import retrieval.store.remote as remote

    real = remote.open_db
    monkeypatch.setattr(remote, "open_db", lambda uri, opts=None, **kw: opened.append((uri, opts)) or real(uri, opts,
                                                                                                           **kw))
    for mod in ("retrieval.facts.store", "retrieval.judgments.tables", "retrieval.workspace.audit",
                "retrieval.store.handle"):
        monkeypatch.setattr(f"{mod}.open_db", remote.open_db)
    opts = {"region": "test-1"}
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW, storage_options=opts)
    ws.ingest([trace("home", "I live in Lisbon.", "u1")])
    JudgmentStore(ws.uri, storage_options=ws.store.storage_options).case_names()
    assert {o.get("region") if o else None for _, o in opened} == {"test-1"}
    assert len(opened) >= 4  # traces, facts, audit, judgments


@pytest.mark.parametrize("name", ["/../../x", "../x", "a/b", ".hidden", "", "a" * 200, "x\x00y"])
def test_a_table_name_is_never_a_path(tmp_path, name):
    with pytest.raises(ValueError, match="table name"):
        Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), table=name)
    assert not (tmp_path.parent / "x").exists()


def test_credentials_in_a_store_uri_are_never_shown():
    from retrieval.store.remote import redact_uri

    assert redact_uri("s3://AKIAKEY:s3cr3t@bucket/store") == "s3://***@bucket/store"
    assert redact_uri("s3://bucket/store?secret=abc&region=x") == "s3://bucket/store?secret=***&region=***"
    assert redact_uri("data/lancedb") == "data/lancedb"
    ws = Workspace("s3://AKIAKEY:s3cr3t@bucket/store", embedder=HashingEmbedder(64), storage_options={})
    shown = " ".join([repr(ws), repr(ws.store), repr(ws.facts), repr(ws.audit), ws.store.display_uri])
    assert "s3cr3t" not in shown and "AKIAKEY" not in shown


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0])
def test_unusable_vectors_are_refused_before_anything_is_written(tmp_path, bad):
    import numpy as np

    class Broken(HashingEmbedder):
        def embed(self, texts):
            out = np.asarray(super().embed(texts), dtype=np.float32)
            out[-1] = 0.0 if bad == 0.0 else bad
            return out

    ws = Workspace(str(tmp_path / "db"), embedder=Broken(64), clock=lambda: NOW)
    with pytest.raises(ValueError, match="embedder 'hashing' returned unusable vectors") as refused:
        ws.ingest([trace("ok", "a fine note", "u1"), trace("bad", "the broken one", "u1")])
    assert "'bad'" in str(refused.value) and "'ok'" not in str(refused.value)
    assert ws.store.count() == 0 and len(ws.bm25) == 0
