"""Fuzz every loader: random bytes and random mixes of good and bad records.

The contract: a loader returns a LoadReport or raises ValueError, nothing else; every good
record comes back, in order, and every bad one is a LineError (never silently dropped).
"""
import csv
import io
import json
import zipfile
from datetime import datetime, timedelta, timezone, UTC

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.ingest.loaders import (LoadReport, csv_headers, jsonl_fields, load_beir_zip, load_csv, load_file,
                                      load_jsonl, load_text)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ["a.jsonl", "a.ndjson", "a.csv", "a.txt", "a.md", "a.zip", "a.png", "noext"]


def _outcome(fn, *args, **kw):
    """The loader's result, or None for a ValueError; any other exception fails the test."""
    try:
        rep = fn(*args, **kw)
    except ValueError:
        return None
    assert isinstance(rep, LoadReport)
    for t in rep.traces:
        t.validate()  # what the loader returns, the store accepts
    return rep


@FUZZ
@given(data=st.binary(max_size=3000), name=st.sampled_from(NAMES))
def test_random_bytes_give_a_report_or_a_value_error(data, name):
    for fn in (load_jsonl, load_csv, load_text, load_beir_zip):
        _outcome(fn, data)
    _outcome(load_file, name, data)
    assert isinstance(csv_headers(data), list) and isinstance(jsonl_fields(data), list)


@FUZZ
@given(text=st.text(max_size=2000))
def test_random_text_gives_a_report_or_a_value_error(text):
    raw = text.encode("utf-8", "surrogatepass")  # lone surrogates become invalid UTF-8
    for name in ("a.jsonl", "a.csv", "a.txt"):
        _outcome(load_file, name, raw)


def _good_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ds/corpus.jsonl", "\n".join(json.dumps({"_id": str(i), "text": f"doc {i} words"})
                                                for i in range(40)))
    return buf.getvalue()


GOOD_ZIP = _good_zip()


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(GOOD_ZIP) - 1), st.integers(0, 255)), min_size=1, max_size=8),
       cut=st.integers(0, len(GOOD_ZIP)))
def test_damaged_zips_give_a_report_or_a_value_error(edits, cut):
    data = bytearray(GOOD_ZIP)
    for at, byte in edits:
        data[at] = byte
    _outcome(load_beir_zip, bytes(data))
    _outcome(load_beir_zip, bytes(data[:cut]))


# ---- records: good ones must all come back, bad ones must all be reported -------------------------

WORDS = st.text(st.characters(categories=("L", "Nd"), exclude_characters="\x85"), min_size=1, max_size=12)
SAFE = st.text(st.characters(categories=("L", "N", "P", "S", "Zs"), exclude_characters='",;\\'), max_size=30)
TZ = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
DATES = st.datetimes(datetime(1980, 1, 1), datetime(2200, 1, 1), timezones=TZ)


@st.composite
def good_record(draw, i: int, for_csv: bool) -> dict:
    content = " ".join(draw(st.lists(WORDS, min_size=1, max_size=5))) + f" n{i}"
    if not for_csv and draw(st.booleans()):  # line separators inside a JSON string must not split it
        content += draw(st.sampled_from(["\u2028x", "\u0085y", "\u2029z", "\tt"]))
    rec = {"content": content}
    if draw(st.booleans()):
        rec["id"] = f"g{i}"
    if draw(st.booleans()):
        rec["confidence"] = draw(st.floats(0, 1))
    if draw(st.booleans()):
        rec["valence"] = draw(st.floats(-1, 1))
    if draw(st.booleans()):
        rec["retrieval_count"] = draw(st.integers(0, 2**63 - 1))
    if draw(st.booleans()):
        dt = draw(DATES)
        rec["created_at"] = draw(st.sampled_from([dt.isoformat(), int(dt.timestamp())]))
    if draw(st.booleans()):
        rec["tags"] = draw(st.lists(SAFE.filter(str.strip), max_size=3))
    if for_csv and "tags" in rec:
        rec["tags"] = ",".join(t.strip() for t in rec["tags"])
    return rec


BAD_FIELDS = [
    ("confidence", 1.5), ("confidence", float("inf")), ("valence", float("nan")), ("stability_ms", -1),
    ("retrieval_count", -1), ("retrieval_count", 2**64), ("retrieval_count", 1e400), ("retrieval_count", 2.5),
    ("created_at", "0001-01-01T00:00:00+01:00"), ("created_at", "9999-12-31T23:00-05:00"), ("created_at", 1e20),
    ("created_at", "yesterday"), ("last_accessed_at", -1e20), ("type", "dream"), ("scope", "galaxy"),
    ("content", "   "), ("content", None),
]
BAD_JSON_LINES = [
    "{not json", "[" * 3000, '{"a":' * 3000, "[1, 2]", '"text"', "null",
    '{"id":"x","content":"ok","retrieval_count":' + "9" * 5000 + "}",
    '{"id":"x","content":"a\\ud800b"}', '{"id":"a\\u0000b","content":"ok"}', '{"id":"x\\u2028","content":"ok"}',
    '{"id":"x","content":"ok","tags":["\\udfff"]}', '{"id":["x"],"content":"ok"}', '{"id":"x","content":"a\\u0000"}',
]
BAD_CSV_ROWS = [  # raw rows for the header id,content,confidence,valence,retrieval_count,created_at,tags
    'b,"unclosed quote,0.5,0,0,,', "b,extra,comma,0.5,0,0,,", "b,x,1e400,0,0,,", "b,x,0,0," + "9" * 5000 + ",,",
    "b,x,0,0,0,0001-01-01T00:00:00+01:00,", "b,x,0,0,0,1e20,", 'b,"x"y,0,0,0,,', "b,a\rb,0,0,0,,", "b,,0,0,0,,",
]


@st.composite
def jsonl_file(draw):
    lines, good = [], []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["good", "good", "field", "line"]))
        if kind == "good":
            rec = draw(good_record(i, False))
            lines.append(json.dumps(rec, ensure_ascii=draw(st.booleans())))
            good.append(rec["content"])
        elif kind == "field":
            rec = draw(good_record(i, False))
            name, value = draw(st.sampled_from(BAD_FIELDS))
            rec[name] = value
            lines.append(json.dumps(rec))
        else:
            lines.append(draw(st.sampled_from(BAD_JSON_LINES)))
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\r"])))
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    return sep.join(lines).encode("utf-8"), good, len(lines)


@FUZZ
@given(f=jsonl_file())
def test_jsonl_records_keep_every_good_line_and_report_every_bad_one(f):
    data, good, n_lines = f
    rep = _outcome(load_file, "fuzz.jsonl", data) if data else None
    if rep is None:
        assert not data.strip(), "only an empty upload may be refused as a whole"
        return
    assert [t.content for t in rep.traces] == [g.strip() for g in good]
    blank = sum(1 for line in data.decode().split("\n") if not line.strip())
    if good or n_lines - blank:
        assert len(rep.traces) + len(rep.errors) == n_lines - blank


CSV_COLUMNS = ["id", "content", "confidence", "valence", "retrieval_count", "created_at", "tags"]


@st.composite
def csv_file(draw):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    good, rows = [], 0
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["good", "good", "field", "row"]))
        if kind == "row":
            out.write(draw(st.sampled_from(BAD_CSV_ROWS)) + "\n")
        else:
            rec = draw(good_record(i, True))
            if kind == "field":
                name, value = draw(st.sampled_from([f for f in BAD_FIELDS if f[0] in CSV_COLUMNS]))
                rec[name] = "" if value is None else value
            else:
                good.append(rec["content"])
            w.writerow(["" if rec.get(c) is None else rec.get(c, "") for c in CSV_COLUMNS])
        rows += 1
    return out.getvalue().encode("utf-8"), good, rows


@FUZZ
@given(f=csv_file())
def test_csv_records_keep_every_good_row_and_report_every_bad_one(f):
    data, good, rows = f
    rep = _outcome(load_file, "fuzz.csv", data)
    assert rep is not None
    assert [t.content for t in rep.traces] == [g.strip() for g in good]
    assert len(rep.traces) + len(rep.errors) == rows


@FUZZ
@given(paras=st.lists(st.text(st.characters(exclude_categories=("Cs",)), min_size=0, max_size=40), max_size=10))
def test_text_paragraphs_are_all_kept_or_reported(paras):
    data = "\n\n".join(p.replace("\n\n", "\n") for p in paras).encode("utf-8")
    rep = _outcome(load_file, "fuzz.txt", data)
    if rep is None:
        return  # only a file-level refusal: binary-looking (NUL and no clean line in the first 4 KiB) or empty
    paras = [p.split("\n") for p in data.decode().replace("\r\n", "\n").split("\n\n")]
    nul = sum("\x00" in line for p in paras for line in p)  # a line holding NUL is its own error
    expected = [t.strip() for t in ("\n".join(x for x in p if "\x00" not in x) for p in paras) if t.strip()]
    assert [t.content for t in rep.traces] == expected
    assert [t.id for t in rep.traces] == [f"user:default/fuzz-{i}" for i in range(1, len(expected) + 1)]
    assert len(rep.errors) == nul + (0 if expected or nul else 1)
