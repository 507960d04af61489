"""MemoryStore on LanceDB: upsert, validation, scope filters, cognitive scoring (SPEC §2)."""
import math
from datetime import datetime

import pytest

from retrieval import MemoryStore, MemoryTrace, Mood, Scope
from retrieval.models import HashingEmbedder
from retrieval.store.cognitive import cognitive_score

from conftest import NOW, U1, U2, make_trace


@pytest.fixture(autouse=True, params=["lancedb", "row-copy"])
def read_path(request, monkeypatch):
    """Every test here runs twice: rows read from LanceDB, and from the in-memory row copy that
    stores past ROW_CACHE_MIN rows use (retrieval.store.row_copy) — the results must not differ."""
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0 if request.param == "row-copy" else 10**9)
    return request.param


def test_cognitive_score_golden():
    t = make_trace("t", "x", days=1, valence=0.8, confidence=1.0)
    score, parts = cognitive_score(t, cosine=1.0, now=NOW, mood=Mood(valence=0.5))
    assert parts.strength == pytest.approx(0.5 * math.exp(-24))
    assert parts.recency == pytest.approx(math.exp(-1))
    assert parts.emotional == pytest.approx(0.4)
    assert (parts.similarity, parts.graph, parts.importance) == (1.0, 0.0, 1.0)
    assert score == pytest.approx(0.25 * 0.5 * math.exp(-24) + 0.35 + 0.1 * math.exp(-1) + 0.15 * 0.4 + 0.05)
    neutral, p2 = cognitive_score(t, 1.0, NOW, Mood(valence=0.5), neutral_mood=True)
    assert p2.emotional == 0.0 and neutral == pytest.approx(score - 0.06)
    clamped, p3 = cognitive_score(t, -0.4, NOW, None, weights={**dict.fromkeys(p2.as_dict(), 5.0)})
    assert p3.similarity == 0.0 and clamped == 1.0


def test_add_get_count_scopes_and_upsert(store, traces):
    assert store.add(traces) == len(traces)
    assert store.count() == 8 and store.count(U2) == 1
    assert store.scopes() == [U1, U2]
    got = store.get(["hike", "nope", "inv"])
    assert [t.id for t in got] == ["hike", "inv"]
    assert got[0] == traces[2]  # every field round-trips, datetimes stay aware
    store.add([make_trace("hike", "Rewritten hike note", days=0)])
    assert store.count() == 8 and store.get(["hike"])[0].content == "Rewritten hike note"
    assert store.delete(["hike", "nope"]) == 1 and store.count() == 7


def test_duplicate_ids_in_one_batch_last_wins_and_are_reported(store):
    store.add([make_trace("a", "first"), make_trace("b", "bee"), make_trace("a", "second")])
    assert store.get(["a"])[0].content == "second"
    assert store.last_add_report.duplicates == ["a"]


@pytest.mark.parametrize("bad,field", [
    (dict(content="   "), "content"),
    (dict(id=""), "id"),
    (dict(created_at=datetime(2026, 1, 1)), "created_at"),
    (dict(valence=1.5), "valence"),
    (dict(arousal=-0.1), "arousal"),
    (dict(confidence=2.0), "confidence"),
    (dict(scope="galaxy"), "scope"),
])
def test_invalid_trace_rejects_the_whole_batch(store, bad, field):
    store.add([make_trace("keep", "already stored")])
    good = make_trace("good", "fine text")
    kw = dict(id="bad1", content="text", scope="user", scope_id="u1", created_at=NOW)
    kw.update(bad)
    with pytest.raises(ValueError, match=field):
        store.add([good, MemoryTrace(**kw)])
    assert [t.id for t in store.all_traces()] == ["keep"]


def test_error_names_the_trace_id(store):
    with pytest.raises(ValueError, match=r"'t-42'.*valence"):
        store.add([make_trace("t-42", "x", valence=-3)])


def test_query_filters_scope_and_inactive_and_sorts(store, traces):
    store.add(traces)
    hits = store.query("invoice INV-8842 refund", top_k=10, scopes=[U1])
    ids = [h.id for h in hits]
    assert "other" not in ids and "old" not in ids
    assert ids[0] == "inv"
    scores = [h.retrieval_score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert store.query("  ") == [] and store.query("x", scopes=[Scope("user", "nobody")]) == []


def test_identical_text_has_similarity_one_and_golden_score(store):
    t = make_trace("only", "a unique sentence about lentils", days=2)
    store.add([t])
    [hit] = store.query("a unique sentence about lentils", top_k=1)
    assert hit.score_breakdown.similarity == pytest.approx(1.0, abs=1e-5)
    expect, _ = cognitive_score(t, 1.0, NOW)
    assert hit.retrieval_score == pytest.approx(expect, abs=1e-5)


def test_over_fetch_is_two_times_top_k_before_cognitive_sort(store):
    # The most similar trace is old; a slightly less similar fresh one wins after cognitive scoring.
    store.add([make_trace("old-exact", "green tea ceremony", days=300),
               make_trace("fresh-close", "green tea ceremony kyoto", days=0, encoding_strength=1.0)])
    hits = store.query("green tea ceremony", top_k=1)
    assert [h.id for h in hits] == ["fresh-close"]


def test_sql_injection_in_scope_id_never_leaks(store, traces):
    store.add(traces)
    evil = Scope("user", "u1' OR '1'='1")
    assert store.query("invoice", scopes=[evil]) == []
    assert store.count(evil) == 0
    assert store.get_with_vectors(["inv"], scopes=[evil]) == {}
    store.add([make_trace("q", "quoted scope", scope_id="o'brien")])
    assert [h.id for h in store.query("quoted scope", scopes=[Scope("user", "o'brien")])] == ["q"]


def test_scope_kind_is_validated():
    with pytest.raises(ValueError, match="not one of"):
        Scope("user' OR 1=1 --", "x")


def test_scoring_weights_override_and_validation(store, traces):
    store.add(traces)
    only_sim = store.query("lentil soup", top_k=3, scopes=[U1], scoring_weights={
        "strength": 0, "recency": 0, "emotional": 0, "graph": 0, "importance": 0, "similarity": 1})
    assert only_sim[0].retrieval_score == pytest.approx(only_sim[0].score_breakdown.similarity)
    with pytest.raises(ValueError, match="unknown scoring weight 'speed'"):
        store.query("x", scoring_weights={"speed": 1})


def test_embedder_dimension_mismatch_is_explained(tmp_path, traces):
    s = MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(64))
    s.add(traces[:2])
    other = MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(32))
    with pytest.raises(ValueError, match="64-d vectors but the embedder makes 32-d"):
        other.count()


def test_add_builds_the_index_by_itself_past_the_threshold(tmp_path, monkeypatch):
    import retrieval.store.writes as store_mod

    monkeypatch.setattr(store_mod, "ANN_MIN_ROWS", 300)
    s = MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW)
    s.add([make_trace(f"a{i}", f"first batch note {i}") for i in range(200)])
    assert not s.index_state()["ann_index"]
    s.add([make_trace(f"b{i}", f"second batch note {i}") for i in range(200)])
    assert s.index_state()["ann_index"]
    assert "b17" in [h.id for h in s.query("second batch note 17", top_k=5)]
    assert s.ensure_ann_index(force=True) and s.index_state()["ann_index"]  # a rebuild keeps it usable


def test_ann_index_is_built_past_the_threshold_and_still_finds_exact_match(tmp_path):
    s = MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW)
    s.add([make_trace(f"t{i}", f"note number {i} about topic {i % 17} and {i % 5}") for i in range(600)])
    assert not s.ensure_ann_index(min_rows=1000)
    assert s.ensure_ann_index(min_rows=500)
    assert s.index_state()["ann_index"]
    hits = s.query("note number 123 about topic 4 and 3", top_k=5)
    assert "t123" in [h.id for h in hits]


def test_the_row_copy_follows_every_write(store, traces, read_path):
    """Upsert, deactivate, delete: the next read sees each write (the copy is per table version)."""
    store.add(traces)
    v = store.embed_query(traces[0].content)
    assert store.get([traces[0].id])[0].content == traces[0].content
    store.add([make_trace(traces[0].id, "rewritten text entirely", "u1")])
    assert store.get([traces[0].id])[0].content == "rewritten text entirely"
    store.set_active([traces[1].id], False)
    assert traces[1].id not in {h.id for h in store.query_vector(v, top_k=50)}
    assert traces[1].id not in store.get_with_vectors([traces[1].id])
    assert traces[1].id in store.get_with_vectors([traces[1].id], active_only=False)
    store.delete([traces[2].id])
    assert store.get([traces[2].id]) == [] and traces[2].id not in {h.id for h in store.query_vector(v, top_k=50)}
    if read_path == "row-copy":
        assert store.row_copy.current() is not None and store.row_copy.current().inactive >= 2


def test_get_with_vectors_filters_scope_and_activity_on_both_paths(store, traces):
    store.add(traces)
    ids = [t.id for t in traces]
    got = store.get_with_vectors(ids, scopes=[U1])
    assert got and all(t.scope_key == U1 and t.is_active for t, _v in got.values())
    for t, vec in got.values():
        assert vec.shape == (64,) and abs(float(vec @ store.embed_query(t.content)) - 1.0) < 1e-5


@pytest.mark.parametrize("indexed", [False, True])
def test_the_row_copy_returns_exactly_what_lancedb_returns(tmp_path, monkeypatch, indexed):
    """Same store, both read paths: scoped (int8 candidates, exact float32 cosines) and unscoped
    queries give the same ids in the same order with the same scores (to float32 rounding: numpy's
    cosine vs LanceDB's); get/get_with_vectors agree exactly. With an IVF-SQ index, the copy
    re-scores the index's candidates on its spill file where LanceDB uses its refine step."""
    import random

    import hashlib

    import numpy as np

    class RandomEmbedder:  # continuous cosines: no ties at the cut for either path to break its own way
        name, dim = "random-64", 64

        def embed(self, texts):
            seeds = [int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) for t in texts]
            v = np.stack([np.random.default_rng(x).normal(size=64) for x in seeds]).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    rng = random.Random(3)
    words = [f"w{i}" for i in range(400)]
    st = MemoryStore(str(tmp_path / "db"), embedder=RandomEmbedder(), clock=lambda: NOW)
    st.add([make_trace(f"t{i}", " ".join(rng.choices(words, k=8)), f"u{i % 3}", days=i % 40,
                       is_active=i % 17 != 0) for i in range(300)])
    queries = [" ".join(rng.choices(words, k=3)) for _ in range(12)]
    if indexed:
        assert st.ensure_ann_index(force=True) and st.ann.plan()[2] == 2

    def read_all():
        out = []
        for q in queries:
            v = st.embed_query(q)
            for scopes in (None, [Scope("user", "u1")], [Scope("user", "u0"), Scope("user", "u2")]):
                out.append([(h.id, h.retrieval_score) for h in st.query_vector(v, top_k=8, scopes=scopes)])
        ids = [f"t{i}" for i in range(0, 300, 7)]
        out.append([t.id for t in st.get(ids)] + [f"{k}={v}" for k, v in st.scope_counts().items()])
        out.append(sorted((i, t.content, v.tobytes()) for i, (t, v) in st.get_with_vectors(ids, [Scope("user",
                                                                                                       "u1")]).items()))
        return out

    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 10**9)
    plain = read_all()
    monkeypatch.setattr("retrieval.store.row_copy.ROW_CACHE_MIN", 0)
    assert st.row_copy.current() is not None and st.row_copy.current().spilled
    copied = read_all()
    assert copied[-2:] == plain[-2:]
    for got, want in zip(copied[:-2], plain[:-2]):
        assert [i for i, _ in got] == [i for i, _ in want], (got, want)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
