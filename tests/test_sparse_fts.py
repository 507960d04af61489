"""The LanceDB native full-text sparse backend: the pipeline's read interface, scopes, explain, writes."""
from __future__ import annotations

import pytest

from conftest import NOW, U1, U2, make_trace
from retrieval.models import HashingEmbedder
from retrieval.sparse.fts import BACKEND, LanceFtsSparse
from retrieval.workspace.core import Workspace


@pytest.fixture
def fts_ws(tmp_path, traces):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None,
                   sparse="fts")
    ws.set_analyzer("plain")  # these tests read unstemmed terms; the stemming test switches it
    ws.ingest(traces)
    return ws


@pytest.fixture
def bm25_ws(tmp_path, traces):
    ws = Workspace(str(tmp_path / "db2"), embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None)
    ws.ingest(traces)
    return ws


def test_it_is_the_workspace_sparse_index_and_writes_no_sidecar(fts_ws, tmp_path):
    assert isinstance(fts_ws.bm25, LanceFtsSparse)
    assert fts_ws.bm25.snapshot() is fts_ws.bm25
    assert not (tmp_path / "db" / "bm25.npz").exists()
    assert len(fts_ws.bm25) == 7  # active traces only
    st = fts_ws.status()
    assert st["sparse"] == "fts" and st["bm25_documents"] == 7 and st["in_step"]


def test_search_filters_scope_and_inactive_and_ranks_like_bm25(fts_ws, bm25_ws):
    q = "refund invoice INV-8842"
    fts = fts_ws.bm25.search(q, top_k=10, scopes=[U1])
    ours = bm25_ws.bm25.search(q, top_k=10, scopes=[U1])
    assert [i for i, _ in fts] == [i for i, _ in ours] == ["inv", "billing"]
    assert all(s > 0 for _, s in fts) and fts[0][1] > fts[1][1]
    assert [i for i, _ in fts_ws.bm25.search(q, scopes=[U2])] == ["other"]
    assert "old" not in {i for i, _ in fts_ws.bm25.search(q, top_k=20)}  # inactive never found
    assert fts_ws.bm25.search("", scopes=[U1]) == [] and fts_ws.bm25.search(q, top_k=0) == []
    assert fts_ws.bm25.search("the and of", scopes=[U1]) == []  # stopwords only


def test_scores_for_contains_and_explain_terms_add_up(fts_ws):
    idx = fts_ws.bm25
    q = "refund invoice"
    top = dict(idx.search(q, top_k=10))
    assert idx.scores_for(q, ["inv", "billing", "nope", "old"]) == pytest.approx(
        {"inv": top["inv"], "billing": top["billing"]})
    assert "inv" in idx and "old" not in idx and "nope" not in idx and 3 not in idx
    rows = idx.explain_terms(q, "inv")
    assert [r["term"] for r in rows] == ["refund", "invoice"]
    assert all(r["backend"] == BACKEND and r["idf"] is None and "only the score" in r["note"] for r in rows)
    assert sum(r["score"] for r in rows) == pytest.approx(top["inv"], rel=1e-4)
    with pytest.raises(KeyError):
        idx.explain_terms(q, "old")


def test_explain_says_which_backend_scored_a_hit(fts_ws, bm25_ws):
    for ws, backend in ((fts_ws, "lancedb-fts"), (bm25_ws, "bm25")):
        res = ws.retriever(fact_store=None).retrieve("refund for invoice INV-8842", scope=U1)
        ex = res.diagnostics.explain("inv")
        assert ex.bm25_tree and {r["backend"] for r in ex.bm25_tree} == {backend}


def test_new_rows_are_searchable_at_once_and_deletes_leave(fts_ws):
    fts_ws.ingest([make_trace("kayak", "Kayak rental by the river on Saturday", "u1")])
    assert [i for i, _ in fts_ws.bm25.search("kayak", scopes=[U1])] == ["kayak"]
    fts_ws.set_active(["kayak"], False)
    assert fts_ws.bm25.search("kayak", scopes=[U1]) == []
    fts_ws.delete(["inv"])
    assert "inv" not in fts_ws.bm25 and len(fts_ws.bm25) == 6


def test_the_stemming_analyzer_reaches_the_fts_index(fts_ws):
    assert fts_ws.bm25.search("invoices", scopes=[U1]) == []
    fts_ws.set_analyzer("english-stem")
    assert fts_ws.store.identity().analyzer == "english-stem"
    assert [i for i, _ in fts_ws.bm25.search("invoices", scopes=[U1])][0] == "inv"


def test_unknown_sparse_backend_is_refused(tmp_path):
    with pytest.raises(ValueError, match="sparse backend 'tantivy' is not one of bm25, fts"):
        Workspace(str(tmp_path / "x"), embedder=HashingEmbedder(64), sparse="tantivy")
