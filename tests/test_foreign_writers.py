"""A store written by plain LanceDB calls (an agent's own code: no Workspace, no lock, no audit, no facts) opens in a
Workspace with BM25, facts and audit caught up; an id stored twice reads as one trace everywhere (SPEC §18)."""
from __future__ import annotations

from datetime import timedelta

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from conftest import NOW, U1
from retrieval.models import HashingEmbedder
from retrieval.store.rows import schema, to_row
from retrieval.types import MemoryTrace
from retrieval.workspace import Workspace, doctor
from retrieval.workspace.audit import UNKNOWN

EMB = HashingEmbedder(32)


def trace(tid, text, minutes=0, **kw):
    ts = NOW + timedelta(minutes=minutes)
    return MemoryTrace(id=tid, content=text, scope="user", scope_id="u1", created_at=ts, last_accessed_at=ts, **kw)


def rows(traces):
    vecs = np.asarray(EMB.embed([t.content for t in traces]), np.float32)
    return pa.Table.from_pylist([to_row(t, v) for t, v in zip(traces, vecs)], schema=schema(32))


def agent_store(path):
    """What an agent's code leaves: a table created, appended to twice (one id twice), one row deleted."""
    tbl = lancedb.connect(str(path)).create_table("traces", data=rows(
        [trace("a", "I live in Lisbon."), trace("b", "Invoice INV-7 was refunded."), trace("c", "I live in Oslo."),
         trace("d", "My dog is called Rex.", is_active=False)]))
    tbl.add(rows([trace("a", "I live in Porto.", minutes=5), trace("e", "I work at Acme.")]))
    tbl.delete("id = 'c'")
    return tbl


def test_a_store_written_by_plain_lancedb_opens_with_bm25_facts_and_audit_caught_up(tmp_path):
    agent_store(tmp_path / "db")
    ws = Workspace(str(tmp_path / "db"), embedder=EMB)
    assert sorted(ws.bm25.snapshot().live_ids()) == ["a", "b", "e"]  # active rows, one per id
    assert [i for i, _ in ws.bm25.search("porto", 5)] == ["a"] and ws.bm25.search("lisbon", 5) == []  # the newer row
    facts = sorted((f.subject, f.predicate, f.object, f.source_trace_ids) for f in ws.facts.all(U1))
    assert facts == [("user", "livesIn", "Porto", ("a",)), ("user", "worksAt", "Acme", ("e",))]
    entries = ws.audit.entries(maintenance=True)
    assert sorted(e.version for e in entries) == [2, 3] and {e.actor for e in entries} == {UNKNOWN}
    assert {e.version: e.detail for e in entries} == {2: "table version 2: +2 rows", 3: "table version 3: -1 rows"}
    rep = doctor.check(ws)
    assert rep.problems == {"duplicate ids": ["a ×2"]}
    assert doctor.repair(ws).healthy and [t.content for t in ws.store.get(["a"])] == ["I live in Porto."]


def test_an_id_stored_twice_never_fails_a_query_and_reads_as_its_winner(tmp_path, monkeypatch):
    """The query whose hits include a duplicated id failed with `WHERE id IN ()` (the row copy collapsed the
    duplicate, then asked LanceDB for the empty rest)."""
    import retrieval.store.row_copy as row_copy

    monkeypatch.setattr(row_copy, "ROW_CACHE_MIN", 1)  # the in-memory row copy, as a large store has
    agent_store(tmp_path / "db")
    for _ in range(2):  # two readers (and the copy rebuilt) resolve it the same way
        ws = Workspace(str(tmp_path / "db"), embedder=EMB, fact_extractor="none")
        for scopes in (None, [U1]):  # unscoped: LanceDB's hits hydrated from the row copy; scoped: the copy's own
            hits = ws.store.query("I live in Porto", top_k=10, scopes=scopes)
            assert sorted(h.id for h in hits) == ["a", "b", "e"]
        assert [h.trace.content for h in hits if h.id == "a"] == ["I live in Porto."]
        res = ws.retriever().retrieve("where do I live Porto", scope=U1)
        assert res.ids.count("a") == 1
        assert [t.content for t in ws.store.get(["a", "a", "e"])] == ["I live in Porto.", "I work at Acme."]
        assert sorted(t.id for t in ws.store.all_traces()) == ["a", "b", "d", "e"]


@pytest.mark.parametrize("ids", [[], ["nope"]])
def test_a_delete_that_matches_nothing_removes_nothing_and_leaves_no_audit_gap(tmp_path, ids):
    ws = Workspace(str(tmp_path / "db"), embedder=EMB, fact_extractor="none")
    ws.ingest([trace("a", "alpha")])
    assert ws.delete(ids) == 0 and ws.store.count() == 1
    assert [e.traces for e in ws.audit.entries() if e.action == "delete"] == ([0] if ids else [])
    assert "audit gaps" not in doctor.check(ws).problems
