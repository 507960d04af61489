"""File loaders are lenient (bad lines reported, good kept); the workspace keeps store/BM25/facts in step."""
import io
import json
import zipfile

import pytest

from retrieval.loaders import FieldMap, load_file, load_path, parse_datetime
from retrieval.models import HashingEmbedder
from retrieval.types import Scope
from retrieval.workspace import Workspace

from conftest import NOW, make_trace


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
    assert rep.traces[2].id.startswith("notes-") and len(rep.traces) == 3
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
    assert [(t.id, t.content) for t in rep.traces] == [("diary-1", "First para\nstill first."), ("diary-2", "Second.")]
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
    ("latin.txt", "caf\xe9".encode("latin-1"), "not UTF-8"),
])
def test_bad_files_are_clear_errors(name, data, msg):
    with pytest.raises(ValueError, match=msg):
        load_file(name, data)


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
    assert res.diagnostics.explain("a").reason.endswith("never searched.")
    ws.set_active(["a"], True)
    assert ws.retriever().retrieve("invoice 42", scope=Scope("user", "u1")).ids[0] == "a"
    assert ws.status()["in_step"]
