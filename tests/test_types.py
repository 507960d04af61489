"""MemoryTrace.validate rejects, per trace and before any write, what the store cannot hold."""
import math
from datetime import datetime, timedelta, timezone

import pytest

from retrieval.types import INT64_MAX, MAX_TIME, MIN_TIME, MemoryTrace

from conftest import NOW


def make_trace(tid, content="fine text", **kw) -> MemoryTrace:
    """A u1 trace created at NOW; any field can be overridden (conftest's helper fixes created_at)."""
    return MemoryTrace(**{"id": tid, "content": content, "scope": "user", "scope_id": "u1", "created_at": NOW, **kw})

RANGE = "the store holds dates from 1678-01-01 to 2262-04-11 UTC"


def test_range_constants_are_the_documented_ones():
    assert (MIN_TIME.isoformat(), MAX_TIME.isoformat()) == ("1678-01-01T00:00:00+00:00", "2262-04-11T00:00:00+00:00")
    assert INT64_MAX == 9_223_372_036_854_775_807


@pytest.mark.parametrize("text", [
    "0001-01-01T00:00:00+01:00",  # astimezone(UTC) overflows below year 1
    "9999-12-31T23:00:00-05:00",  # ... and above year 9999
    "1677-12-31T23:59:59+00:00",
    "2262-04-11T00:00:01+00:00",
    "2262-04-11T01:00:00+00:00",
])
@pytest.mark.parametrize("field", ["created_at", "last_accessed_at"])
def test_dates_outside_the_store_range_are_rejected(text, field):
    t = make_trace("d1", "dated note", **{field: datetime.fromisoformat(text)})
    with pytest.raises(ValueError, match=f"trace 'd1': field '{field}' is {text[:10]}.*{RANGE}"):
        t.validate()


@pytest.mark.parametrize("text", ["1678-01-01T00:00:00+00:00", "2262-04-11T00:00:00+00:00",
                                  "2262-04-11T01:00:00+02:00", "1678-01-01T01:00:00+01:00"])
def test_dates_on_the_bounds_are_accepted(text):
    dt = datetime.fromisoformat(text)
    make_trace("d1", "dated note", created_at=dt, last_accessed_at=dt).validate()


@pytest.mark.parametrize("field,value,message", [
    ("content", "a\ud800b", "field 'content' contains a lone surrogate \\(U\\+D800\\) at position 1"),
    ("content", "a\x00b", "field 'content' contains NUL \\(U\\+0000\\) at position 1"),
    ("source_type", "user\udfff", "field 'source_type' contains a lone surrogate"),
    ("tags", ("ok", "x\ud83d"), "field 'tags\\[1\\]' contains a lone surrogate \\(U\\+D83D\\) at position 1"),
    ("entities", ("\ud800",), "field 'entities\\[0\\]' contains a lone surrogate"),
    ("tags", ("ok", 3), "field 'tags\\[1\\]' is int, expected a string"),
    ("scope_id", "u\x00", "field 'scope_id' contains U\\+0000 at position 1"),
    ("scope_id", "u\ud800", "field 'scope_id' contains U\\+D800"),
    ("scope_id", "u" * 257, "field 'scope_id' is 257 characters long; the limit is 256"),
])
def test_text_fields_reject_nul_and_lone_surrogates(field, value, message):
    with pytest.raises(ValueError, match=f"trace 'x': {message}"):
        make_trace("x", **{"content": "fine text", field: value}).validate()


@pytest.mark.parametrize("tid,shown,why", [
    ("a\x00b", r"'a\\x00b'", "contains U\\+0000 at position 1"),
    ("a\x1bb", r"'a\\x1bb'", "contains U\\+001B at position 1"),
    ("a\nb", r"'a\\nb'", "contains U\\+000A at position 1"),
    ("a\u2028b", r"'a\\u2028b'", "contains U\\+2028 at position 1"),
    ("a\x85b", r"'a\\x85b'", "contains U\\+0085 at position 1"),
    ("\udfffz", r"'\\udfffz'", "contains U\\+DFFF at position 0"),
    ("i" * 1025, "'i{80}'", "is 1025 characters long; the limit is 1024"),
    ("  ", "'  '", "must be a non-empty string"),
])
def test_ids_reject_control_characters_separators_and_surrogates(tid, shown, why):
    with pytest.raises(ValueError, match=f"^trace {shown}: field 'id' {why}"):
        make_trace(tid, "fine text").validate()


def test_ids_may_hold_quotes_slashes_and_unicode():
    for tid in ("o'brien", "user:u1/notes-1", "café ☕", "tab-free id with spaces", "i" * 1024):
        make_trace(tid, "fine text").validate()


@pytest.mark.parametrize("field,value", [
    ("confidence", math.inf), ("confidence", math.nan), ("encoding_strength", -math.inf),
    ("valence", math.nan), ("arousal", math.inf), ("dominance", -math.inf),
])
def test_non_finite_floats_are_rejected(field, value):
    with pytest.raises(ValueError, match=f"trace 'x': field '{field}' is {value!r}; must be between"):
        make_trace("x", "text", **{field: value}).validate()


@pytest.mark.parametrize("value", [math.inf, math.nan, 0.0, -1.0])
def test_stability_must_be_finite_and_positive(value):
    with pytest.raises(ValueError, match=f"field 'stability_ms' is {value!r}; must be a finite number > 0"):
        make_trace("x", "text", stability_ms=value).validate()


@pytest.mark.parametrize("value,shown", [(INT64_MAX + 1, "an integer of 64 bits"), (2**200, "an integer of 201 bits"),
                                         (-1, "-1"), (True, "True"), (1.0, "1.0")])
def test_retrieval_count_must_fit_int64(value, shown):
    with pytest.raises(ValueError,
                       match=f"field 'retrieval_count' is {shown}; must be an integer from 0 to {INT64_MAX}"):
        make_trace("x", "text", retrieval_count=value).validate()
    make_trace("x", "text", retrieval_count=INT64_MAX).validate()


def test_store_add_rejects_the_whole_batch_before_writing(store):
    good = make_trace("good", "a fine note")
    for bad in (make_trace("bad", "x\ud800"), make_trace("b\x00d", "nul id"),
                make_trace("late", "far future", created_at=datetime(9999, 12, 31, 23,
                                                                     tzinfo=timezone(timedelta(hours=-5)))),
                make_trace("big", "huge count", retrieval_count=2**63)):
        with pytest.raises(ValueError, match="field"):
            store.add([good, bad])
        assert store.count() == 0
    assert store.add([good]) == 1 and [t.id for t in store.get(["good"])] == ["good"]


def test_a_valid_trace_roundtrips_through_the_store_at_the_range_bounds(store):
    lo = make_trace("lo", "oldest note", created_at=MIN_TIME, retrieval_count=INT64_MAX)
    hi = make_trace("hi", "newest note", created_at=MAX_TIME, tags=("tab\there", "π"))
    assert store.add([lo, hi]) == 2
    got = {t.id: t for t in store.get(["lo", "hi"])}
    assert (got["lo"].created_at, got["lo"].retrieval_count) == (MIN_TIME, INT64_MAX)
    assert (got["hi"].created_at, got["hi"].tags) == (MAX_TIME, ("tab\there", "π"))
    assert NOW < MAX_TIME
