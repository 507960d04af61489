"""Facts converge whatever the interleaving of two writers (SPEC §18, workspace/facts_sync.py).

On object storage two processes can sync one trace's facts at once: A's facts stored last, B's mark written last.
The mark then says "extracted at B's content" over A's facts. The fingerprint of the facts in each mark catches
it: the next open replaces that trace's facts whole. Here the interleaving is staged in one process, step by step."""
from __future__ import annotations

import lancedb
import pyarrow as pa

from retrieval.facts import RuleFactExtractor, extract_for_traces
from retrieval.workspace.facts_sync import TABLE, FactSources, fingerprint, stored_keys

from conftest import make_trace
from test_workspace import ws_at


def facts_of(ws) -> list[tuple[str, str]]:
    return sorted((f.subject, f.object) for f in ws.facts.all())


def test_a_late_facts_write_under_another_writers_mark_is_replaced_at_the_next_open(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("x", "I live in Oslo."), make_trace("y", "My dog is called Rex.")])
    assert ("user", "Oslo") in facts_of(ws)
    # writer A extracted x from its older text and stores those facts after B marked x at its newer text
    extract_for_traces(ws.facts, RuleFactExtractor(), [make_trace("x", "I live in Porto.")], replace_ids=["x"])
    assert ("user", "Porto") in facts_of(ws) and ("user", "Oslo") not in facts_of(ws)
    assert ws_at(tmp_path / "db").status()["in_step"]  # opening repairs it (the status is after the open)
    again = ws_at(tmp_path / "db")
    fresh = ws_at(tmp_path / "fresh")
    fresh.ingest(again.store.all_traces())
    assert facts_of(again) == facts_of(fresh) and ("user", "Oslo") in facts_of(again)
    assert again.status()["facts_pending"] == 0


def test_a_fact_row_two_writers_inserted_twice_is_stored_once_after_the_next_open(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("x", "I live in Oslo.")])
    tbl = ws.facts._table(create=False)
    tbl.add(tbl.search().limit(None).to_arrow())  # the same fact row, inserted by both writers' merge_insert
    assert len(stored_keys(ws.facts)["x"]) == 2
    again = ws_at(tmp_path / "db")
    assert again.status()["in_step"]  # opens, reconciling
    assert len(stored_keys(again.facts)["x"]) == 1 and again.facts.count() == 1


def test_a_mark_without_a_fingerprint_is_trusted_and_the_column_added_at_the_next_mark(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([make_trace("x", "I live in Oslo.")])
    old = FactSources(str(tmp_path / "db")).read()
    db = lancedb.connect(str(tmp_path / "db"))
    db.drop_table(TABLE)  # the table as a store from before fingerprints holds it
    db.create_table(TABLE, pa.table({"trace_id": list(old), "hash": list(old.values())}))
    again = ws_at(tmp_path / "db")
    assert {i: m.facts for i, m in again.fact_sources.marks().items()} == {"x": None}
    assert again.facts.count() == 1 and again.status()["in_step"]
    again.ingest([make_trace("z", "My dog is called Rex.")])
    marks = FactSources(str(tmp_path / "db")).marks()
    assert marks["x"].facts is None and marks["z"].facts == fingerprint(stored_keys(again.facts)["z"])


def test_the_fingerprint_counts_a_fact_stored_twice_and_ignores_order():
    a, b = ("u", "1", "k1"), ("u", "1", "k2")
    assert fingerprint([a, b]) == fingerprint([b, a]) != fingerprint([a, b, b])
    assert fingerprint([]) == fingerprint(())
