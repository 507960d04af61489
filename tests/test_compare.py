"""Pure comparisons behind the Compare page: overlap, Jaccard, rank deltas, entered/left, judgment matching."""
import pytest
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


@pytest.mark.parametrize("new, old, shown", [(0.5004, 0.5, None), (0.4996, 0.5, None), (0.3, 0.3, None),
                                             (0.5006, 0.5, "+0.001 vs A"), (0.4, 0.5, "-0.100 vs A")])
def test_a_change_that_rounds_to_zero_is_no_change(new, old, shown):
    """At the shown precision "+0.000" would read as a gain and "-0.000" as a loss: both are no change."""
    from ui.view import metric_delta

    d = metric_delta(new, old)
    if shown is None:
        assert d == {"delta": "no change vs A", "delta_color": "off", "delta_arrow": "off"}
    else:
        assert d == {"delta": shown, "delta_color": "normal", "delta_arrow": "auto"}
