"""Weighted RRF (SPEC §4) and convex fusion (SPEC §13) against hand arithmetic, plus properties."""
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from retrieval.fusion import FUSIONS, NORMALIZATIONS, convex_fusion, normalize, reciprocal_rank_fusion


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


@pytest.mark.parametrize("kwargs,msg", [
    ({"k": float("inf")}, r"k must be > 0 and finite, got k=inf"),
    ({"k": float("nan")}, r"k must be > 0 and finite, got k=nan"),
    ({"weights": [1.0, float("inf")]}, r"weights\[1\]=inf is not finite"),
    ({"weights": [float("nan"), 1.0]}, r"weights\[0\]=nan is not finite"),
])
def test_rrf_rejects_non_finite_k_and_weights(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)


# --- convex fusion (SPEC §13; Bruch, Gai & Ingber 2023) -------------------------------------------

def by_id(out):
    return {f.id: f for f in out}


def test_constants():
    assert NORMALIZATIONS == ("minmax", "theoretical", "zscore")
    assert FUSIONS[:2] == ("rrf", "convex")  # then any strategy registered later


def test_golden_minmax():
    a = [("a", 3.0), ("b", 2.0), ("c", 1.0)]        # → a 1, b 0.5, c 0
    b = [("b", 0.9), ("d", 0.5), ("a", 0.1)]        # → b 1, d 0.5, a 0
    out = convex_fusion([a, b], weights=[0.6, 0.4], normalization="minmax")
    assert [f.id for f in out] == ["b", "a", "d", "c"]
    f = by_id(out)
    assert f["b"].score == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
    assert f["b"].contributions == pytest.approx((0.3, 0.4))
    assert f["a"].score == pytest.approx(0.6) and f["a"].contributions == pytest.approx((0.6, 0.0))
    assert f["d"].score == pytest.approx(0.2) and f["d"].contributions == pytest.approx((0.0, 0.2))
    assert f["c"].score == 0.0 and f["c"].contributions == (0.0, 0.0)  # at the list's min, still listed
    assert f["b"].ranks == (2, 1) and f["a"].ranks == (1, 3)
    assert f["d"].ranks == (None, 2) and f["c"].ranks == (3, None)


def test_golden_theoretical_bounds_per_list():
    bm25 = [("a", 4.0), ("b", 2.0), ("c", 1.0)]      # floor 0: a 1, b 0.5, c 0.25
    cos = [("b", 0.5), ("d", 0.0), ("a", -0.5)]      # floor −1, max 0.5: b 1, d 2/3, a 1/3
    out = convex_fusion([bm25, cos], weights=[1.0, 1.0], normalization="theoretical",
                        lower_bounds=[0.0, -1.0])
    assert [f.id for f in out] == ["b", "a", "d", "c"]
    f = by_id(out)
    assert f["b"].contributions == pytest.approx((0.5, 1.0))
    assert f["a"].contributions == pytest.approx((1.0, 1 / 3))
    assert f["d"].score == pytest.approx(2 / 3) and f["c"].score == pytest.approx(0.25)
    # Default floor 0.0 for the cosine list: the negative score clips to 0, d sits at the floor.
    f0 = by_id(convex_fusion([bm25, cos], weights=[1.0, 1.0], normalization="theoretical"))
    assert f0["a"].contributions == pytest.approx((1.0, 0.0))
    assert f0["d"].contributions == pytest.approx((0.0, 0.0))
    assert f0["b"].contributions == pytest.approx((0.5, 1.0))


def test_golden_zscore():
    a = [("a", 3.0), ("b", 2.0), ("c", 1.0)]   # μ 2, sample σ 1: (s + 1) / 6 → 2/3, 1/2, 1/3
    b = [("b", 10.0), ("d", 4.0)]              # μ 7, σ 3√2: 1/2 ± 1/(6√2)
    out = convex_fusion([a, b], weights=[0.5, 0.5], normalization="zscore")
    e = 1 / (6 * math.sqrt(2))
    f = by_id(out)
    assert f["a"].contributions == pytest.approx((1 / 3, 0.0))
    assert f["b"].contributions == pytest.approx((0.25, 0.5 * (0.5 + e)))
    assert f["c"].score == pytest.approx(1 / 6)
    assert f["d"].score == pytest.approx(0.5 * (0.5 - e))
    assert [x.id for x in out] == ["b", "a", "d", "c"]


def test_normalize_golden_and_clipping():
    assert normalize([3.0, 2.0, 1.0], "minmax") == pytest.approx([1.0, 0.5, 0.0])
    assert normalize([3.0, 2.0, 1.0], "zscore") == pytest.approx([2 / 3, 0.5, 1 / 3])
    assert normalize([0.5, 0.0, -0.5], "theoretical", lower_bound=-1.0) == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert normalize([0.5, -0.5], "theoretical") == [1.0, 0.0]  # below the floor → 0
    # 11 zeros and one 100: z of the outlier is 11/√12 > 3, beyond μ + 3σ → clipped to 1.
    z = normalize([100.0] + [0.0] * 11, "zscore")
    assert z[0] == 1.0 and all(0.0 <= v < 0.5 for v in z[1:])
    for m in NORMALIZATIONS:
        assert normalize([], m) == []


@pytest.mark.parametrize("method,equal,at_floor", [
    ("minmax", 1.0, 1.0),        # all equal → 1.0: each was retrieved, nothing separates them
    ("theoretical", 1.0, 0.0),   # max is the upper bound → 1.0; all at the floor → 0.0
    ("zscore", 0.5, 0.5),        # σ = 0 → every score is the mean, the middle of μ ± 3σ
])
def test_all_equal_scores(method, equal, at_floor):
    assert normalize([0.7, 0.7, 0.7], method) == [equal] * 3
    assert normalize([0.0, 0.0], method, lower_bound=0.0) == [at_floor] * 2
    assert normalize([0.1] * 3, method) == [equal] * 3  # fsum(0.1×3)/3 ≠ 0.1: no ulp-sized σ
    assert normalize([0.7], method) == [equal]
    out = convex_fusion([[("x", 0.7), ("y", 0.7)]], weights=[2.0], normalization=method)
    assert [(f.id, f.score) for f in out] == [("x", 2 * equal), ("y", 2 * equal)]  # tie → id asc


@pytest.mark.parametrize("method", NORMALIZATIONS)
def test_ties_sorted_by_id(method):
    out = convex_fusion([[("b", 1.0), ("a", 0.0)], [("a", 1.0), ("b", 0.0)]], weights=[1, 1],
                        normalization=method)
    assert [f.id for f in out] == ["a", "b"] and out[0].score == pytest.approx(out[1].score)


@pytest.mark.parametrize("method", NORMALIZATIONS)
def test_empty_inputs_and_one_empty_list(method):
    assert convex_fusion([], weights=[], normalization=method) == []
    assert convex_fusion([[], []], weights=[1, 1], normalization=method) == []
    out = convex_fusion([[("a", 2.0), ("b", 1.0)], []], weights=[0.7, 0.3], normalization=method)
    assert [f.id for f in out] == ["a", "b"]
    assert all(f.contributions[1] == 0.0 and f.ranks[1] is None for f in out)
    assert out[0].ranks == (1, None) and out[1].ranks == (2, None)


@pytest.mark.parametrize("method", NORMALIZATIONS)
def test_duplicate_in_one_list_keeps_first_and_is_left_out_of_the_statistics(method):
    out = convex_fusion([[("a", 5.0), ("b", 3.0), ("a", 1.0)]], weights=[1], normalization=method)
    ref = convex_fusion([[("a", 5.0), ("b", 3.0)]], weights=[1], normalization=method)
    assert out == ref and out[0].ranks == (1,)


def test_weight_zero_removes_a_list():
    a, b = [("a", 3.0), ("b", 2.0), ("c", 1.0)], [("c", 9.0), ("d", 1.0)]
    for m in NORMALIZATIONS:
        f = by_id(convex_fusion([a, b], weights=[1.0, 0.0], normalization=m))
        alone = by_id(convex_fusion([a], weights=[1.0], normalization=m))
        assert {k: v.score for k, v in f.items() if k in alone} == {k: v.score for k, v in alone.items()}
        assert f["d"].score == 0.0 and f["c"].ranks == (3, 1)


# Scores on a quarter grid: distinct values differ by ≥ 0.25, so no list has an ulp-sized spread.
_ids = st.sampled_from("abcdefgh")
_score = st.integers(-40, 40).map(lambda i: i / 4)
_list = st.dictionaries(_ids, _score, max_size=8).map(
    lambda d: sorted(d.items(), key=lambda p: (-p[1], p[0])))
_weight = st.floats(0.0, 5.0, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(lists=st.lists(_list, min_size=1, max_size=3), data=st.data(),
       method=st.sampled_from(NORMALIZATIONS), bound=st.sampled_from([-10.0, -1.0, 0.0]))
def test_properties(lists, data, method, bound):
    weights = data.draw(st.lists(_weight, min_size=len(lists), max_size=len(lists)))
    out = convex_fusion(lists, weights=weights, normalization=method, lower_bounds=[bound] * len(lists))
    assert {f.id for f in out} == {i for lst in lists for i, _ in lst}
    for f in out:
        assert 0.0 <= f.score <= sum(weights)
        assert f.score == pytest.approx(sum(f.contributions), abs=1e-12)
        for i, (w, c) in enumerate(zip(weights, f.contributions)):
            assert 0.0 <= c <= w
            assert (f.ranks[i] is None) == (f.id not in dict(lists[i]))
    assert all(x.score > y.score or (x.score == y.score and x.id < y.id) for x, y in zip(out, out[1:]))


@settings(max_examples=150, deadline=None)
@given(lists=st.lists(_list, min_size=2, max_size=3), data=st.data(),
       method=st.sampled_from(["minmax", "zscore"]),
       scale=st.floats(0.1, 10.0), shift=st.floats(-10.0, 10.0))
def test_order_invariant_to_a_positive_affine_transform_of_one_list(lists, data, method, scale, shift):
    weights = data.draw(st.lists(_weight, min_size=len(lists), max_size=len(lists)))
    j = data.draw(st.integers(0, len(lists) - 1))
    moved = list(lists)
    moved[j] = [(i, scale * s + shift) for i, s in lists[j]]
    before = by_id(convex_fusion(lists, weights=weights, normalization=method))
    after = convex_fusion(moved, weights=weights, normalization=method)
    assert {f.id: f.score for f in after} == pytest.approx({k: f.score for k, f in before.items()}, abs=1e-9)
    # Same order up to float noise: each id's original score is not below the next one's.
    for x, y in zip(after, after[1:]):
        assert before[x.id].score >= before[y.id].score - 1e-9


@settings(max_examples=100, deadline=None)
@given(lst=_list.filter(bool), data=st.data(), method=st.sampled_from(NORMALIZATIONS), bump=st.integers(1, 40))
def test_monotone_in_a_lists_score(lst, data, method, bump):
    """Raising one id's score in a list never lowers its normalised score there (min-max, the
    theoretical floor and the z-score of the raised point all move with it)."""
    k = data.draw(st.integers(0, len(lst) - 1))
    raised = [(i, s + bump / 4 if n == k else s) for n, (i, s) in enumerate(lst)]
    before = normalize([s for _, s in lst], method)[k]
    after = normalize([s for _, s in raised], method)[k]
    assert after >= before - 1e-12


@pytest.mark.parametrize("kwargs,msg", [
    ({"normalization": "l2"}, r"normalization='l2' is unknown; use one of minmax, theoretical, zscore"),
    ({"weights": [1.0]}, "1 weights for 2 score lists"),
    ({"weights": [1.0, -0.5]}, r"weights\[1\]=-0.5 is negative"),
    ({"weights": [float("inf"), 1.0]}, r"weights\[0\]=inf is not finite"),
    ({"weights": [1.0, float("nan")]}, r"weights\[1\]=nan is not finite"),
    ({"lower_bounds": [0.0]}, "1 lower_bounds for 2 score lists"),
    ({"lower_bounds": [0.0, float("-inf")]}, r"lower_bounds\[1\]=-inf is not finite"),
])
def test_convex_validation_messages(kwargs, msg):
    kwargs = {"weights": [1.0, 1.0], **kwargs}
    with pytest.raises(ValueError, match=msg):
        convex_fusion([[("a", 1.0)], [("b", 2.0)]], **kwargs)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_convex_rejects_non_finite_scores(bad):
    with pytest.raises(ValueError, match=rf"score_lists\[1\]\[1\] has score {bad!r} for id 'c'"):
        convex_fusion([[("a", 1.0)], [("b", 2.0), ("c", bad)]], weights=[1, 1])
    # A non-finite score is an error even on a repeated id that fusion would skip.
    with pytest.raises(ValueError, match="scores must be finite"):
        convex_fusion([[("a", 1.0), ("a", bad)]], weights=[1])


def test_normalize_validation_messages():
    with pytest.raises(ValueError, match=r"normalization='dbsf' is unknown; use one of minmax"):
        normalize([1.0], "dbsf")
    with pytest.raises(ValueError, match=r"scores\[1\]=nan is not finite"):
        normalize([1.0, float("nan")], "minmax")
    with pytest.raises(ValueError, match=r"lower_bound=inf is not finite"):
        normalize([1.0], "theoretical", lower_bound=float("inf"))


# --- normalize is total on finite input: [0, 1], order kept, no exception ---------------------------

@pytest.mark.parametrize("scores, method, expected", [
    ([1e-200, 2e-200, 3e-200], "zscore", [1 / 3, 0.5, 2 / 3]),   # (s − μ)² underflowed: σ 0 → ZeroDivisionError
    ([5e-324, 1e-323], "zscore", [0.5 - math.sqrt(2) / 12, 0.5 + math.sqrt(2) / 12]),  # subnormals
    ([1e300, 1.0000000000000002e300], "zscore", None),           # (s − μ)² overflowed → OverflowError
    ([1e308, -1e308], "minmax", [1.0, 0.0]),                      # max − min overflowed to inf → [0, 0]
    ([1e308, -1e308], "theoretical", [1.0, 0.0]),
    ([-1e308, 1e308, 0.0], "zscore", None),
])
def test_normalize_extreme_magnitudes(scores, method, expected):
    out = normalize(scores, method)
    _check_total(scores, out)
    if expected is not None:
        assert out == pytest.approx(expected)


def test_theoretical_with_a_huge_floor_is_not_flattened():
    # hi − lower_bound overflowed to inf: every score came out 0.
    assert normalize([1e308, 0.0], "theoretical", lower_bound=-1.7e308) == pytest.approx([1.0, 1.7 / 2.7])


_EXTREMES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-200, -1e-200, 1.0, -1.0, 1e300,
             1.0000000000000002e300, -1e300, 1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]
_finite = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(_EXTREMES)


def _check_total(scores: list[float], out: list[float]) -> None:
    assert len(out) == len(scores)
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in out), out
    pairs = sorted(zip(scores, out))
    for (a, x), (b, y) in zip(pairs, pairs[1:]):
        assert x <= y, f"{a!r} → {x!r} but the larger {b!r} → {y!r}"
        assert a < b or x == y  # equal scores, equal results


@settings(max_examples=600, deadline=None)
@given(scores=st.lists(_finite, max_size=12), method=st.sampled_from(NORMALIZATIONS), bound=_finite)
def test_normalize_is_total_bounded_and_order_preserving_on_any_finite_input(scores, method, bound):
    out = normalize(scores, method, lower_bound=bound)
    _check_total(scores, out)


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.sampled_from(_EXTREMES) | st.floats(-1e-300, 1e-300), min_size=1, max_size=8),
       method=st.sampled_from(NORMALIZATIONS), bound=st.sampled_from([0.0, -1.0, -1e308, 1e-300, 1e308]))
def test_normalize_total_on_mixes_of_huge_tiny_and_subnormal(scores, method, bound):
    _check_total(scores, normalize(scores, method, lower_bound=bound))
    lists = [[(f"id{j}", s) for j, s in enumerate(scores)]]
    out = convex_fusion(lists, weights=[1.0], normalization=method, lower_bounds=[bound])
    assert all(0.0 <= f.score <= 1.0 for f in out)


def _naive(scores, method, lower_bound=0.0):
    """The formulas as written before scaling: the golden reference for ordinary inputs."""
    n = len(scores)
    if method == "minmax":
        lo, hi = min(scores), max(scores)
        if hi == lo:
            return [1.0] * n
    elif method == "theoretical":
        lo, hi = lower_bound, max(scores)
        if hi <= lo:
            return [0.0] * n
    else:
        if n < 2 or max(scores) == min(scores):
            return [0.5] * n
        mu = math.fsum(scores) / n
        sigma = math.sqrt(math.fsum((s - mu) ** 2 for s in scores) / (n - 1))
        lo, hi = mu - 3.0 * sigma, mu + 3.0 * sigma
    return [min(1.0, max(0.0, (s - lo) / (hi - lo))) for s in scores]


@settings(max_examples=400, deadline=None)
@given(scores=st.lists(st.integers(-10**9, 10**9).map(lambda i: i / 1024), min_size=1, max_size=12),
       method=st.sampled_from(NORMALIZATIONS), bound=st.sampled_from([-10.0, -1.0, 0.0, 0.5]))
@example(scores=[0.0, 0.0, 0.0, 297 / 1024, 8.67578125, 77649746 / 1024], method="zscore", bound=-10.0)
def test_normalize_golden_values_unchanged_for_ordinary_inputs(scores, method, bound):
    # What the plain formulas give, to the last ulp or two: scaling by a power of two changes no rounding, but
    # zscore's mean and sigma on the scaled values can round one ulp apart (found by hypothesis in a full run).
    assert normalize(scores, method, lower_bound=bound) == pytest.approx(_naive(scores, method, bound), rel=1e-14,
                                                                          abs=1e-15)


def test_fusion_and_normalization_are_declared_choices_with_from_str():
    from retrieval.fusion import FUSIONS, NORMALIZATIONS, STRATEGIES, Fusion, Normalization
    from retrieval.pipeline.settings import check_choice

    # the fusion choice is the registry's names, in its order (RRF first: the faithful preset's one fusion)
    assert tuple(s.name for s in STRATEGIES) == FUSIONS and FUSIONS[:2] == ("rrf", "convex")
    assert NORMALIZATIONS == ("minmax", "theoretical", "zscore")
    assert Fusion.from_str("convex") is Fusion.CONVEX and Fusion.CONVEX == "convex" and f"{Fusion.RRF}" == "rrf"
    assert Normalization.from_str("zscore") is Normalization.ZSCORE
    for bad in ("RRF", " rrf", "", None, 1, "nope"):
        with pytest.raises(ValueError, match=r"fusion=.* is unknown; use one of " + ", ".join(FUSIONS) + "$"):
            Fusion.from_str(bad)
    with pytest.raises(ValueError, match="normalization='l2' is unknown; use one of minmax, theoretical, zscore"):
        check_choice("normalization", "l2")
    assert check_choice("fusion", Fusion.CONVEX) == "convex" and type(check_choice("fusion", "rrf")) is str
