"""The row copy of a large store follows this process's own writes without a rebuild, and reads
exactly what LanceDB reads after any sequence of upserts, deletes and (de)activations
(retrieval.store.row_copy)."""
from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from retrieval import MemoryStore, Scope

from conftest import NOW, make_trace

WORDS = [f"w{i}" for i in range(300)]
SCOPES = [Scope("user", f"u{i}") for i in range(3)]


class RandomEmbedder:  # continuous cosines: no ties for either read path to break its own way
    name, dim = "random-32", 32

    def embed(self, texts):
        seeds = [int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) for t in texts]
        v = np.stack([np.random.default_rng(x).normal(size=32) for x in seeds]).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def new_store(path) -> MemoryStore:
    st_ = MemoryStore(str(path), embedder=RandomEmbedder(), clock=lambda: NOW)
    rng = random.Random(1)
    st_.add([make_trace(f"t{i}", " ".join(rng.choices(WORDS, k=6)), f"u{i % 3}", days=i % 30,
                        is_active=i % 13 != 0) for i in range(120)])
    return st_


def reads(store: MemoryStore, written: tuple[str, ...] = ()) -> tuple[list, list[float]]:
    """Everything a retrieval reads from the store, as comparable values, and the scores apart
    (numpy's cosine vs LanceDB's: equal to float32 rounding). `written`: texts written since the
    copy was made, searched for too (each is its own row's nearest neighbour)."""
    out, scores = [], []
    for q in ("w1 w2", "w40 w7 w9", "w200", *written):
        v = store.embed_query(q)
        for scopes in (None, [SCOPES[1]], [SCOPES[0], SCOPES[2]]):
            for k in (3, 60):
                hits = store.query_vector(v, top_k=k, scopes=scopes)
                out.append([h.id for h in hits])
                scores += [h.retrieval_score for h in hits]
    ids = [f"t{i}" for i in range(0, 140, 3)] + ["new0", "new1", "nope"]
    out.append([(t.id, t.content, t.is_active, t.scope_id) for t in store.get(ids)])
    got = store.get_with_vectors(ids, [SCOPES[1]], active_only=False)
    out.append(sorted((i, t.content, t.is_active, v.round(6).tobytes()) for i, (t, v) in got.items()))
    out.append(sorted(store.get_with_vectors(ids)))
    out.append(sorted((str(k), v) for k, v in store.scope_counts().items()))
    return out, scores


def assert_same_reads(store: MemoryStore, monkeypatch, written: tuple[str, ...] = ()) -> None:
    got, got_scores = reads(store, written)
    want, want_scores = lancedb_reads(store, monkeypatch, written)
    assert got == want
    assert got_scores == pytest.approx(want_scores, abs=1e-6)


def lancedb_reads(store: MemoryStore, monkeypatch, written: tuple[str, ...] = ()) -> list:
    """The same reads by another store object on the same table, reading LanceDB only."""
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 10**9)
    try:
        plain = MemoryStore(store.uri, embedder=RandomEmbedder(), clock=lambda: NOW)
        assert plain.row_copy.current() is None
        return reads(plain, written)
    finally:
        monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)


@pytest.fixture
def copied(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)
    store = new_store(tmp_path / "db")
    assert store.row_copy.current() is not None
    return store


def test_own_writes_advance_the_copy_without_a_rebuild(copied, monkeypatch):
    base = copied.row_copy.current().data
    copied.add([make_trace("t4", "rewritten w1 w2 text", "u2"), make_trace("new0", "brand new w40 note", "u1")])
    copied.delete(["t5", "nope"])
    copied.set_active(["t7", "new0"], False)
    copied.set_active(["t13"], True)
    cache = copied.row_copy.current()
    assert cache.data is base, "the copy was rebuilt"
    assert cache.version == copied.table().version
    assert set(cache.ov_rows) == {"t4", "new0", "t7", "t13"} and cache.dead == {"t4", "t5", "t7", "t13"}
    assert cache.inactive == copied.count() - copied.count(active_only=True)
    assert len(cache) == copied.count()
    written = ("rewritten w1 w2 text", "brand new w40 note")
    assert_same_reads(copied, monkeypatch, written)


def test_with_an_index_the_copy_searches_the_index_and_the_rows_it_leaves_out(copied, tmp_path, monkeypatch):
    """Unscoped: LanceDB searches only the IVF-SQ index (row ids); the rows outside it and this
    process's writes are searched from the copy, and every candidate re-scored exactly. Each step
    reads as LanceDB (refine step, flat scan of the unindexed rows) reads."""
    import retrieval.store.memory as store_mod

    answered = []
    real = store_mod.index_and_tail
    monkeypatch.setattr(store_mod, "index_and_tail", lambda *a: answered.append(real(*a)) or answered[-1])
    assert copied.ensure_ann_index(force=True)
    cache = copied.row_copy.current()
    assert cache.unindexed_pos is not None and len(cache.unindexed_pos) == 0  # rebuilt after the index
    copied.add([make_trace("t3", "rewritten w9 w40", "u1"), make_trace("new0", "fresh w1 w200", "u2")])
    copied.delete(["t6"])
    copied.set_active(["t8"], False)
    assert copied.row_copy.current().data is cache.data
    written = ("rewritten w9 w40", "fresh w1 w200")
    assert_same_reads(copied, monkeypatch, written)
    assert answered and all(a is not None for a in answered)
    # another writer appends rows the index does not cover: the rebuilt copy finds them, and the
    # rows written here since the index, by fragment
    other = MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW)
    other.add([make_trace(f"x{i}", f"other writer w{i} w3", "u0") for i in range(5)])
    copied.table().checkout_latest()
    cache = copied.row_copy.current()
    assert copied.index_state()["unindexed_rows"] > 0
    assert sorted(cache.data.column("id").take(cache.unindexed_pos).to_pylist()) == sorted(
        ["new0", "t3", "t8"] + [f"x{i}" for i in range(5)])
    answered.clear()
    assert_same_reads(copied, monkeypatch, written + ("other writer w2 w3",))
    assert answered and all(a is not None for a in answered)


def test_another_writers_commit_makes_the_copy_rebuild(copied, tmp_path, monkeypatch):
    base = copied.row_copy.current().data
    other = MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW)
    other.add([make_trace("t1", "changed by another process w1", "u1")])
    copied.add([make_trace("t2", "changed here w2", "u2")])  # our handle was one version behind
    cache = copied.row_copy.current()
    assert cache.data is not base and not cache.ov_rows
    assert copied.get(["t1", "t2"])[0].content == "changed by another process w1"
    assert_same_reads(copied, monkeypatch)


def test_a_large_overlay_falls_back_to_a_rebuild(copied, monkeypatch):
    monkeypatch.setattr("retrieval.store.row_cache.OVERLAY_MAX", 5)
    base = copied.row_copy.current().data
    copied.add([make_trace(f"new{i}", f"bulk w{i} note", "u1") for i in range(6)])
    assert copied.row_copy.held is None  # released before the rebuild, not held beside it
    assert copied.row_copy.current().data is not base
    assert_same_reads(copied, monkeypatch)


OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.lists(st.integers(0, 140), min_size=1, max_size=4), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 140), min_size=1, max_size=3), st.just(0)),
    st.tuples(st.just("deactivate"), st.lists(st.integers(0, 140), min_size=1, max_size=3), st.just(0)),
    st.tuples(st.just("activate"), st.lists(st.integers(0, 140), min_size=1, max_size=3), st.just(0)),
), min_size=1, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_sequence_of_own_writes_reads_as_lancedb_does(tmp_path_factory, monkeypatch, ops):
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)
    store = new_store(tmp_path_factory.mktemp("db") / "db")
    base = store.row_copy.current().data
    written = []
    for n, (op, nums, scope) in enumerate(ops):
        ids = [f"t{i}" for i in nums]
        if op == "add":
            written += [f"v{n} {i} w{n} text" for i in ids]
            store.add([make_trace(i, f"v{n} {i} w{n} text", f"u{scope}") for i in ids])
        elif op == "delete":
            store.delete(ids)
        else:
            store.set_active(ids, op == "activate")
    assert store.row_copy.current().data is base
    assert_same_reads(store, monkeypatch, tuple(written))


def test_without_a_spill_file_vectors_come_from_lancedb(tmp_path, monkeypatch):
    """A spill directory that cannot be written (a full or missing disk) costs speed, not answers."""
    monkeypatch.setenv("RETRIEVAL_SPILL_DIR", str(tmp_path / "no" / "such" / "dir"))
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)
    store = new_store(tmp_path / "db")
    assert store.ensure_ann_index(force=True)
    assert store.row_copy.current() is not None and not store.row_copy.current().spilled
    store.add([make_trace("new0", "fresh w1 w200", "u2")])
    assert_same_reads(store, monkeypatch, ("fresh w1 w200",))


@pytest.mark.parametrize("postfilter_max", [1_000, 0])
def test_large_scopes_search_lancedb_and_rescore_on_the_spill_file(copied, monkeypatch, postfilter_max):
    """A scope too big for the copy's exact scan, and (0) more inactive rows than a post-filter
    takes: LanceDB searches with the filter, the copy re-scores its candidates exactly."""
    monkeypatch.setattr("retrieval.store.memory.EXACT_SCOPE_ROWS", 0)
    monkeypatch.setattr("retrieval.store.memory.POSTFILTER_MAX", postfilter_max)
    assert copied.ensure_ann_index(force=True)
    assert copied.row_copy.current().spilled
    assert_same_reads(copied, monkeypatch)  # every row indexed: LanceDB's distances are quantised
    copied.add([make_trace("new0", "fresh w1 w200", "u1")])
    assert_same_reads(copied, monkeypatch, ("fresh w1 w200",))


def test_a_large_deactivation_drops_the_copy_instead_of_keeping_stale_rows(copied, monkeypatch):
    monkeypatch.setattr("retrieval.store.row_cache.OVERLAY_MAX", 2)
    monkeypatch.setattr("retrieval.store.writes.OVERLAY_MAX", 2)
    copied.set_active(["t1", "t2", "t3"], False)
    assert copied.row_copy.held is None
    assert not any(t.is_active for t in copied.get(["t1", "t2", "t3"]))
    assert_same_reads(copied, monkeypatch)


def test_a_commit_beside_a_metadata_write_makes_the_copy_rebuild(copied, tmp_path, monkeypatch):
    from retrieval.store.identity import read_identity, write_identity

    tbl = copied.table()
    with copied.row_copy.unchanged(tbl):
        MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW).delete(["t2"])
        tbl.checkout_latest()
        write_identity(tbl, read_identity(tbl))
    assert copied.row_copy.held is None
    assert copied.get(["t2"]) == []
    assert_same_reads(copied, monkeypatch)


def test_a_failure_applying_a_write_to_the_copy_does_not_fail_the_write(copied, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("simulated")

    monkeypatch.setattr("retrieval.store.row_copy.RowCache.advanced", broken)
    assert copied.add([make_trace("new0", "fresh w1 w200", "u1")]) == 1
    assert copied.row_copy.held is None
    assert copied.get(["new0"])[0].content == "fresh w1 w200"
    assert_same_reads(copied, monkeypatch, ("fresh w1 w200",))


def test_a_commit_during_the_build_is_not_served_from_a_mixed_copy(tmp_path, monkeypatch):
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)
    store = new_store(tmp_path / "db")
    real = MemoryStore.index_state

    def with_a_commit(self):
        state = real(self)
        if not getattr(store, "_moved", False):
            store._moved = True
            MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW).delete(["t4"])
            self.table().checkout_latest()
        return state

    monkeypatch.setattr(MemoryStore, "index_state", with_a_commit)
    assert store.row_copy.current() is None  # this read goes to LanceDB
    assert store.get(["t4"]) == []
    assert store.row_copy.current() is not None and "t4" not in store.row_copy.current().pos


def test_many_rows_outside_the_index_are_preselected_then_scored_exactly(copied, tmp_path, monkeypatch):
    assert copied.ensure_ann_index(force=True)
    other = MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW)
    other.add([make_trace(f"x{i}", f"outside w{i} w{i % 7}", f"u{i % 3}") for i in range(80)])
    copied.table().checkout_latest()
    assert len(copied.row_copy.current().unindexed_pos) == 80
    assert_same_reads(copied, monkeypatch, ("outside w5 w5", "outside w70 w0"))
