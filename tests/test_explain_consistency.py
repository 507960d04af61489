"""Explanations add up: over every demo query × both presets × reranker on/off × split on/off,
each touched id's explanation agrees with the stage lists, the fusion contributions, the blend formula,
the split gain, the cognitive terms and the BM25 term tree — one source for every number."""
import pytest

from retrieval.ingest.demo import load_demo_traces
from retrieval.eval.runner import load_judgments
from retrieval.ingest.demo import JUDGMENTS
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

from conftest import StubReranker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    ws = Workspace(str(tmp_path_factory.mktemp("demo") / "db"), embedder=HashingEmbedder(64), fact_extractor="rule")
    ws.ingest(load_demo_traces())
    return ws


def _reranker():
    # deterministic, text-dependent scores in [0, 1] so halves and wholes differ
    return StubReranker(lambda q, t: (sum(map(ord, t)) % 97) / 96.0)


@pytest.mark.parametrize("preset", ["agentos", "hybrid"])
@pytest.mark.parametrize("rerank,split", [(False, None), (True, None), (True, 1.0)])
def test_every_explanation_agrees_with_the_stage_lists(demo_ws, preset, rerank, split):
    r = demo_ws.retriever(preset=preset, reranker=_reranker() if rerank else None, split_ambiguous_threshold=split)
    queries = load_judgments(JUDGMENTS)
    checked = 0
    for q in queries:
        res = r.retrieve(q.query, scope=q.scope, recall_top_k=10)
        d = res.diagnostics
        s = d.settings
        touched = dict.fromkeys(i for st in ("final", "reranked", "merged", "dense", "sparse") for i in d.stage_ids[st])
        for tid in touched:
            ex = d.explain(tid)
            for stage, pos in ex.stages.items():
                ids = d.stage_ids[stage]
                assert (pos is None) == (tid not in ids)
                if pos is not None:
                    assert ids[pos[0] - 1] == tid and pos[1] == pytest.approx(d.stage_scores[stage][tid])
            assert (ex.dropped_at is None) == (tid in d.stage_ids["final"])
            if ex.rrf is not None:  # fused score = sum of the per-list contributions, each w / (k + rank)
                assert ex.stages["merged"][1] == pytest.approx(sum(ex.rrf["contributions"].values()))
                for name, c in ex.rrf["contributions"].items():
                    rank = ex.rrf["ranks"][name]
                    w = s["dense_weight"] if name.startswith("dense") else s["sparse_weight"]
                    if s["fusion"] == "rrf":
                        assert c == pytest.approx(0.0 if rank is None else w / (s["rrf_k"] + rank))
                    else:  # convex: weight × a normalised score in [0, 1]; absent from the list → 0
                        assert (c == 0.0) if rank is None else (0.0 <= c <= w + 1e-12)
            if ex.blend is not None:  # blended = (1 - w) * base + w * rerank; the reranked score adds the split gain
                b = ex.blend
                assert b["blended"] == pytest.approx((1 - b["weight"]) * b["base"] + b["weight"] * b["rerank"])
                assert b["rerank"] == ex.rerank_score
                gain = ex.split["gain"] if ex.split and ex.split["replaced"] else 0.0
                assert ex.stages["reranked"][1] == pytest.approx(b["blended"] + gain)
                if ex.split and ex.split["replaced"] and ex.dropped_at is None:
                    assert f"adding {ex.split['gain']:.4g}" in ex.reason
            if ex.dropped_at == "rerank":
                assert f"reranked score {ex.stages['reranked'][1]:.4g}" in ex.reason
            if ex.stages["dense"] is not None and ex.fact is None:  # cognitive terms sum to the dense score
                assert sum(t["points"] for t in ex.dense_terms) == pytest.approx(ex.stages["dense"][1])
            if ex.stages["sparse"] is not None:  # BM25 tree sums to the sparse score
                assert sum(t["score"] for t in ex.bm25_tree) == pytest.approx(ex.stages["sparse"][1])
                for row in ex.bm25_tree:
                    assert row["score"] == pytest.approx(row["qtf"] * row["idf"] * row["saturation"])
            if ex.stages["final"] is not None and ex.fact is None:
                assert f"score {ex.stages['final'][1]:.4g}" in ex.reason
            checked += 1
    assert checked > 500
