"""Audit log (a LanceDB table `audit` beside `traces`) and the Workspace's read-only (demo) guard."""
from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

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


def test_entries_for_a_limited_visitor_show_their_part_of_every_write_that_touched_their_scopes(ws):
    ws.ingest(corpus()[:2], actor="alice")
    ws.ingest(corpus(), actor="root")
    ws.delete(["b1"], actor="root")
    assert [(e.actor, e.action, e.traces) for e in ws.audit.entries(scopes={"user:alice"})] == [
        ("root", "ingest", 2), ("alice", "ingest", 2)]
    assert [(e.action, e.traces) for e in ws.audit.entries(scopes={"user:bob"})] == [("delete", 1), ("ingest", 1)]
    assert ws.audit.entries(scopes=set()) == []
    assert len(ws.audit.entries(limit=2)) == 2


def test_a_write_over_two_scopes_shows_a_visitor_of_one_only_their_count_scope_and_ids(ws):
    ws.ingest(corpus(), actor="root")  # a1, a2 (alice), b1 (bob): one commit, one entry
    (whole,) = ws.audit.entries()
    assert (whole.traces, whole.scopes, whole.ids) == (3, ("user:alice", "user:bob"), ("a1", "a2", "b1"))
    (alice,) = ws.audit.entries(scopes={"user:alice"})
    assert (alice.actor, alice.action, alice.traces, alice.scopes, alice.ids) == (
        "root", "ingest", 2, ("user:alice",), ("a1", "a2"))
    (bob,) = ws.audit.entries(scopes=["user:bob"])
    assert (bob.traces, bob.scopes, bob.ids, bob.version) == (1, ("user:bob",), ("b1",), whole.version)
    assert "bob" not in repr(alice) and "alice" not in repr(bob) and "3" not in f"{alice.traces}{alice.parts}"
    (both,) = ws.audit.entries(scopes={"user:alice", "user:bob", "user:carol"})
    assert (both.traces, both.scopes, both.ids) == (3, ("user:alice", "user:bob"), ("a1", "a2", "b1"))


def test_grades_over_two_scopes_show_each_visitor_their_count(ws):
    from retrieval.judgments.model import Judgment
    from retrieval.judgments.store import JudgmentStore
    from retrieval.types import Scope

    js = JudgmentStore(ws.uri)
    js.add_judgments([Judgment(Scope("user", "alice"), "q", "a1", 2), Judgment(Scope("user", "alice"), "q", "a2", 1),
                      Judgment(Scope("user", "bob"), "q", "b1", 3)])
    assert [(e.action, e.traces, e.scopes) for e in js.audit.entries()] == [
        ("grade", 3, ("user:alice", "user:bob"))]
    assert [(e.traces, e.scopes) for e in js.audit.entries(scopes={"user:alice"})] == [(2, ("user:alice",))]
    assert [(e.traces, e.scopes) for e in js.audit.entries(scopes={"user:bob"})] == [(1, ("user:bob",))]


def test_an_old_audit_row_of_a_write_over_two_scopes_stays_hidden_from_a_limited_visitor(tmp_path):
    import lancedb
    import pyarrow as pa

    from retrieval.workspace.audit import ScopePart

    uri = str(tmp_path / "db")
    old = pa.schema([("at", pa.timestamp("us", tz="UTC")), ("actor", pa.string()), ("action", pa.string()),
                     ("traces", pa.int64()), ("scopes", pa.list_(pa.string())), ("ids", pa.list_(pa.string())),
                     ("detail", pa.string())])  # before versions and parts were recorded
    lancedb.connect(uri).create_table(TABLE, pa.Table.from_pylist([
        {"at": NOW, "actor": "root", "action": "ingest", "traces": 3, "scopes": ["user:alice", "user:bob"],
         "ids": ["a1", "a2", "b1"], "detail": ""},
        {"at": NOW + timedelta(seconds=1), "actor": "alice", "action": "ingest", "traces": 1,
         "scopes": ["user:alice"], "ids": ["a3"], "detail": ""}], schema=old))
    log = AuditLog(uri, clock=Clock())
    log.clock.t += timedelta(minutes=1)
    assert [e.actor for e in log.entries()] == ["alice", "root"]
    assert [(e.actor, e.traces) for e in log.entries(scopes={"user:alice"})] == [("alice", 1)]  # read as it is
    assert log.record("bob", "ingest", 1, ["user:bob"], ["b2"], version=7) is not None  # adds the new columns
    assert [(e.actor, e.version, e.parts) for e in log.entries()] == [
        ("bob", 7, (ScopePart("user:bob", 1, ("b2",)),)), ("alice", None, None), ("root", None, None)]
    assert [e.actor for e in log.entries(scopes={"user:alice"})] == ["alice"]
    assert [e.actor for e in log.entries(scopes={"user:bob"})] == ["bob"]
    assert [e.actor for e in log.entries(scopes={"user:alice", "user:bob"})] == ["bob", "alice", "root"]


def test_one_entry_per_version_for_the_operator_and_for_a_limited_visitor(tmp_path):
    from retrieval.workspace.audit import UNKNOWN, parts_of

    log = AuditLog(str(tmp_path / "db"), clock=Clock())
    log.record(UNKNOWN, "commit", 3, detail="table version 5: +3 rows", version=5)  # reconcile got there first
    log.record("root", "ingest", 3, ["user:alice", "user:bob"], ["a1", "a2", "b1"], version=5, parts=parts_of(corpus()))
    log.record(UNKNOWN, "commit", 2, detail="table version 6: +2 rows", version=6)
    assert [(e.actor, e.version, e.traces) for e in log.entries()] == [(UNKNOWN, 6, 2), ("root", 5, 3)]
    assert [(e.actor, e.version, e.traces) for e in log.entries(scopes={"user:bob"})] == [("root", 5, 1)]


def test_a_write_over_several_scopes_without_its_split_stays_hidden_from_a_limited_visitor(tmp_path):
    log = AuditLog(str(tmp_path / "db"), clock=Clock())
    log.record("root", "ingest", 3, ["user:alice", "user:bob"], ["a1", "a2", "b1"], version=2)
    log.record("root", "statistics", 3, detail="scope", version=3)
    assert [e.action for e in log.entries()] == ["statistics", "ingest"]
    assert log.entries(scopes={"user:alice"}) == []
    assert [e.traces for e in log.entries(scopes={"user:alice", "user:bob"})] == [3]


SCOPES = ("user:alice", "user:bob", "user:carol")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.tuples(st.sampled_from(["ingest", "delete", "grade"]),
                                 st.lists(st.sampled_from(SCOPES), min_size=1, max_size=30)), min_size=1, max_size=5),
       visitor=st.sets(st.sampled_from(SCOPES), min_size=1, max_size=2))
def test_a_visitors_view_is_the_same_on_s_and_on_s_restricted_to_their_scopes(tmp_path_factory, writes, visitor):
    """Random writes over random scopes: what a visitor limited to some scopes sees of the log is what they see of
    the log built by the same writes restricted to their scopes (non-interference, tests/test_noninterference.py)."""
    from types import SimpleNamespace

    from retrieval.workspace.audit import parts_counted, parts_of, scopes_of

    logs = [AuditLog(str(tmp_path_factory.mktemp("s") / "db")) for _ in range(2)]
    scope_of = {f"t{n}-{k}": s for n, (_, scopes) in enumerate(writes) for k, s in enumerate(scopes)}
    for n, (action, scopes) in enumerate(writes):
        traces = [SimpleNamespace(id=f"t{n}-{k}", scope=s.split(":")[0], scope_id=s.split(":")[1])
                  for k, s in enumerate(scopes)]
        for log, keep in zip(logs, (traces, [t for t in traces if scope_of[t.id] in visitor])):
            if not keep:  # S′ holds only the visitor's scopes: a write outside them did not happen there
                continue
            log.clock = lambda n=n: NOW + timedelta(seconds=n)
            if action == "grade":  # counts only, no version
                log.record("root", action, len(keep), scopes_of(keep),
                           parts=parts_counted(scope_of[t.id] for t in keep))
            else:
                log.record("root", action, len(keep), scopes_of(keep), [t.id for t in keep], version=n + 2,
                           parts=parts_of(keep))
    on_s, on_s1 = (log.entries(scopes=visitor) for log in logs)
    assert on_s == on_s1
    assert all(set(e.scopes) <= visitor and {scope_of[i] for i in e.ids} <= visitor for e in on_s)
    assert sum(e.traces for e in logs[0].entries()) == sum(len(s) for _, s in writes)


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
