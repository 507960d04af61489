"""FactStore: write-order tie-break, old tables, damaged tables, concurrent writers (SPEC §7, §12)."""
from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading
from datetime import datetime, UTC

import pytest
from hypothesis import given, settings, strategies as st

from retrieval.facts import Fact, FactStore, FactStoreError
from retrieval.facts.store import next_sequence

from conftest import U1, U2

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def lives(city: str, *sources: str, ts: datetime = T0) -> Fact:
    return Fact("I", "livesIn", city, ts, sources, f"I live in {city}.")


@pytest.mark.parametrize("first,second", [("Paris", "Amsterdam"), ("Amsterdam", "Zurich")])
def test_latest_breaks_a_timestamp_tie_on_write_order_not_on_the_text(tmp_path, first, second):
    fs = FactStore(str(tmp_path / "db"))
    assert fs.upsert(U1, [lives(first, "a")]) == 1
    assert fs.upsert(U1, [lives(second, "b")]) == 1
    assert fs.latest(U1, "user", "livesIn").object == second
    assert [f.object for f in fs.all_time_ordered(U1, "user")] == [first, second]
    # Within one batch the order of the batch is the write order.
    fs.upsert(U2, [lives(second, "c"), lives(first, "d")])
    assert fs.latest(U2, "user", "livesIn").object == first


def test_time_still_wins_over_write_order(tmp_path):
    fs = FactStore(str(tmp_path / "db"))
    fs.upsert(U1, [lives("Porto", "b", ts=T0.replace(year=2026))])
    fs.upsert(U1, [lives("Lisbon", "a")])  # written later, but older
    assert fs.latest(U1, "I", "livesIn").object == "Porto"
    assert [f.object for f in fs.all_time_ordered(U1, "I")] == ["Lisbon", "Porto"]


def test_removing_one_source_keeps_the_write_order(tmp_path):
    fs = FactStore(str(tmp_path / "db"))
    fs.upsert(U1, [lives("Paris", "a", "b")])
    fs.upsert(U1, [lives("Amsterdam", "c")])
    assert fs.delete_for_trace("a") == 0  # Paris keeps source b: narrowed, not removed
    assert [(f.object, f.source_trace_ids) for f in fs.all_time_ordered(U1, "user")] == [
        ("Paris", ("b",)), ("Amsterdam", ("c",))]
    assert fs.latest(U1, "user", "livesIn").object == "Amsterdam"
    assert fs.delete_for_trace("it's-not-there") == 0 and fs.count() == 2
    assert fs.delete_for_trace("c") == 1
    assert fs.latest(U1, "user", "livesIn").object == "Paris" and fs.count() == 1


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(["Paris", "Amsterdam", "Berlin", "Oslo", "Zurich", "Lima"]),
                min_size=1, max_size=5, unique=True), st.integers(1, 3))
def test_same_instant_history_is_write_order(cities, batch):
    with tempfile.TemporaryDirectory() as d:
        fs = FactStore(d)
        for i in range(0, len(cities), batch):
            fs.upsert(U1, [lives(c, f"t-{c}") for c in cities[i:i + batch]])
        assert [f.object for f in fs.all_time_ordered(U1, "user")] == cities
        assert fs.latest(U1, "user", "livesIn").object == cities[-1]


@given(st.lists(st.integers(0, 50), min_size=1, max_size=20))
def test_next_sequence_hands_out_disjoint_increasing_ranges(sizes):
    starts = [(next_sequence(n), max(n, 1)) for n in sizes]
    for (a, n), (b, _) in zip(starts, starts[1:]):
        assert b >= a + n


def test_a_table_without_the_sequence_column_still_opens_and_takes_writes(tmp_path):
    import lancedb
    import pyarrow as pa

    uri = str(tmp_path / "db")
    old = pa.schema([("key", pa.string()), ("scope", pa.string()), ("scope_id", pa.string()),
                     ("subject", pa.string()), ("predicate", pa.string()), ("object", pa.string()),
                     ("timestamp", pa.timestamp("us", tz="UTC")), ("source_trace_ids", pa.list_(pa.string())),
                     ("source_span", pa.string())])
    f = lives("Paris", "a")
    row = {"key": f.key, "scope": "user", "scope_id": "u1", "subject": "user", "predicate": "livesIn",
           "object": "Paris", "timestamp": T0, "source_trace_ids": ["a"], "source_span": "I live in Paris."}
    lancedb.connect(uri).create_table("facts", data=[row], schema=old)
    fs = FactStore(uri)
    assert fs.count() == 1
    assert fs.latest(U1, "user", "livesIn") == f  # a missing sequence reads as 0
    assert fs.upsert(U1, [lives("Amsterdam", "b")]) == 1
    assert fs.upsert(U1, [lives("Paris", "a")]) == 0  # still idempotent after the column was added
    assert fs.latest(U1, "user", "livesIn").object == "Amsterdam"
    assert "seq" in lancedb.connect(uri).open_table("facts").schema.names
    assert [x.object for x in FactStore(uri).all_time_ordered(U1, "user")] == ["Paris", "Amsterdam"]


def _garbage_data(p):
    for f in glob.glob(p + "/data/*"):
        open(f, "wb").write(b"garbage" * 10)


def _no_data(p):
    for f in glob.glob(p + "/data/*"):
        os.remove(f)


def _no_versions(p):
    shutil.rmtree(p + "/_versions")


def _truncated_manifest(p):
    for f in glob.glob(p + "/_versions/*"):
        open(f, "r+b").truncate(10)


def _a_file(p):
    shutil.rmtree(p)
    open(p, "w").write("not a table")


DAMAGE = [_garbage_data, _no_data, _no_versions, _truncated_manifest, _a_file]
OPS = {
    "count": lambda fs: fs.count(),
    "upsert": lambda fs: fs.upsert(U1, [lives("Rome", "z")]),
    "latest": lambda fs: fs.latest(U1, "user", "livesIn"),
    "delete_for_trace": lambda fs: fs.delete_for_trace("a"),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
def test_a_damaged_table_is_a_clear_error_never_a_quiet_answer(tmp_path, damage, op):
    uri = str(tmp_path / "db")
    FactStore(uri).upsert(U1, [lives("Paris", "a")])
    damage(os.path.join(uri, "facts.lance"))
    with pytest.raises(FactStoreError, match=r"fact table 'facts' at .*facts\.lance is unreadable .*re-ingest"):
        OPS[op](FactStore(uri))
    assert isinstance(FactStoreError("x"), RuntimeError)


def test_a_table_that_is_not_a_fact_table_is_named(tmp_path):
    import lancedb

    lancedb.connect(str(tmp_path / "db")).create_table("facts", data=[{"id": "x", "text": "hello"}])
    with pytest.raises(ValueError, match=r"table 'facts' at .* is not a fact table \(missing key, scope"):
        FactStore(str(tmp_path / "db")).upsert(U1, [lives("Rome")])


def test_concurrent_upserts_into_an_empty_store_store_each_fact_once(tmp_path):
    uri = str(tmp_path / "db")
    facts = [Fact("I", "visited", f"City {i}", T0, (f"t{i}",), "x") for i in range(120)]
    inserted, errors = [], []

    def writer():
        fs = FactStore(uri)  # one store per thread, as two sessions or a CLI would have
        try:
            for k in range(0, len(facts), 20):
                inserted.append(fs.upsert(U1, facts[k:k + 20]))
        except Exception as exc:  # pragma: no cover - the failure this test exists for
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert sum(inserted) == 120 and FactStore(uri).count() == 120
    keys = [f.key for f in FactStore(uri).all(U1)]
    assert len(keys) == len(set(keys)) == 120


def test_a_second_store_sees_writes_made_after_it_opened(tmp_path):
    uri = str(tmp_path / "db")
    reader, writer = FactStore(uri), FactStore(uri)
    writer.upsert(U1, [lives("Paris", "a")])
    assert reader.latest(U1, "user", "livesIn").object == "Paris"  # the reader's table is open now
    writer.upsert(U1, [lives("Amsterdam", "b")])
    writer.delete_for_trace("a")
    assert [f.object for f in reader.all_time_ordered(U1, "user")] == ["Amsterdam"]
    assert reader.count() == 1
