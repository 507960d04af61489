"""Rank-biased overlap and overlap@k against the paper's definitions computed the slow way."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.metrics import overlap_at_k, rank_biased_overlap


def rbo_by_definition(a: list[str], b: list[str], p: float) -> float:
    """Webber, Moffat & Zobel (2010), eq. 32, with X_d recomputed from scratch at every depth."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long_)
    x = [len(set(short[:d]) & set(long_[:d])) for d in range(n + 1)]
    first = sum(x[d] / d * p ** d for d in range(1, n + 1))
    second = sum(x[s] * (d - s) / (s * d) * p ** d for d in range(s + 1, n + 1))
    return (1 - p) / p * (first + second) + ((x[n] - x[s]) / n + x[s] / s) * p ** n


ids = st.lists(st.sampled_from([f"t{i}" for i in range(25)]), min_size=1, max_size=15, unique=True)


@given(ids, ids, st.sampled_from([0.5, 0.8, 0.9, 0.98]))
def test_rbo_matches_the_definition(a, b, p):
    assert rank_biased_overlap(a, b, p) == pytest.approx(rbo_by_definition(a, b, p), abs=1e-12)
    assert rank_biased_overlap(a, b, p) == pytest.approx(rank_biased_overlap(b, a, p), abs=1e-12)
    assert -1e-12 <= rank_biased_overlap(a, b, p) <= 1 + 1e-12


def test_rbo_extremes_and_top_weighting():
    assert rank_biased_overlap(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    assert rank_biased_overlap(["a", "b"], ["x", "y"]) == 0.0
    swap_top = rank_biased_overlap(["a", "b", "c", "d"], ["b", "a", "c", "d"])
    swap_bottom = rank_biased_overlap(["a", "b", "c", "d"], ["a", "b", "d", "c"])
    assert swap_top < swap_bottom < 1.0
    assert rank_biased_overlap([], []) == 1.0 and rank_biased_overlap(["a"], []) == 0.0
    with pytest.raises(ValueError, match="p must be"):
        rank_biased_overlap(["a"], ["a"], p=1.0)


def test_overlap_at_k():
    assert overlap_at_k(["a", "b", "c"], ["c", "b", "x"], 3) == pytest.approx(2 / 3)
    assert overlap_at_k(["a", "b", "c", "d"], ["d", "a"], 2) == pytest.approx(0.5)
    assert overlap_at_k([], [], 5) == 1.0
    with pytest.raises(ValueError, match="k must be positive"):
        overlap_at_k(["a"], ["a"], 0)
