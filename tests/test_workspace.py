"""Workspace, the one write path (SPEC §12): sidecar versions, rebuilds, read-only stores, facts in step."""
from __future__ import annotations

import json
import logging
import threading

import numpy as np
import pytest

from retrieval.bm25.index import BM25Index
from retrieval.models import HashingEmbedder
from retrieval.workspace import Workspace
from retrieval.workspace.facts_sync import FactSources

from conftest import NOW, U1, U2, make_trace


def ws_at(uri, **kw) -> Workspace:
    return Workspace(str(uri), embedder=HashingEmbedder(32), clock=lambda: NOW, **kw)


def sparse_ids(ws, q, scope=U1):
    return [i for i, _ in ws.bm25.search(q, top_k=50, scopes=[scope])]


def test_tokenless_trace_is_stored_and_searchable_densely(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "refund")])
    rep = ws.ingest([make_trace("b", "👍"), make_trace("c", "!!!")])
    assert rep.written == 2 and rep.fact_warnings == ()
    assert ws.store.count() == 3 and len(ws.bm25) == 3 and ws.status()["in_step"]
    assert ws.store.query("👍", top_k=1, scopes=[U1])[0].id == "b"
    again = ws_at(tmp_path / "db")
    assert len(again.bm25) == 3 and again.status()["in_step"] and sparse_ids(again, "refund") == ["a"]


def test_an_emptied_store_reopens_twice(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "refund"), make_trace("b", "👍")])
    assert ws.delete(["a", "b"]) == 2
    for _ in range(2):
        st = ws_at(tmp_path / "db").status()
        assert (st["traces"], st["bm25_documents"], st["in_step"]) == (0, 0, True)


def test_ingest_is_idempotent(tmp_path):
    ws = ws_at(tmp_path / "db")
    batch = [make_trace("a", "I live in Lisbon."), make_trace("b", "Invoice INV-1 paid.")]
    first = ws.ingest(batch)
    v = ws.bm25.snapshot().version
    second = ws.ingest(batch)
    assert (first.written, first.facts, second.written, second.facts) == (2, 1, 2, 0)
    assert ws.store.count() == 2 and ws.facts.count() == 1 and len(ws.bm25) == 2
    assert ws.bm25.snapshot().version == v + 1  # one (empty) batch: unchanged documents are not re-added


def test_sidecar_records_the_table_version_and_a_stale_one_catches_up(tmp_path, caplog):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace(f"t{i}", f"old text {i}") for i in range(10)])
    assert BM25Index.load(ws.bm25_path, tokenizer=ws.bm25.tokenizer).source["table_version"] == ws.store.version()
    # A commit the sidecar never saw (a crash between the LanceDB commit and the sidecar save):
    # same row count, different text and another scope.
    ws.store.add([make_trace("t0", "brand new words", "u2")])
    caplog.set_level(logging.WARNING)
    again = ws_at(tmp_path / "db")
    assert again.status()["in_step"]
    assert "catching up by the rows that differ" in caplog.text
    assert sparse_ids(again, "brand new", U2) == ["t0"] and sparse_ids(again, "brand new", U1) == []
    assert "t0" not in sparse_ids(again, "old text")


def test_two_workspaces_on_one_store_never_make_a_stale_sidecar_look_in_step(tmp_path):
    app = ws_at(tmp_path / "db")
    app.ingest([make_trace(f"t{i}", f"old text {i}") for i in range(60)])
    cli = ws_at(tmp_path / "db")
    cli.ingest([make_trace(f"t{i}", f"rewritten zebra {i}") for i in range(50)])
    assert app.status()["in_step"] is False  # the app's index predates the CLI's commit
    app.delete(["t59"])  # the app's next write catches up first, then saves
    third = ws_at(tmp_path / "db")
    assert third.status()["in_step"]
    assert len(sparse_ids(third, "zebra")) == 50 and sparse_ids(third, "old text") == [f"t{i}" for i in range(50, 59)]
    cli.ingest([make_trace("t1", "quokka")])
    assert app.refresh() is True and sparse_ids(app, "quokka") == ["t1"] and app.status()["in_step"]
    assert app.refresh() is False


@pytest.mark.parametrize("damage", ["garbage", "truncated", "no_k1", "other_tokenizer", "empty"])
def test_a_damaged_sidecar_is_rebuilt_with_a_warning(tmp_path, caplog, damage):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha beta"), make_trace("b", "gamma")])
    path = ws.bm25_path
    if damage == "garbage":
        path.write_bytes(b"garbage")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with np.load(path) as d:
            arrays = {k: d[k] for k in d.files}
        meta = json.loads(bytes(arrays["meta"]).decode())
        if damage == "no_k1":
            del meta["k1"]
        else:
            meta["tokenizer"] = "default-v1"
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    caplog.set_level(logging.WARNING)
    again = ws_at(tmp_path / "db")
    assert sparse_ids(again, "alpha") == ["a"] and again.status()["in_step"]
    assert "rebuild" in caplog.text
    assert BM25Index.load(path, tokenizer=again.bm25.tokenizer).source["table_version"] == again.store.version()


def test_read_only_store_opens_with_an_in_memory_index(tmp_path, monkeypatch):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha beta"), make_trace("b", "gamma")])
    ws.bm25_path.unlink()
    root = tmp_path / "db"
    mode = root.stat().st_mode
    root.chmod(0o555)
    # root ignores directory permissions: make the save fail as a read-only mount would
    monkeypatch.setattr(BM25Index, "save", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "read-only")))
    try:
        ro = ws_at(root)
        assert sparse_ids(ro, "alpha") == ["a"]
        st = ro.status()
        assert st["read_only"] and st["traces"] == 2 and st["in_step"]
    finally:
        root.chmod(mode)


def test_status_of_a_mistyped_path_does_not_create_it(tmp_path):
    path = tmp_path / "no" / "such" / "db"
    st = ws_at(path).status()
    assert (st["exists"], st["traces"], st["bm25_documents"], st["facts"]) == (False, 0, 0, 0)
    assert not (tmp_path / "no").exists()


def test_concurrent_first_ingest_never_duplicates_ids(tmp_path):
    ws = ws_at(tmp_path / "db")
    batch = [make_trace(f"t{i:03d}", f"note number {i}") for i in range(200)]
    errors = []

    def go():
        try:
            ws.ingest(batch, extract_facts=False)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    ids = [t.id for t in ws.store.all_traces()]
    assert len(ids) == 200 and len(set(ids)) == 200 and len(ws.bm25) == 200


def test_concurrent_create_from_two_stores_opens_the_winner(tmp_path):
    from retrieval.store.memory import MemoryStore

    stores = [MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(32)) for _ in range(2)]
    errors = []

    def go(s, i):
        try:
            s.add([make_trace("same", f"text {i}"), make_trace(f"own{i}", "x y")])
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    reader = MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(32))
    assert sorted(t.id for t in reader.all_traces()) == ["own0", "own1", "same"]


def test_a_broken_facts_table_is_reported_not_raised_and_retried(tmp_path, monkeypatch):
    import retrieval.facts.inject as inject

    ws = ws_at(tmp_path / "db")

    def broken(*a, **k):
        raise OSError("facts table is corrupt")

    monkeypatch.setattr(inject, "store_extracted", broken)
    rep = ws.ingest([make_trace("a", "I live in Lisbon."), make_trace("b", "refund")])
    assert rep.written == 2 and rep.facts == 0
    assert len(rep.fact_warnings) == 1 and "facts for 2 trace(s) were not updated" in rep.fact_warnings[0]
    assert "OSError: facts table is corrupt" in rep.fact_warnings[0] and "traces are stored" in rep.fact_warnings[0]
    assert sparse_ids(ws, "refund") == ["b"]
    st = ws.status()
    assert (st["facts_pending"], st["in_step"]) == (2, False)
    monkeypatch.undo()
    again = ws_at(tmp_path / "db")
    assert again.status()["facts_pending"] == 0 and again.facts.count() == 1 and again.status()["in_step"]


@pytest.mark.parametrize("demo", [True, False], ids=["demo", "writer"])
def test_status_and_doctor_count_the_facts_behind_alike(tmp_path, monkeypatch, demo):
    """One count for both, from the store (facts_sync.pending): a demo never reconciles, so a process-local counter
    said 0 where doctor said 2 (probe). A writer's open catches the facts up, and both then say 0."""
    from retrieval.workspace import doctor

    writer = ws_at(tmp_path / "db")
    writer.ingest([make_trace("x", "I live in Porto.")])  # a store first: the next commit is the very next version
    writer.ingest([make_trace("a", "I live in Lisbon."), make_trace("b", "My dog is called Rex.")], extract_facts=False)
    if demo:
        monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    ws = ws_at(tmp_path / "db")
    st, problems = ws.status(), doctor.check(ws).problems
    behind = 2 if demo else 0
    assert (st["facts_pending"], st["in_step"]) == (behind, not behind), st
    assert problems.get("facts pending", []) == ([f"{behind} trace(s) whose facts are not marked extracted at "
                                                  "their content"] if behind else []), problems
    assert ws.status()["facts_pending"] == behind  # asked again (each Home rerun): the same answer


def test_the_facts_behind_are_counted_once_per_version_of_what_they_depend_on(tmp_path, monkeypatch):
    """Home asks for status on every rerun: the count (a read of both facts tables) is made again only when the
    traces, facts or marks table moved — here when another process's writer catches the facts up, which leaves the
    traces table where it was."""
    from retrieval.workspace import facts_sync

    writer = ws_at(tmp_path / "db")
    writer.ingest([make_trace("x", "I live in Porto.")])
    writer.ingest([make_trace("a", "I live in Lisbon.")], extract_facts=False)
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    demo = ws_at(tmp_path / "db")
    counted, count = [], facts_sync.pending
    monkeypatch.setattr(facts_sync, "pending", lambda *a: counted.append(1) or count(*a))
    assert [demo.status()["facts_pending"] for _ in range(3)] == [1, 1, 1] and len(counted) == 1
    monkeypatch.delenv("RETRIEVAL_MODE")
    version = demo.store.version()
    ws_at(tmp_path / "db").bm25  # noqa: B018 - a writer's open extracts the facts behind: facts and marks move
    assert demo.store.version() == version
    assert [demo.status()["facts_pending"] for _ in range(2)] == [0, 0] and len(counted) == 2


def test_an_interrupted_fact_extraction_is_replayed_on_open(tmp_path, monkeypatch):
    import retrieval.facts.inject as inject

    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("x", "I live in Porto.")])

    def killed(*a, **k):
        raise KeyboardInterrupt  # not an Exception: the process dies here, after the commit

    monkeypatch.setattr(inject, "store_extracted", killed)
    with pytest.raises(KeyboardInterrupt):
        ws.ingest([make_trace("a", "I live in Lisbon."), make_trace("b", "My dog is called Rex.")])
    monkeypatch.undo()
    assert sorted(FactSources(str(tmp_path / "db")).read()) == ["x"]  # a and b committed, their facts not
    again = ws_at(tmp_path / "db")
    st = again.status()
    assert (st["traces"], st["facts_pending"], st["in_step"]) == (3, 0, True)
    fresh = ws_at(tmp_path / "fresh")
    fresh.ingest(again.store.all_traces())
    assert again.facts.count() == fresh.facts.count() == 3


def test_deactivated_and_deleted_traces_leave_bm25_and_facts(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "I live in Lisbon."), make_trace("b", "invoice 42")])
    assert ws.facts.count() == 1
    assert ws.set_active(["a"], False) == 1
    assert ws.facts.count() == 0 and "a" not in ws.bm25
    ws.set_active(["a"], True)
    assert ws.facts.count() == 1 and "a" in ws.bm25
    assert ws.delete(["a", "nope"]) == 1
    assert ws.facts.count() == 0 and ws.status()["in_step"]


def test_a_rejected_batch_writes_nothing_anywhere(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("a", "alpha")])
    v = ws.store.version()
    with pytest.raises(ValueError, match="'bad'.*content"):
        ws.ingest([make_trace("c", "fine"), make_trace("bad", " ")])
    assert ws.store.version() == v and len(ws.bm25) == 1 and ws.status()["facts_pending"] == 0


def test_refresh_if_stale_catches_up_with_another_writer_and_is_cheap_otherwise(tmp_path):
    app = ws_at(tmp_path / "db")
    app.ingest([make_trace("a", "refund approved for invoice 100")])
    assert app.refresh_if_stale() is False  # nothing changed: no re-sync
    cli = ws_at(tmp_path / "db")  # another process's Workspace (the CLI while the app runs)
    cli.ingest([make_trace("b", "parcel lost by the courier")])
    assert "b" not in app.bm25
    assert app.refresh_if_stale() is True
    assert [i for i, _ in app.bm25.search("courier parcel", scopes=[U1])] == ["b"]
    assert app.refresh_if_stale() is False and app.status()["in_step"]
