"""Issue #24's tools: the paired bootstrap against hand-computed cases, the bounded prior (pure) against hand
arithmetic, and the designs (cosine-only dense view, prior on the fused pool, worst-case-gain choice)."""
from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.eval.clock import make_clock
from retrieval.eval.designs import (SIMILARITY_ONLY, Design, ScoredStore, Variant, compare, issue24_designs, ranked,
                                    recommend, run_variant, score_designs, variant_index, worst_case_gain)
from retrieval.metrics import evidence_recall_at_k, paired_bootstrap
from retrieval.eval.runner import LabelledQuery, credited_ids
from retrieval.fusion import RRF
from retrieval.models import HashingEmbedder
from retrieval.pipeline.assemble import reweight
from retrieval.pipeline.prior import (PRIOR_TERMS, apply_prior, check_prior_weight, cognitive_prior, prior_weight_for,
                                      with_prior)
from retrieval.types import MemoryTrace, Scope, ScoreBreakdown, ScoredMemoryTrace
from retrieval.workspace.core import Workspace


# ---------------------------------------------------------------- paired bootstrap
def test_bootstrap_two_queries_hand_computed():
    # differences {0, 1}: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4 → 95 % interval [0, 1]
    iv = paired_bootstrap([0.0, 0.0], [0.0, 1.0], resamples=4000)
    assert (iv.mean_a, iv.mean_b, iv.delta, iv.lo, iv.hi, iv.n) == (0.0, 0.5, 0.5, 0.0, 1.0, 2)
    assert not iv.above_zero and not iv.below_zero


def test_bootstrap_three_queries_hand_computed():
    # differences (0, 0, 3): the resample mean is k, k ~ Binomial(3, 1/3): P(k ≤ 2) = 26/27 ≈ 0.963 < 0.975, so
    # the upper 2.5 % tail reaches 3; P(k = 0) = 8/27 > 0.025, so the lower end is 0.
    iv = paired_bootstrap([1.0, 2.0, 0.0], [1.0, 2.0, 3.0], resamples=20_000, seed=7)
    assert (iv.delta, iv.lo, iv.hi) == (1.0, 0.0, 3.0)
    # a 50 % interval: P(k = 0) = 0.296 > 0.25 → lower 0; P(k ≤ 1) = 0.741 < 0.75 ≤ P(k ≤ 2) → upper 2
    half = paired_bootstrap([1.0, 2.0, 0.0], [1.0, 2.0, 3.0], resamples=20_000, confidence=0.5, seed=7)
    assert (half.lo, half.hi) == (0.0, 2.0)


def test_bootstrap_constant_difference_and_determinism():
    iv = paired_bootstrap([0.1, 0.3, 0.5, 0.2], [0.3, 0.5, 0.7, 0.4], resamples=500)
    assert iv.lo == pytest.approx(0.2) and iv.hi == pytest.approx(0.2) and iv.above_zero
    a, b = [0.2, 0.9, 0.4, 0.0, 0.5], [0.3, 0.6, 0.8, 0.1, 0.5]
    assert paired_bootstrap(a, b, seed=3) == paired_bootstrap(a, b, seed=3)
    assert paired_bootstrap(a, b).as_dict()["resamples"] == 10_000
    worse = paired_bootstrap(b, a)
    assert worse.delta == pytest.approx(-paired_bootstrap(a, b).delta)


@pytest.mark.parametrize("a, b, kw, msg", [([1.0], [1.0, 2.0], {}, "equal lengths"), ([], [], {}, "at least one"),
                                           ([1.0], [1.0], {"confidence": 1.0}, "confidence"),
                                           ([1.0], [1.0], {"resamples": 0}, "resamples")])
def test_bootstrap_validation(a, b, kw, msg):
    with pytest.raises(ValueError, match=msg):
        paired_bootstrap(a, b, **kw)


# ---------------------------------------------------------------- the bounded prior
PARTS = ScoreBreakdown(strength=1.0, similarity=0.9, recency=0.5, emotional=0.0, graph=0.0, importance=1.0)


def test_cognitive_prior_is_the_score_without_similarity_renormalised():
    # (0.25·1 + 0.10·0.5 + 0.15·0 + 0.10·0 + 0.05·1) / (0.25 + 0.10 + 0.15 + 0.10 + 0.05) = 0.35 / 0.65
    assert cognitive_prior(PARTS) == pytest.approx(0.35 / 0.65)
    assert cognitive_prior(ScoreBreakdown(similarity=1.0)) == 0.0  # relevance alone is no prior
    assert cognitive_prior(PARTS, {**SIMILARITY_ONLY}) == 0.0  # every prior weight 0
    assert cognitive_prior(ScoreBreakdown(strength=1, recency=1, emotional=1, graph=1, importance=1)) == 1.0
    assert cognitive_prior(PARTS, terms=("recency",)) == 0.5  # the recency term alone
    assert cognitive_prior(PARTS, terms=("recency", "importance")) == pytest.approx((0.10 * 0.5 + 0.05) / 0.15)
    for bad in ((), ("similarity",), ("recency", "age")):
        with pytest.raises(ValueError, match="non-empty subset of strength, recency"):
            cognitive_prior(PARTS, terms=bad)


def test_with_prior_is_bounded_by_one_plus_w():
    assert with_prior(0.5, 0.4, 0.1) == pytest.approx(0.52)
    assert with_prior(1.0, 2.0, 0.2) == pytest.approx(1.2)  # the prior is clamped to 1
    assert with_prior(1.0, -1.0, 0.2) == 1.0
    assert with_prior(0.0, 1.0, 0.2) == 0.0
    for p in (0.0, 0.3, 1.0):
        assert 1.0 <= with_prior(0.7, p, 0.05) / 0.7 <= 1.05
    with pytest.raises(ValueError, match="must be >= 0 for a multiplicative prior"):
        with_prior(-0.1, 0.5, 0.1)
    for bad in (-0.1, math.nan, math.inf, True, "0.1"):
        with pytest.raises(ValueError, match="prior weight"):
            check_prior_weight(bad)  # type: ignore[arg-type]


def test_prior_only_for_temporal_questions():
    assert prior_weight_for("When did Caroline adopt Max?", 0.1, temporal_only=True) == 0.1
    assert prior_weight_for("What is Caroline's dog called?", 0.1, temporal_only=True) == 0.0
    assert prior_weight_for("What is Caroline's dog called?", 0.1) == 0.1


def _scored(tid: str, score: float, recency: float) -> ScoredMemoryTrace:
    t = MemoryTrace(id=tid, content=tid, created_at=datetime(2023, 1, 1, tzinfo=UTC))
    return ScoredMemoryTrace(t, score, ScoreBreakdown(recency=recency, importance=1.0))


def test_apply_prior_reorders_by_hand_arithmetic():
    pool = [_scored("x", 1.0, 0.0), _scored("y", 0.95, 1.0), _scored("z", 0.5, 1.0)]
    # priors: x 0.05/0.65, y and z 0.15/0.65; w = 0.5 → x 1.0·(1 + 0.5·0.0769) = 1.0385,
    # y 0.95·(1 + 0.5·0.2308) = 1.0596
    out = apply_prior(pool, 0.5)
    assert [t.id for t in out] == ["y", "x", "z"]
    assert [t.retrieval_score for t in out] == pytest.approx([0.95 * (1 + 0.5 * 0.15 / 0.65),
                                                              1.0 * (1 + 0.5 * 0.05 / 0.65),
                                                              0.5 * (1 + 0.5 * 0.15 / 0.65)])
    assert [t.id for t in apply_prior(pool, 0.1)] == ["x", "y", "z"]  # a small w cannot overturn a 5 % lead
    assert apply_prior(pool, 0) == pool and pool[0].retrieval_score == 1.0  # off; the input is untouched
    # recency alone: x 0, y and z 1 → y 0.95·1.1 = 1.045 overtakes x at w = 0.1
    assert [t.id for t in apply_prior(pool, 0.1, terms=("recency",))] == ["y", "x", "z"]


# ---------------------------------------------------------------- designs on a tiny dataset
S = Scope("thread", "c1")
T0 = datetime(2023, 5, 8, tzinfo=UTC)
TURNS = [("t1", "Caroline: I went to a support group for painting last week.", 0),
         ("t2", "Melanie: I paint landscapes at the lake on weekends.", 0),
         ("t3", "Caroline: my dog Max loves the lake and the park.", 10),
         ("t4", "Melanie: we camped near the mountains with the kids.", 20),
         ("t5", "Caroline: I am researching adoption agencies.", 20)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    traces = [MemoryTrace(id=i, content=c, scope=S.scope, scope_id=S.scope_id, created_at=T0 + timedelta(days=d))
              for i, c, d in TURNS]
    clock = make_clock("end", traces)
    ws = Workspace(str(tmp_path_factory.mktemp("designs") / "db"), embedder=HashingEmbedder(64), clock=clock,
                   fact_extractor=None)
    ws.ingest(traces, extract_facts=False)
    queries = [LabelledQuery("q1", "When did Caroline go to the painting group?", {"t1": 1.0}, S),
               LabelledQuery("q2", "Where does Melanie paint?", {"t2": 1.0}, S),
               LabelledQuery("q3", "What is the name of the dog?", {"t3": 1.0}, S)]
    return ws, queries, clock


def test_cosine_only_view_ranks_dense_by_similarity(tiny):
    ws, queries, clock = tiny
    view = ScoredStore(ws.store, SIMILARITY_ONLY)
    qv = ws.store.embed_query(queries[0].query)
    with clock.scoped(S):
        hits = view.query_vector(qv, top_k=5, scopes=[S])
        cognitive = ws.store.query_vector(qv, top_k=5, scopes=[S])
    assert [t.retrieval_score for t in hits] == pytest.approx([t.score_breakdown.similarity for t in hits])
    assert [t.retrieval_score for t in hits] == sorted((t.retrieval_score for t in hits), reverse=True)
    # the breakdown (the prior's input) is the same under both; only the ranking score differs
    by_id = {t.id: t.score_breakdown for t in cognitive}
    assert all(by_id[t.id] == t.score_breakdown for t in hits)
    assert view.count() == ws.store.count()  # everything else is the store's
    with pytest.raises(ValueError, match="dense_scoring"):
        Variant("recency")
    with pytest.raises(ValueError, match="analyzer"):
        Variant("cognitive", "klingon")


def test_designs_rank_as_reweight_and_prior_by_hand(tiny):
    ws, queries, clock = tiny
    v = Variant("similarity", "english-stem")
    runs = {v: run_variant(ws.store, variant_index(ws.store, "english-stem"), queries, v, clock=clock)}
    assert [r.now for r in runs[v]] == [clock.at(S)] * 3
    rrf = Design("rrf", v, fusion=RRF(k=10).balanced(0.5))
    assert rrf.fusion == RRF(k=10, weights=(0.5, 0.5))
    assert rrf.knobs() == {"fusion": "rrf", "rrf_k": 10, "dense_weight": 0.5, "sparse_weight": 0.5}
    assert rrf.as_dict()["fusion_spec"] == "rrf(dense_weight=0.5,sparse_weight=0.5,rrf_k=10.0)"
    prior = Design("prior", v, fusion=RRF(k=10).balanced(0.5), prior_weight=0.2, prior_temporal_only=True)
    with pytest.raises(ValueError, match="a design's fusion is a fusion strategy"):
        Design("loose", v, fusion="rrf")  # type: ignore[arg-type]
    for run in runs[v]:
        res = reweight(run.result, fusion="rrf", rrf_k=10, dense_weight=0.5, sparse_weight=0.5)  # the keyword form
        assert ranked(run, rrf) == credited_ids(res, "final")
        pool = list(res.diagnostics.pool.values())
        want = apply_prior(pool, 0.2) if run.q.qid == "q1" else pool  # only q1 asks "when"
        assert ranked(run, prior) == [t.id for t in want][:10]
        assert ranked(run, Design("bm25", v, "sparse")) == credited_ids(run.result, "sparse")
    scores = score_designs(runs, [rrf, Design("bm25", v, "sparse")],
                           lambda ids, q: evidence_recall_at_k(ids, list(q.qrels), 2))
    assert set(scores) == {"rrf", "bm25"} and all(len(x) == 3 for x in scores.values())
    cmp = compare(scores, ["bm25"], resamples=200)
    assert set(cmp["rrf"]["vs"]) == {"bm25"} and cmp["bm25"]["vs"] == {}


def test_worst_case_gain_and_the_choice():
    means = {"locomo": {"a": 0.62, "b": 0.66, "c": 0.70}, "scifact": {"a": 0.70, "b": 0.69, "c": 0.64}}
    gains = worst_case_gain(means, {"locomo": 0.60, "scifact": 0.665})
    assert gains["a"] == {"worst": 0.02, "mean": 0.0275, "by_dataset": {"locomo": 0.02, "scifact": 0.035}}
    assert gains["b"]["worst"] == 0.025 and gains["c"]["worst"] == -0.025
    assert recommend(gains) == "b"
    assert recommend(gains, eligible=lambda lb: lb != "b") == "a"
    tied = worst_case_gain({"x": {"p": 0.5, "q": 0.5}, "y": {"p": 0.7, "q": 0.6}}, {"x": 0.4, "y": 0.4})
    assert recommend(tied) == "p"  # same worst gain (0.1): the larger mean wins
    with pytest.raises(ValueError, match="no design"):
        recommend(gains, eligible=lambda _lb: False)


def test_the_issue_designs_cover_a_to_f_once_each():
    designs = issue24_designs()
    labels = [d.label for d in designs]
    assert len(labels) == len(set(labels))
    assert {lb.split(".")[0] for lb in labels} == {"a", "b", "c", "d", "e", "f"}
    assert {d.stage for d in designs} == {"final", "dense", "sparse"}
    assert {d.prior_weight for d in designs} == {0.0, 0.05, 0.1, 0.2}
    assert all(d.variant.dense_scoring == "similarity" for d in designs if d.prior_weight)
    assert {d.prior_terms for d in designs if d.prior_weight} == {("recency",), PRIOR_TERMS}
