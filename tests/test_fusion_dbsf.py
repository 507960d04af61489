"""DBSF (distribution-based score fusion, `retrieval/fusion/dbsf.py`): golden values worked by hand, properties,
the edge cases, and the registry offering it everywhere (API, lab, explanation) with no other file edited."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.fusion import FUSIONS, convex_fusion, get_strategy, strategy_for
from retrieval.fusion.dbsf import DBSF, dbsf_bounds, dbsf_normalize


def test_golden_normalisation_by_hand():
    # scores 1, 2, 3: μ = 2, sample σ = 1, bounds [−1, 5], s' = (s + 1) / 6
    assert dbsf_bounds([1.0, 2.0, 3.0]) == (-1.0, 5.0)
    assert dbsf_normalize([1.0, 2.0, 3.0]) == pytest.approx([2 / 6, 3 / 6, 4 / 6])
    # 0 and 10: μ = 5, σ = √50 = 7.0711, bounds 5 ∓ 21.213, s' = 0.5 ∓ 5/42.426
    lo = 5 - 3 * math.sqrt(50)
    span = 6 * math.sqrt(50)
    assert dbsf_normalize([10.0, 0.0]) == pytest.approx([(10 - lo) / span, (0 - lo) / span])
    assert dbsf_normalize([10.0, 0.0]) == pytest.approx([0.617851, 0.382149], abs=1e-6)


def test_golden_fusion_by_hand():
    dense = [("a", 3.0), ("b", 2.0), ("c", 1.0)]  # → 4/6, 3/6, 2/6
    sparse = [("b", 10.0), ("d", 0.0)]  # → 0.617851, 0.382149
    out = DBSF(weights=(0.7, 0.3)).fuse([dense, sparse], [0.7, 0.3])
    got = {f.id: f.score for f in out}
    assert got == pytest.approx({"a": 0.7 * 4 / 6, "b": 0.7 * 3 / 6 + 0.3 * 0.617851, "c": 0.7 * 2 / 6,
                                 "d": 0.3 * 0.382149}, abs=1e-6)
    assert [f.id for f in out] == ["b", "a", "c", "d"]
    b = out[0]
    assert b.ranks == (2, 1) and b.contributions == pytest.approx((0.35, 0.3 * 0.617851), abs=1e-6)
    assert out[-1].ranks == (None, 2) and out[-1].contributions[0] == 0.0


def test_edge_cases_empty_side_one_candidate_identical_scores():
    assert dbsf_normalize([]) == [] and DBSF().fuse([], []) == []
    # an empty side contributes nothing; the other side alone decides
    out = DBSF().fuse([[("a", 2.0), ("b", 1.0)], []], [0.5, 0.5])
    assert [(f.id, f.ranks, f.contributions[1]) for f in out] == [("a", (1, None), 0.0), ("b", (2, None), 0.0)]
    # one candidate, or identical scores (σ = 0): each at its list's mean, the middle of [0, 1]
    assert dbsf_bounds([4.2]) is None and dbsf_normalize([4.2]) == [0.5]
    assert dbsf_normalize([0.1, 0.1, 0.1]) == [0.5, 0.5, 0.5]
    out = DBSF().fuse([[("a", 0.3)], [("a", 7.0), ("b", 7.0)]], [0.6, 0.4])
    assert {f.id: f.score for f in out} == pytest.approx({"a": 0.6 * 0.5 + 0.4 * 0.5, "b": 0.4 * 0.5})
    # far outside μ ± 3σ clips: 20 copies of 0 and one 100 → the 100 maps above 1
    assert dbsf_normalize([0.0] * 20 + [100.0])[-1] == 1.0
    with pytest.raises(ValueError, match="got 1 weights for 2 score lists"):
        DBSF().fuse([[("a", 1.0)], [("a", 1.0)]], [1.0])
    with pytest.raises(ValueError, match=r"score_lists\[0\]\[0\] has score nan for id 'a'; scores must be finite"):
        DBSF().fuse([[("a", math.nan)]], [1.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=0, max_size=15))
def test_total_on_every_finite_input(xs):
    """Never an exception, always in [0, 1] — tiny spreads (6σ underflows) and huge ones (overflow) included."""
    ys = dbsf_normalize(xs)
    assert len(ys) == len(xs) and all(0.0 <= y <= 1.0 for y in ys)
    # extreme magnitudes are mapped like ordinary scores (scaled by a power of two first), not flattened to 0.5
    assert dbsf_normalize([0.0, 6.8e-207]) == pytest.approx(dbsf_normalize([0.0, 1.0]))
    assert dbsf_normalize([-1e308, 1e308]) == pytest.approx(dbsf_normalize([-1.0, 1.0]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 6)), min_size=0, max_size=15))
def test_properties_bounded_and_order_preserving(xs):
    ys = dbsf_normalize(xs)
    assert len(ys) == len(xs) and all(0.0 <= y <= 1.0 for y in ys)
    for (a, ya) in zip(xs, ys):
        for (b, yb) in zip(xs, ys):
            if a < b:
                assert ya <= yb


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-100, 100).map(lambda x: round(x, 6)), min_size=1, max_size=10),
       st.lists(st.floats(0, 50).map(lambda x: round(x, 6)), min_size=0, max_size=10), st.floats(0, 1))
def test_differential_against_convex_zscore(d, s, w):
    """SPEC §13's convex `zscore` normalisation is the same mean ± 3σ map, written independently (with overflow
    scaling): the two agree on ordinary scores."""
    dense = [(f"d{i}", x) for i, x in enumerate(d)]
    sparse = [(f"s{i}" if i % 2 else f"d{i}", x) for i, x in enumerate(s)]
    ours = {f.id: f.score for f in DBSF().fuse([dense, sparse], [w, 1 - w])}
    ref = {f.id: f.score for f in convex_fusion([dense, sparse], weights=[w, 1 - w], normalization="zscore")}
    assert ours == pytest.approx(ref, abs=1e-9)


def test_registered_settable_and_explained():
    assert "dbsf" in FUSIONS and get_strategy("dbsf") is DBSF
    s = strategy_for({"fusion": "dbsf", "dense_weight": 0.6, "sparse_weight": 0.4})
    assert str(s) == "DBSF(weights=(0.6, 0.4))" and s.setting == "DBSF" and s.family == ("DBSF",)
    value, how = s.normalised([1.0, 2.0, 3.0], 3.0)
    assert value == pytest.approx(4 / 6)
    assert how == "0.6667 = (3 − lower -1) ÷ (upper 5 − lower -1), bounds = mean ± 3 sd"
    assert s.normalised([2.0], 2.0) == (0.5, "0.5: one score or all equal (σ = 0), so the middle of [0, 1]")
    assert s.term(0.6, 1, 0.3) == "0.6 × 0.5"


def test_the_pipeline_and_the_lab_use_it_with_no_other_edit(tmp_path):
    from conftest import NOW, U1, MapEmbedder, make_trace

    from retrieval import BM25Index, HybridRetriever, MemoryStore
    from retrieval.eval.lab import fusion_grid

    texts = {"order 5512": [1.0, 0.0, 0.0, 0.0], "a parcel about order 77": [1.0, 0.2, 0.0, 0.0],
             "shipping a parcel": [1.0, 0.5, 0.0, 0.0], "Order 5512 went astray": [0.0, 0.0, 1.0, 0.0]}
    store = MemoryStore(str(tmp_path / "db"), embedder=MapEmbedder(texts), clock=lambda: NOW)
    r = HybridRetriever(store, bm25=BM25Index())
    r.index([make_trace(f"t{i}", t) for i, t in enumerate(list(texts)[1:])])
    res = r.retrieve("order 5512", scope=U1, fusion="dbsf", dense_weight=0.6, sparse_weight=0.4)
    assert res.diagnostics.settings["fusion"] == "dbsf" and res.traces
    ex = res.diagnostics.explain(res.traces[0].id)
    assert ex.rrf["fusion"] == "dbsf" and ex.rrf["strategy"] == "DBSF(weights=(0.6, 0.4))"
    assert sum(ex.rrf["contributions"].values()) == pytest.approx(ex.rrf["score"])
    again = r.reweight(r.reweight(res, fusion="rrf"), fusion="dbsf")  # a re-fusion from the cached lists
    assert again.diagnostics.stage_scores["merged"] == res.diagnostics.stage_scores["merged"]
    assert [c.label for c in fusion_grid((0.5,)) if c.fusion == "dbsf"] == ["DBSF, dense 0.5"]
