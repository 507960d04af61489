"""Weighted RRF against hand arithmetic (SPEC §4)."""
import pytest

from retrieval.fusion import reciprocal_rank_fusion


def test_golden_weighted_scores_ranks_and_contributions():
    out = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], weights=[0.7, 0.3], k=60)
    scores = {f.id: f.score for f in out}
    assert scores["a"] == pytest.approx(0.7 / 61)
    assert scores["b"] == pytest.approx(0.7 / 62 + 0.3 / 61)
    assert scores["c"] == pytest.approx(0.7 / 63)
    assert scores["d"] == pytest.approx(0.3 / 62)
    assert [f.id for f in out] == ["b", "a", "c", "d"]
    b = out[0]
    assert b.ranks == (2, 1)
    assert b.contributions == pytest.approx((0.7 / 62, 0.3 / 61))
    assert out[-1].ranks == (None, 2) and out[-1].contributions[0] == 0.0


def test_unweighted_zero_based_ranks():
    out = reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=1, rank_start=0)
    assert [f.id for f in out] == ["a", "b"]  # tie 1/1+1/2 each → id asc
    assert out[0].score == pytest.approx(1.5) and out[1].score == pytest.approx(1.5)


def test_scores_non_increasing_and_ties_by_id():
    out = reciprocal_rank_fusion([["z", "y"], ["y", "z"], ["x"]], k=10)
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    assert [f.id for f in out][:2] == ["y", "z"]


def test_empty_inputs():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
    assert [f.id for f in reciprocal_rank_fusion([["a"], []], weights=[1, 1])] == ["a"]


def test_duplicate_in_one_list_keeps_first_rank():
    out = reciprocal_rank_fusion([["a", "b", "a"]], k=60)
    assert out[0].ranks == (1,) and out[0].score == pytest.approx(1 / 61)


@pytest.mark.parametrize("kwargs,msg", [
    ({"k": 0}, "k must be > 0"),
    ({"k": -5}, "k must be > 0"),
    ({"weights": [1.0, -0.1]}, r"weights\[1\]=-0.1 is negative"),
    ({"weights": [1.0]}, "1 weights for 2 ranked lists"),
])
def test_validation_messages(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)
