"""Split-on-ambiguous golden split points (SPEC §8)."""
import pytest

from retrieval.pipeline.split import split_candidates, split_halves, split_point, validate_threshold


def test_under_50_characters_is_not_split():
    assert split_point("Short. Text here.") is None
    assert split_point("x" * 49) is None


def test_sentence_end_nearest_the_middle_before_after():
    a = "The invoice was paid on time. " + "We also talked about the garden and roses."
    at = split_point(a)
    assert a[:at].strip() == "The invoice was paid on time."
    # equidistant sentence ends: mid-o is tried before mid+o
    text = "aaaa. " * 10  # len 60, mid 30; '.' at 28 (o=2) and 34 (o=4)
    assert split_point(text) == 29


def test_first_space_after_middle_when_no_sentence_end_in_reach():
    text = "word " * 12 + "end"  # 63 chars, no punctuation
    at = split_point(text)
    assert at == text.find(" ", len(text) // 2)
    assert split_halves(text) == (text[:at].strip(), text[at:].strip())


def test_punctuation_outside_the_40_percent_reach_is_ignored():
    text = "Hi. " + "x" * 100  # '.' at index 2, mid 52, reach 41
    assert split_point(text) is None  # no space after the middle either


def test_a_period_without_following_space_is_not_a_sentence_end():
    text = "Version 3.14 was released " + "and it fixed many long-standing bugs in the parser"
    at = split_point(text)
    assert text[at - 1] != "."


def test_candidates_are_the_lowest_fraction_with_missing_scores_as_zero():
    ids = ["a", "b", "c", "d", "e"]
    scores = {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.3}
    assert split_candidates(ids, scores, 0.4) == ["e", "b"]  # ceil(5*0.4)=2; e has no score → 0
    assert split_candidates(ids, scores, 1.0) == ["e", "b", "d", "c", "a"]


@pytest.mark.parametrize("t", [0, -0.1, 1.01, "x"])
def test_threshold_validation(t):
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        validate_threshold(t)
