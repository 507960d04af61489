"""Per-scope BM25 statistics: a scoped read is exactly a fresh index of that scope's documents alone.

Store-wide N/df/avgdl let a visitor limited to one scope read other scopes through the numbers (df of a
word only another user wrote) and let another scope's upload move their scores. A scoped view must equal
an index built from the scope's documents alone — search, score, explain — after any sequence of writes,
and nothing of other scopes may show in it.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import NOW, make_trace
from retrieval.access import Access
from retrieval.bm25 import BM25Index
from retrieval.bm25 import topk
from retrieval.models import HashingEmbedder
from retrieval.pipeline.config import PipelineConfig
from retrieval.workspace.retrievers import build_retriever
from retrieval.types import Scope
from retrieval.workspace.core import Workspace

A, B, C = Scope("user", "a"), Scope("user", "b"), Scope("organization", "c")
WORDS = ["miso", "soup", "ramen", "biscuit", "ticket", "fx", "209847", "lisbon", "porto", "river", "noodle", "cake"]

docs = st.lists(st.tuples(st.integers(0, 30), st.lists(st.sampled_from(WORDS), min_size=0, max_size=8),
                          st.sampled_from([A, B, C, None])), min_size=1, max_size=40)


def fresh(pairs) -> BM25Index:
    idx = BM25Index()
    idx.add_documents(pairs)
    return idx


def assert_same(view, alone: BM25Index, query: str) -> None:
    got, want = view.search(query, 50), alone.search(query, 50)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12, abs=1e-12)
    for doc_id, _ in want:
        assert view.explain(query, doc_id) == pytest.approx(alone.explain(query, doc_id), rel=1e-12, abs=1e-12)
        rows = {r["term"]: (r["df"], r["idf"], r["avgdl"]) for r in view.explain_terms(query, doc_id)}
        assert rows == {r["term"]: (r["df"], pytest.approx(r["idf"]), pytest.approx(r["avgdl"]))
                        for r in alone.explain_terms(query, doc_id)}
    assert len(view) == len(alone)


@settings(max_examples=60, deadline=None)
@given(docs, st.lists(st.integers(0, 30), max_size=10), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
       st.sampled_from([[A], [B], [A, C], [A, B, C]]))
def test_a_scoped_view_is_an_index_of_the_scopes_documents_alone(batch, removed, query_words, scopes):
    idx = BM25Index(statistics="scope")
    latest: dict[str, tuple[str, Scope | None]] = {}
    for n, words, scope in batch:  # written in two batches, with removals between: incremental versions
        idx.add_documents([(f"d{n}", " ".join(words), scope)])
        latest[f"d{n}"] = (" ".join(words), scope)
    idx.remove_documents([f"d{n}" for n in removed])
    for n in removed:
        latest.pop(f"d{n}", None)
    alone = fresh([(i, text, s) for i, (text, s) in latest.items() if s in scopes])
    query = " ".join(query_words)
    view = idx.snapshot().scoped(scopes)
    assert_same(view, alone, query)
    assert idx.search(query, 50, scopes) == view.search(query, 50)  # the index setting reads the same view
    for doc_id, (_text, scope) in latest.items():
        assert (doc_id in view) == (scope in scopes)


def test_the_maxscore_plan_on_a_large_scope_is_exact_too(monkeypatch):
    monkeypatch.setattr(topk, "SCOPE_EXACT_MAX", 5)  # force the scope through the pruned whole-index plan
    monkeypatch.setattr(topk, "PRUNE_MIN_POSTINGS", 0)
    pairs = [(f"d{i}", " ".join(WORDS[j] for j in range(12) if (i * 7 + j) % (j + 2) == 0), [A, B][i % 3 == 0])
             for i in range(400)]
    idx = BM25Index()
    idx.add_documents(pairs)
    alone = fresh([p for p in pairs if p[2] == A])
    for query in ("miso soup", "ticket fx 209847 cake", "river noodle porto lisbon miso"):
        assert_same(idx.snapshot().scoped([A]), alone, query)


def test_nothing_of_another_scope_shows_and_its_upload_moves_nothing():
    idx = BM25Index()
    idx.add_documents([("p1", "status of ticket FX-209847 is open", A), ("p2", "ticket triage notes", A),
                       ("m1", "biscuit recipe with miso butter", B), ("m2", "miso soup and biscuit", B)])
    priya = idx.snapshot().scoped([A])
    assert {r["term"]: r["df"] for r in priya.explain_terms("miso biscuit ticket", "p2")} == {
        "miso": 0, "biscuit": 0, "ticket": 1 + 1}
    assert "m1" not in priya and priya.search("miso biscuit") == []
    with pytest.raises(KeyError):
        priya.explain("miso", "m1")
    before = priya.search("ticket status", 10)
    assert idx.snapshot().search("ticket status", 10, [A]) != before  # store-wide: maya's notes count
    idx.add_documents([(f"m{i}", "ticket ticket status of the biscuit", B) for i in range(3, 40)])
    assert idx.snapshot().scoped([A]).search("ticket status", 10) == before
    assert priya.stats()["documents"] == 2 and priya.stats()["statistics"] == "scope"


def test_views_are_cached_per_scope_set_and_refuse_to_be_scoped_twice():
    idx = fresh([("a", "miso", A), ("b", "miso", B)])
    snap = idx.snapshot()
    assert snap.scoped([A, B]) is snap.scoped([B, A])
    assert snap.scoped([A]).statistics == "scope" and snap.statistics == "store"
    with pytest.raises(ValueError, match="already scoped"):
        snap.scoped([A]).scoped([A])
    assert snap.scoped([Scope("user", "nobody")]).search("miso") == []
    with pytest.raises(ValueError, match="statistics 'global' is not one of store, scope"):
        BM25Index(statistics="global")


def store_of(tmp_path, **kw) -> Workspace:
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None, **kw)
    ws.ingest([make_trace("p1", "status of ticket FX-209847 is open", "priya"),
               make_trace("p2", "ticket triage notes for the week", "priya"),
               make_trace("m1", "biscuit recipe with miso butter and a ticket stub", "maya"),
               make_trace("m2", "miso soup and biscuit", "maya")])
    return ws


def test_a_new_store_records_per_scope_statistics_and_the_setting_survives_a_reopen(tmp_path):
    ws = store_of(tmp_path)
    assert ws.store.identity().statistics == "scope" and ws.bm25.statistics == "scope"
    assert ws.status()["bm25_statistics"] == "scope"
    ws.set_bm25_statistics("store")
    again = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    assert again.store.identity().statistics == "store" and again.bm25.statistics == "store"
    assert again.audit.entries()[0].action == "statistics"
    with pytest.raises(ValueError, match="not one of store, scope"):
        again.set_bm25_statistics("tenant")


def test_a_limited_visitor_cannot_change_the_statistics(tmp_path):
    from retrieval.access import AccessDenied

    ws = store_of(tmp_path)
    with pytest.raises(AccessDenied):
        ws.set_bm25_statistics("store", access=Access(user="maya@example.com", scopes=frozenset({"user:maya"}),
                                                      write=True))
    assert ws.store.identity().statistics == "scope"


def test_a_limited_visitor_always_gets_per_scope_statistics_whatever_the_store_records(tmp_path):
    ws = store_of(tmp_path)
    ws.set_bm25_statistics("store")
    priya = Scope("user", "priya")
    cfg = PipelineConfig()
    local = build_retriever(ws, cfg).retrieve("ticket miso", scope=priya)
    limited = build_retriever(ws, cfg, access=Access(user="priya@example.com", scopes=frozenset({"user:priya"})))
    res = limited.retrieve("ticket miso", scope=priya)

    def dfs(result) -> dict[str, int]:
        tree = result.diagnostics.explain("p2").bm25_tree
        return {r["term"]: r["df"] for r in tree}

    assert dfs(local)["miso"] == 2 and dfs(local)["ticket"] == 3  # store-wide: maya's notes are counted
    assert dfs(res) == {"ticket": 2, "miso": 0}  # priya's own: nothing of maya's shows
    assert [t.id for t in res.traces] and all(t.trace.scope_id == "priya" for t in res.traces)
