"""The fusion lab: every candidate is a re-fusion of cached runs, chosen on the tune half, reported held-out."""
import pytest

from retrieval.pipeline.assemble import reweight
from retrieval.eval.lab import Candidate, fusion_grid, search_fusions
from retrieval.fusion import FUSIONS
from retrieval.eval.runner import LabelledQuery, credited_ids, held_out_split, run_queries, score_ranking
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

from conftest import CORPUS, U1, make_trace

QUERIES = [("invoice INV-8842 refund", {"inv": 2, "billing": 1}), ("ridge trail dog", {"hike": 2}),
           ("where do I live", {"lisbon": 2}), ("flight to Madrid", {"flight": 2}), ("lentil soup", {"recipe": 2}),
           ("refund payment help", {"billing": 2}), ("TP1351 terminal", {"flight": 1})]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    ws = Workspace(str(tmp_path_factory.mktemp("lab") / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    ws.ingest([make_trace(*row) for row in CORPUS])
    qs = [LabelledQuery(f"q{i}", q, rel, U1) for i, (q, rel) in enumerate(QUERIES)]
    return {p: run_queries(ws.retriever(preset=p, fact_store=None), qs, recall_top_k=3, over_fetch_multiplier=2)
            for p in ("hybrid", "agentos")}


def test_grid_has_every_fusion_and_normalisation():
    grid = fusion_grid((0.3, 0.7), (10, 60))
    assert [c.label for c in grid[:4]] == ["RRF k=10, dense 0.3", "RRF k=60, dense 0.3", "RRF k=10, dense 0.7",
                                           "RRF k=60, dense 0.7"]
    convex = [c for c in grid if c.fusion == "convex"]
    assert [(c.normalization, c.dense_weight) for c in convex] == [(n, w) for n in ("minmax", "theoretical", "zscore")
                                                                   for w in (0.3, 0.7)]
    # then every strategy registered later, each × its own declared grid × the weights
    assert {c.fusion for c in grid} == set(FUSIONS) and grid[4:10] == convex
    assert Candidate.of("convex", 0.3).knobs()["sparse_weight"] == 0.7


def test_a_candidate_is_one_strategy_value():
    from retrieval.fusion import RRF, Convex

    c = Candidate.of("convex", 0.3, 10, "zscore")
    assert c == Candidate(Convex(normalization="zscore", weights=(0.3, 0.7)))  # k means nothing to convex: dropped
    assert (c.fusion, c.dense_weight, c.normalization, c.rrf_k) == ("convex", 0.3, "zscore", None)
    assert c.knobs() == {"fusion": "convex", "dense_weight": 0.3, "sparse_weight": 0.7, "normalization": "zscore",
                         "adaptive": False}
    assert Candidate.of("rrf", 0.4, 10).strategy == RRF(k=10, weights=(0.4, 0.6)) == RRF(k=10).balanced(0.4)
    assert Convex().balanced(0.7).weights == (0.7, 0.3)  # 1 − 0.7 is 0.3, not 0.30000000000000004
    with pytest.raises(ValueError, match="a candidate is a fusion strategy"):
        Candidate("rrf")  # type: ignore[arg-type]


def test_scores_are_recomputed_refusions_and_the_best_is_the_tune_argmax(runs):
    hybrid = runs["hybrid"]
    grid = fusion_grid((0.2, 0.5, 0.8), (5, 60))
    lab = search_fusions(hybrid, grid)
    half = {r.q.qid: held_out_split(r.q.qid) for r in hybrid}
    assert set(half.values()) == {"tune", "held-out"}
    for cs in lab.scores:
        vals = {r.q.qid: score_ranking(credited_ids(reweight(r.result, **cs.candidate.knobs()), "final"),
                                       r.q.qrels)["ndcg@10"] for r in hybrid}
        tune = [v for q, v in vals.items() if half[q] == "tune"]
        held = [v for q, v in vals.items() if half[q] == "held-out"]
        assert cs.tune == pytest.approx(sum(tune) / len(tune)) and cs.held_out == pytest.approx(sum(held) / len(held))
    assert lab.best.tune == max(s.tune for s in lab.scores)
    assert lab.best_of("convex", "zscore").candidate.normalization == "zscore"
    for row, r in zip(lab.per_query, hybrid):
        assert row["delta"] == pytest.approx(row["best"] - row["baseline"]) and row["qid"] == r.q.qid
    assert lab.baseline.candidate == Candidate.of("convex", 0.5, 10.0, "theoretical")  # the runs' hybrid defaults
    assert lab.baseline.candidate.strategy is hybrid[0].result.diagnostics.settings.strategy  # held, not rebuilt
    assert lab.to_dict()["best"]["label"] == lab.best.candidate.label


def test_agentos_runs_only_search_rrf(runs):
    lab = search_fusions(runs["agentos"], fusion_grid((0.5,), (60,)))
    assert [s.candidate.fusion for s in lab.scores] == ["rrf"]
    with pytest.raises(ValueError, match="always RRF"):
        search_fusions(runs["agentos"], [Candidate.of("convex", 0.5)])
    with pytest.raises(ValueError, match="at least one labelled query"):
        search_fusions([], fusion_grid())
