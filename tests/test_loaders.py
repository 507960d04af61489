"""File loaders are lenient (bad lines reported, good kept); the workspace keeps store/BM25/facts in step."""
import hashlib
import io
import json
import re
import tracemalloc
import zipfile

import pytest

from retrieval.ingest.loaders import (FieldMap, auto_id, csv_headers, jsonl_fields, load_beir_zip, load_file, load_path,
                               parse_datetime)
from retrieval.models import HashingEmbedder
from retrieval.types import Scope
from retrieval.workspace.core import Workspace

from conftest import NOW, make_trace

from apphelpers import load_script

_probe = load_script("probe_loaders")  # zip builders that can lie about sizes
MB, deflate_zeros, raw_zip = _probe.MB, _probe.deflate_zeros, _probe.raw_zip


def test_jsonl_keeps_good_lines_and_reports_bad_ones():
    data = "\n".join([
        json.dumps({"id": "a", "content": "first", "created_at": "2025-03-01T10:00:00Z", "tags": ["x"]}),
        "{not json",
        json.dumps({"id": "b", "text": "uses the text field", "valence": 0.5}),
        json.dumps({"id": "c", "content": "   "}),
        json.dumps({"id": "d", "content": "bad valence", "valence": 4}),
        json.dumps({"id": "e", "content": "bad date", "created_at": "yesterday"}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"content": "no id gets a stable one"}),
    ]).encode()
    rep = load_file("notes.jsonl", data, scope="user", scope_id="u9")
    assert [t.id for t in rep.traces][:2] == ["a", "b"]
    assert rep.traces[2].id == "user:u9/notes-69f2e3fe783e" and len(rep.traces) == 3
    assert rep.traces[0].tags == ("x",) and rep.traces[0].scope_id == "u9"
    assert rep.traces[0].created_at.tzinfo is not None
    errors = {e.line: e.reason for e in rep.errors}
    assert set(errors) == {2, 4, 5, 6, 7}
    assert "invalid JSON" in errors[2]
    assert "no text" in errors[4]
    assert "'d'" in errors[5] and "valence" in errors[5]
    assert "created_at" in errors[6] and "JSON object" in errors[7]


def test_csv_with_field_mapping():
    data = b"key,body,when\nk1,hello there,2025-01-02\nk2,,2025-01-03\n"
    rep = load_file("x.csv", data, fields=FieldMap(id="key", content="body", created_at="when"))
    assert [t.id for t in rep.traces] == ["k1"]
    assert rep.traces[0].created_at.isoformat().startswith("2025-01-02")
    assert rep.errors[0].line == 3 and "body" in rep.errors[0].reason


def test_plain_text_is_one_trace_per_paragraph():
    rep = load_file("diary.txt", b"First para\nstill first.\n\nSecond.\n\n\n", scope="thread", scope_id="t1")
    assert [(t.id, t.content) for t in rep.traces] == [("thread:t1/diary-1", "First para\nstill first."),
                                                       ("thread:t1/diary-2", "Second.")]
    assert rep.traces[0].scope == "thread"


def test_beir_zip(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("scifact/corpus.jsonl", json.dumps({"_id": "9", "title": "T", "text": "body"}) + "\n")
        z.writestr("scifact/queries.jsonl", "")
    rep = load_file("scifact.zip", buf.getvalue())
    assert [(t.id, t.content) for t in rep.traces] == [("9", "T\nbody")]
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(ValueError, match="no corpus.jsonl"):
        load_file("x.zip", empty.getvalue())
    with pytest.raises(ValueError, match="not a valid .zip"):
        load_file("x.zip", b"PK not really")


@pytest.mark.parametrize("name,data,msg", [
    ("photo.png", b"\x89PNG", "unsupported file type .png"),
    ("empty.jsonl", b"", "is empty"),
    ("bin.jsonl", b"\x00\x01\x02", "looks binary"),
    ("utf16.txt", "café".encode("utf-16"), "not UTF-8 text: it starts with a UTF-16 byte-order mark"),
])
def test_bad_files_are_clear_errors(name, data, msg):
    with pytest.raises(ValueError, match=msg):
        load_file(name, data)


@pytest.mark.parametrize("name", ["latin.txt", "latin.jsonl", "latin.csv"])
def test_a_line_that_is_not_utf8_is_that_lines_error_and_the_rest_loads(name):
    head, first, last = {"latin.txt": (b"", b"first\n\n", b"\nlast\n"),
                         "latin.jsonl": (b"", b'{"id": "a", "text": "first"}\n', b'{"id": "b", "text": "last"}\n'),
                         "latin.csv": (b"id,content\n", b"a,first\n", b"b,last\n")}[name]
    rep = load_file(name, head + first + "caf\xe9".encode("latin-1") + b"\n" + last)
    assert [t.content for t in rep.traces] == ["first", "last"]
    (err,) = rep.errors
    assert err.line == (head + first).count(b"\n") + 1 and "not UTF-8 text (byte 4 of the line is 0xe9)" in err.reason


def test_bad_scope_and_missing_path(tmp_path):
    with pytest.raises(ValueError, match="scope 'galaxy'"):
        load_file("a.txt", b"x", scope="galaxy")
    with pytest.raises(ValueError, match="does not exist"):
        load_path(tmp_path / "nope.jsonl")


def test_parse_datetime_forms():
    assert parse_datetime("2025-03-01").tzinfo is not None
    assert parse_datetime("2025-03-01T10:00:00+02:00").utcoffset().total_seconds() == 7200
    assert parse_datetime(1_700_000_000).year == 2023 and parse_datetime(1_700_000_000_000).year == 2023
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_datetime("")


def test_workspace_keeps_store_bm25_and_facts_in_step(tmp_path):
    uri = str(tmp_path / "db")
    ws = Workspace(uri, embedder=HashingEmbedder(32), clock=lambda: NOW)
    rep = ws.ingest([make_trace("a", "I live in Lisbon."), make_trace("b", "Invoice INV-1 paid."),
                     make_trace("z", "inactive note", is_active=False)])
    assert rep.written == 3 and rep.facts == 1
    assert ws.status()["in_step"] and len(ws.bm25) == 2
    with pytest.raises(ValueError, match="'bad'.*content"):
        ws.ingest([make_trace("c", "fine"), make_trace("bad", " ")])
    assert ws.store.count() == 3 and len(ws.bm25) == 2  # nothing from the failed batch
    again = Workspace(uri, embedder=HashingEmbedder(32))  # BM25 loads from disk beside the data
    assert again.bm25.search("INV-1") and again.facts.count() == 1
    assert again.delete(["a"]) == 1
    assert again.facts.count() == 0 and "a" not in again.bm25
    third = Workspace(uri, embedder=HashingEmbedder(32))
    assert len(third.bm25) == 1 and third.status()["traces"] == 2


def test_workspace_rebuilds_a_missing_or_stale_bm25(tmp_path):
    uri = str(tmp_path / "db")
    ws = Workspace(uri, embedder=HashingEmbedder(32))
    ws.ingest([make_trace("a", "alpha beta"), make_trace("b", "gamma")])
    ws.bm25_path.write_bytes(b"garbage")
    again = Workspace(uri, embedder=HashingEmbedder(32))
    assert [i for i, _ in again.bm25.search("alpha", scopes=[Scope("user", "u1")])] == ["a"]


def test_workspace_deactivates_and_reactivates(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW)
    ws.ingest([make_trace("a", "invoice 42 refund"), make_trace("b", "weather")])
    assert ws.set_active(["a"], False) == 1
    r = ws.retriever()
    res = r.retrieve("invoice 42", scope=Scope("user", "u1"))
    assert "a" not in res.diagnostics.stage_ids["dense"] and "a" not in res.diagnostics.stage_ids["sparse"]
    assert "inactive" in res.diagnostics.explain("a", r.lookup(Scope("user", "u1"))).reason
    ws.set_active(["a"], True)
    assert ws.retriever().retrieve("invoice 42", scope=Scope("user", "u1")).ids[0] == "a"
    assert ws.status()["in_step"]


# ---- auto ids carry the scope -------------------------------------------------

def test_auto_ids_name_the_scope_and_explicit_ids_are_kept():
    txt = load_file("notes.txt", b"one\n\ntwo", scope="user", scope_id="u1")
    assert [t.id for t in txt.traces] == ["user:u1/notes-1", "user:u1/notes-2"]
    assert [t.id for t in load_file("notes.txt", b"one", scope="thread", scope_id="u1").traces] == ["thread:u1/notes-1"]
    rows = load_file("notes.jsonl",
                     b'{"content":"same"}\n{"content":"same","scope_id":"u2"}\n{"id":"keep-me","content":"x"}',
                     scope="user", scope_id="u1")
    digest = hashlib.blake2b(b"same", digest_size=6).hexdigest()
    assert [t.id for t in rows.traces[:2]] == [f"user:u1/notes-{digest}", f"user:u2/notes-{digest}"]
    assert auto_id("user", "u2", "notes", digest) == rows.traces[1].id
    assert rows.traces[2].id == "keep-me"  # (an id with a space is refused: tests/test_ids_and_csv.py)
    csv_rep = load_file("notes.csv", b"content\nsame\n", scope="user", scope_id="u1")
    assert [t.id for t in csv_rep.traces] == [rows.traces[0].id]


def test_the_same_file_for_another_scope_never_moves_a_trace(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW)
    ws.ingest(load_file("notes.txt", b"u1 private plan", scope="user", scope_id="u1").traces)
    ws.ingest(load_file("notes.txt", b"u2 other words", scope="user", scope_id="u2").traces)
    ws.ingest(load_file("notes.jsonl", b'{"content":"shared words"}', scope="user", scope_id="u1").traces)
    ws.ingest(load_file("notes.jsonl", b'{"content":"shared words"}', scope="user", scope_id="u2").traces)
    got = sorted((t.scope_id, t.content) for t in ws.store.all_traces())
    assert got == [("u1", "shared words"), ("u1", "u1 private plan"), ("u2", "shared words"), ("u2", "u2 other words")]


# ---- a bad line is a LineError, never another exception -------------------------

GOOD_LINES = ['{"id":"g1","content":"first good"}', '{"id":"g2","content":"second good"}']


@pytest.mark.parametrize("bad,reason", [
    ('{"id":"x","content":"c","retrieval_count":1e400}', "field 'retrieval_count' is inf, not a whole number"),
    ('{"id":"x","content":"c","retrieval_count":1.5}', "field 'retrieval_count' is 1.5, not a whole number"),
    ('{"id":"x","content":"c","retrieval_count":18446744073709551616}', "'retrieval_count' is an integer of 65 bits"),
    ('{"id":"x","content":"c","created_at":1e20}',
     "field 'created_at': epoch time 1e\\+20 is outside 1678-01-01 .. 2262-04-11"),
    ('{"id":"x","content":"c","created_at":"1e20"}', "field 'created_at': epoch time 1e\\+20 is outside"),
    ('{"id":"x","content":"c","created_at":"0001-01-01T00:00:00+01:00"}',
     "'created_at' is 0001-01-01T00:00:00\\+01:00; the store holds"),
    ('{"id":"x","content":"c","last_accessed_at":"9999-12-31T23:00-05:00"}',
     "'last_accessed_at' is 9999-12-31T23:00:00-05:00"),
    ('{"id":"x","content":"c","confidence":1e400}', "field 'confidence' is inf; must be between 0 and 1"),
    ('{"id":"x","content":"c","stability_ms":Infinity}', "field 'stability_ms' is inf; must be a finite number > 0"),
    ("[" * 100_000, "invalid JSON \\(nested too deeply\\)"),
    ('{"id":"x","content":"c","retrieval_count":' + "7" * 5000 + "}",
     "invalid JSON \\(Exceeds the limit \\(4300 digits\\)"),
    ('{"id":' + "7" * 4000 + ',"content":"c"}', "field 'id' is an integer of about 400\\d digits; expected text"),
    ('{"id":"x","content":"a\\ud800b"}', "field 'content' contains a lone surrogate"),
    ('{"id":"a\\u0000b","content":"c"}', "field 'id' contains U\\+0000"),
    ('{"id":{"a":1},"content":"c"}', "field 'id' is a JSON object; expected text"),
    ('{"id":"x","content":"c","tags":[["deep"]]}', "field 'tags' is a list; expected text"),
])
def test_jsonl_rejects_the_line_and_keeps_the_rest(bad, reason):
    rep = load_file("n.jsonl", "\n".join([GOOD_LINES[0], bad, GOOD_LINES[1]]).encode())
    assert [t.id for t in rep.traces] == ["g1", "g2"]
    assert [e.line for e in rep.errors] == [2]
    assert re.search(reason, rep.errors[0].reason), rep.errors[0].reason


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085", "\x0c", "\x0b", "\x1e"])
def test_unicode_line_separators_inside_a_json_string_do_not_split_the_line(sep):
    line = json.dumps({"id": "s", "content": f"before{sep}after"}, ensure_ascii=False)
    rep = load_file("n.jsonl", "\r\n".join([GOOD_LINES[0], line, GOOD_LINES[1]]).encode())
    assert [(t.id, t.content) for t in rep.traces] == [("g1", "first good"), ("s", f"before{sep}after"),
                                                       ("g2", "second good")]
    assert rep.errors == []


def test_csv_fields_over_128_kib_are_read():
    big = "word " * 60_000  # 300 KB, past the csv module's 131,072-character default
    rep = load_file("c.csv", f'id,content\ng1,ok\nbig,"{big}"\nbig2,{big}\ng2,ok\n'.encode())
    assert [(t.id, len(t.content)) for t in rep.traces] == [("g1", 2), ("big", len(big.strip())),
                                                            ("big2", len(big.strip())), ("g2", 2)]
    assert rep.errors == []


@pytest.mark.parametrize("body,bad_line", [
    ('g1,ok\nbad,"unclosed\ng2,ok\ng3,ok\n', 3),
    ('g1,ok\ng2,ok\ng3,ok\nbad,"unclosed', 5),
    ('g1,ok\nbad,"x"y\ng2,ok\ng3,ok\n', 3),
    ('g1,ok\nbad,"unclosed\ng2,ok\ng3,"quoted"\n', 3),
])
def test_an_unclosed_csv_quote_is_reported_and_does_not_swallow_rows(body, bad_line):
    rep = load_file("c.csv", ("id,content\n" + body).encode())
    assert [t.id for t in rep.traces] == ["g1", "g2", "g3"]
    assert [(e.line, e.reason.split(";")[0][:14]) for e in rep.errors] == [(bad_line, "malformed CSV ")]
    assert "unclosed quote" in rep.errors[0].reason


def test_csv_rows_with_extra_fields_or_huge_numbers_are_line_errors():
    rep = load_file("c.csv", ("id,content,retrieval_count\ng1,ok,0\nb1,hello, world,0\nb2,x," + "9" * 5000
                              + "\nb3,x,1e400\nb4,a\rb,0\ng2,ok,\n").encode())
    assert [t.id for t in rep.traces] == ["g1", "g2"]
    assert [e.line for e in rep.errors] == [3, 4, 5, 6]
    assert rep.errors[0].reason.startswith("row has 4 fields but the header names 3")
    assert "'retrieval_count' is '9999" in rep.errors[1].reason and "not a whole number" in rep.errors[2].reason


@pytest.mark.parametrize("data,cols", [
    (b'id,"body, with comma", when \n1,2,3\n', ["id", "body, with comma", "when"]),
    ("\ufeffid,content\n".encode(), ["id", "content"]),
    (b"\n\nid,,content,id\n", ["id", "content"]),
    (b'id,"unclosed\n', []),
    (b"", []),
    (b"\xff\xfe\x00garbage", []),  # a header line holding NUL is no header
])
def test_csv_headers_parse_quotes_and_never_raise(data, cols):
    assert csv_headers(data) == cols


def test_jsonl_fields_come_from_the_first_object():
    assert jsonl_fields(b'not json\n[1,2]\n{"id":1,"text":"x"," ":0}\n{"other":1}') == ["id", "text"]
    assert jsonl_fields(b"[" * 5000) == [] and jsonl_fields(b"") == []


# ---- zips ---------------------------------------------------------------

def _zip(files: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_damaged_or_encrypted_zip_is_a_value_error_naming_the_fix():
    good = _zip({"ds/corpus.jsonl": "\n".join(GOOD_LINES).encode()})
    bad = bytearray(good)
    bad[14:18] = b"\0\0\0\0"  # local header CRC
    cd = bytes(bad).rfind(b"PK\x01\x02")
    bad[cd + 16:cd + 20] = b"\0\0\0\0"  # central directory CRC
    with pytest.raises(ValueError, match="ds/corpus.jsonl cannot be read \\(Bad CRC-32.*damaged"):
        load_file("b.zip", bytes(bad))
    with pytest.raises(ValueError, match="z.zip:corpus.jsonl is encrypted; zip it again without a password"):
        load_file("z.zip", raw_zip("corpus.jsonl", b"x" * 40, 0, 40, method=0, flags=1))
    with pytest.raises(ValueError, match="cannot be read \\(.*compression.*unsupported feature"):
        load_file("z.zip", raw_zip("corpus.jsonl", b"x" * 40, 0, 40, method=99))
    with pytest.raises(ValueError, match="not a valid .zip archive"):
        load_file("z.zip", good[: len(good) // 2])


def test_macosx_shadow_files_are_not_the_corpus():
    data = _zip({"__MACOSX/._corpus.jsonl": b"\x00\x05\x16\x07", "ds/corpus.jsonl": "\n".join(GOOD_LINES).encode()})
    assert [t.id for t in load_file("m.zip", data).traces] == ["g1", "g2"]


def _peak(fn) -> tuple[int, str]:
    tracemalloc.start()
    try:
        fn()
        msg = ""
    except ValueError as exc:
        msg = str(exc)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, msg


def test_a_600mb_zip_bomb_is_refused_from_its_declared_size_without_inflating():
    payload, crc = deflate_zeros(600 * MB)
    bomb = raw_zip("ds/corpus.jsonl", payload, crc, 600 * MB)
    assert len(bomb) < 700_000
    peak, msg = _peak(lambda: load_file("bomb.zip", bomb))
    assert msg.startswith("bomb.zip:ds/corpus.jsonl inflates to 600 MB; the limit is 200 MB")
    assert peak < 8 * MB
    # the same stream under a lying 1 KB header: streaming stops at the declared size, CRC fails
    peak, msg = _peak(lambda: load_file("bomb.zip", raw_zip("ds/corpus.jsonl", payload, crc, 1000)))
    assert "cannot be read (Bad CRC-32" in msg and peak < 8 * MB


def test_a_high_ratio_member_under_the_cap_is_refused_and_the_stream_is_capped():
    payload, crc = deflate_zeros(40 * MB)
    peak, msg = _peak(lambda: load_file("r.zip", raw_zip("corpus.jsonl", payload, crc, 40 * MB)))
    assert "inflates 1" in msg and "(limit 100×); this looks like a zip bomb" in msg and peak < 8 * MB
    small, crc = deflate_zeros(4 * MB)
    peak, msg = _peak(lambda: load_beir_zip(raw_zip("corpus.jsonl", small, crc, 3 * MB), max_bytes=3 * MB + 10))
    assert "cannot be read" in msg and peak < 3 * MB + 4 * MB
