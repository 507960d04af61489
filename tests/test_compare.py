"""Pure comparisons behind the Compare page: overlap, Jaccard, rank deltas, entered/left, judgment matching."""
from hypothesis import given, strategies as st

from retrieval.eval.compare import compare_rankings


def test_golden_comparison():
    c = compare_rankings(["a", "b", "c", "d"], ["c", "a", "e", "b"])
    assert (c.overlap, c.k, c.entered, c.left) == (3, 4, ("e",), ("d",))
    assert c.jaccard == 3 / 5
    assert [(d.id, d.rank_a, d.delta, d.label) for d in c.deltas] == [
        ("c", 3, 2, "▲2"), ("a", 1, -1, "▼1"), ("e", None, None, "entered"), ("b", 2, -2, "▼2")]


def test_identical_and_empty_lists():
    same = compare_rankings(["x", "y"], ["x", "y"])
    assert same.jaccard == 1.0 and [d.label for d in same.deltas] == ["=", "="]
    empty = compare_rankings([], [])
    assert (empty.overlap, empty.jaccard, empty.k) == (0, 1.0, 0)


@given(st.lists(st.sampled_from("abcdefgh"), max_size=8), st.lists(st.sampled_from("abcdefgh"), max_size=8))
def test_comparison_properties(a, b):
    c = compare_rankings(a, b)
    ua, ub = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    assert c.overlap + len(c.entered) == len(ub) and c.overlap + len(c.left) == len(ua)
    assert 0.0 <= c.jaccard <= 1.0
    for d in c.deltas:
        assert ub[d.rank_b - 1] == d.id and (d.rank_a is None or ua[d.rank_a - 1] == d.id)
