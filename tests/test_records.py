"""One validator for records stored as JSON (store.records.parse_record): what calibration and adaptive
strengths read back from a store's metadata, which anyone with write access to the store could have edited."""
from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.store.adaptive import AdaptiveRecord
from retrieval.store.calibration import CalibrationRecord
from retrieval.store.records import MAX_RECORD_CHARS, parse_record


@dataclass(frozen=True)
class Rec:
    name: str
    weight: float
    n: int = 0
    extra: dict = field(default_factory=dict)
    note: str | None = None


def test_a_good_record_round_trips():
    assert parse_record(Rec, '{"name": "a", "weight": 1, "n": 2, "note": null}', "rec") == Rec("a", 1, 2)


@pytest.mark.parametrize("text,message", [
    ("[1]", "rec is not a JSON object"),
    ("{", "rec is not JSON"),
    ('{"name": "a", "weight": 1, "zz": 1}', r"unknown field\(s\) zz \(known: name, weight, n, extra, note\)"),
    ('{"name": 3, "weight": 1}', "field 'name' is 3: expected str"),
    ('{"name": "a", "weight": true}', "field 'weight' is True: expected float or int"),
    ('{"name": "a", "weight": "0.5"}', "field 'weight' is '0.5'"),
    ('{"name": "a", "weight": NaN}', "field 'weight' is nan"),
    ('{"name": "a", "weight": 1, "extra": []}', "field 'extra' is \\[\\]: expected dict"),
    ('{"name": "a", "weight": 1, "note": 5}', "field 'note' is 5: expected null or str"),
    ('{"weight": 1}', r"lacks field\(s\) name"),
])
def test_a_bad_record_is_refused_naming_the_field(text, message):
    with pytest.raises(ValueError, match=message):
        parse_record(Rec, text, "rec")


def test_an_oversized_record_is_refused_before_parsing():
    with pytest.raises(ValueError, match="too large"):
        parse_record(Rec, " " * (MAX_RECORD_CHARS + 1), "rec")


@given(st.dictionaries(st.text(max_size=8), st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                       max_size=6))
def test_any_json_object_is_a_record_or_a_value_error(data):
    for cls in (CalibrationRecord, AdaptiveRecord, Rec):
        with contextlib.suppress(ValueError):
            parse_record(cls, json.dumps(data), "record")
