"""MemoryStore on LanceDB: upsert, validation, scope filters, cognitive scoring (SPEC §2)."""
import math
from datetime import datetime

import pytest

from retrieval import MemoryStore, MemoryTrace, Mood, Scope
from retrieval.models import HashingEmbedder
from retrieval.scoring import cognitive_score

from conftest import NOW, U1, U2, make_trace


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
    import retrieval.store as store_mod

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
