"""Metrics against hand-computed values; per-stage evaluation, fact crediting and the held-out sweep."""
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import RRF, parse_fusion
from retrieval.eval.datasets import parse_evidence, parse_session_date
from retrieval.metrics import dcg_at_k, evidence_recall_at_k, mrr, ndcg_at_k, recall_at_k
from retrieval.eval.runner import (LabelledQuery, credited_ids, held_out_split, run_queries, score_ranking, summarize,
                                   sweep)

QRELS = {"a": 2, "b": 1, "c": 0, "d": 1}


def test_recall_and_mrr_golden():
    assert recall_at_k(["x", "a", "b"], QRELS, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["x", "a", "b", "d"], QRELS, 10) == 1.0
    assert recall_at_k(["a"], {}, 10) == 0.0
    assert mrr(["x", "c", "b"], QRELS) == pytest.approx(1 / 3)
    assert mrr(["x", "y"], QRELS) == 0.0
    assert mrr(["x", "a"], QRELS, k=1) == 0.0


def test_ndcg_golden_graded():
    ranked = ["b", "x", "a"]
    dcg = 1 / math.log2(2) + 0 + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert dcg_at_k(ranked, QRELS, 10) == pytest.approx(dcg)
    assert ndcg_at_k(ranked, QRELS, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b", "d"], QRELS, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    assert ndcg_at_k(["x", "a"], QRELS, 1) == 0.0


def test_evidence_recall_golden():
    assert evidence_recall_at_k(["D1:3", "D2:1", "D1:3"], ["D1:3", "D4:4"], 2) == 0.5
    assert evidence_recall_at_k(["D1:3"], [], 5) == 0.0


def test_locomo_parsing_is_lenient():
    assert parse_evidence(["D8:6; D9:17", "D", "D:11:26", "D30:05", "D1:3"]) == ["D8:6", "D9:17", "D30:5", "D1:3"]
    assert parse_session_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"


def test_per_stage_eval_credits_facts_and_sweeps_on_halves(tmp_path):
    from retrieval.workspace.core import Workspace
    from retrieval.models import HashingEmbedder
    from conftest import U1, make_trace

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64))
    ws.ingest([make_trace("home", "I moved to Porto last weekend."), make_trace("soup", "lentil soup with cumin"),
               make_trace("trip", "flight to Madrid on Monday")])
    r = ws.retriever()
    queries = [LabelledQuery(f"q{i}", q, rel, U1) for i, (q, rel) in enumerate([
        ("where do I live now?", {"home": 2}), ("lentil soup", {"soup": 2}), ("flight Madrid", {"trip": 1}),
        ("cumin", {"soup": 1})])]
    runs = run_queries(r, queries)
    # the fact trace (from "home") takes rank 1 and is credited to its source
    assert runs[0].result.ids[0].startswith("fact-graph:") and runs[0].per_stage["final"]["mrr"] == 1.0
    rows = summarize(runs)
    assert [x["stage"] for x in rows] == ["dense", "sparse", "merged", "final"]
    assert all(0 <= x["ndcg@10"] <= 1 for x in rows)
    sw = sweep(r, runs, [0.0, 0.5, 0.7, 1.0], [10, 60])
    halves = {q.qid: held_out_split(q.qid) for q in queries}
    assert sorted(set(halves.values())) == ["held-out", "tune"]  # both halves have queries
    # every cell is the mean over its half of a re-fusion scored by hand, and the best cell is the tune argmax
    for i, w in enumerate(sw.dense_weights):
        for j, k in enumerate(sw.ks):
            for half, grid in (("tune", sw.tune), ("held-out", sw.held_out)):
                vals = [score_ranking(credited_ids(r.reweight(x.result, dense_weight=w, sparse_weight=round(1 - w, 6),
                                                              rrf_k=k, fusion="rrf"),
                                                   "final"),
                                                   x.q.qrels)["ndcg@10"] for x in runs if halves[x.q.qid] == half]
                assert grid[i][j] == pytest.approx(sum(vals) / len(vals))
    best = max(v for row in sw.tune for v in row)
    assert sw.best_params["tune"] == best and sw.tune[sw.best[0]][sw.best[1]] == best
    assert sw.best_params["held_out"] == sw.held_out[sw.best[0]][sw.best[1]]
    b = sw.best_params  # the best cell's strategy in its canonical form, reading back to the same weights
    assert parse_fusion(b["fusion"]) == RRF(k=b["rrf_k"], weights=(b["dense_weight"], b["sparse_weight"]))


def test_beir_upload_judgments():
    from retrieval.eval.datasets import beir_judgments
    from retrieval.types import Scope

    q = b'{"_id": "1", "text": "first"}\n{"_id": "2", "text": "unjudged"}\n'
    r = b"query-id\tcorpus-id\tscore\n1\tdocA\t1\n1\tdocB\t2\n"
    out = beir_judgments(q, r, Scope("organization", "beir"))
    assert [(x.qid, x.query, x.qrels) for x in out] == [("1", "first", {"docA": 1.0, "docB": 2.0})]
    with pytest.raises(ValueError, match="same dataset"):
        beir_judgments(q, b"9\tx\t1\n", None)
    with pytest.raises(ValueError, match="qrels line 1: has 2 column"):
        beir_judgments(q, b"1\tx\n", None)


def test_a_bad_judgments_upload_names_the_line_and_field_not_a_temp_path():
    from retrieval.eval.datasets import judgments_from_bytes

    good = b'{"qid": "q1", "query": "refund", "scope": "user:u1", "relevant": {"inv": 2}}\n'
    assert [(q.qid, q.qrels) for q in judgments_from_bytes(good, "mine.jsonl")] == [("q1", {"inv": 2.0})]
    for bad, why in [(b'{"qid": "1", "query": "x"}', "missing field 'relevant'"), (b"[1]",
                                                                                   "the line is not a JSON object"),
                     (b'{"qid": 1, "query": "q", "relevant": []}', "'relevant' must be an object")]:
        with pytest.raises(ValueError, match=f"mine.jsonl, line 2: {why}") as err:
            judgments_from_bytes(good + bad, "mine.jsonl")
        assert "/tmp" not in str(err.value)


def test_a_query_bm25_cannot_match_scores_zero_on_the_sparse_stage_instead_of_vanishing(tmp_path):
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace
    from conftest import U1, make_trace

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    ws.ingest([make_trace("soup", "lentil soup with cumin"), make_trace("trip", "flight to Madrid on Monday")])
    queries = [LabelledQuery("q1", "lentil soup", {"soup": 1}, U1), LabelledQuery("q2", "!!!", {"trip": 1}, U1)]
    rows = {r["stage"]: r for r in summarize(run_queries(ws.retriever(fact_store=None), queries))}
    assert rows["sparse"]["queries"] == 2 and rows["sparse"]["ndcg@10"] == pytest.approx(0.5)  # 1.0 and 0.0
    assert rows["final"]["queries"] == 2 and rows["merged"]["queries"] == 1  # "!!!" skipped fusion


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10), st.floats(0, 10, allow_nan=False), st.integers(0, 4).map(str)),
                min_size=1, max_size=4))
def test_evaluation_reads_any_grade_a_case_import_would_refuse(grades):
    """Evaluation keeps the old reader's range (TREC's 0–4, a mean 2.5, "2"); a case import holds its scale."""
    from retrieval.eval.datasets import judgments_from_bytes

    line = json.dumps({"qid": "q1", "query": "refund", "relevant": {f"d{i}": g for i, g in enumerate(grades)}})
    (q,) = judgments_from_bytes(line.encode(), "mine.jsonl")
    assert q.qrels == {f"d{i}": float(g) for i, g in enumerate(grades)}


def test_evaluation_refuses_a_grade_below_zero_or_a_missing_relevant_object():
    from retrieval.eval.datasets import judgments_from_bytes

    for rel, why in [("null", "'relevant' must be an object"), ('{"d": -1}', "grade -1 must be a finite number"),
                     ('{"d": "x"}', "grade 'x' must be a finite number"), ('{"d": NaN}', "grade nan must be")]:
        with pytest.raises(ValueError, match=f"mine.jsonl, line 1: {why}"):
            judgments_from_bytes(f'{{"qid": "q1", "query": "q", "relevant": {rel}}}'.encode(), "mine.jsonl")
