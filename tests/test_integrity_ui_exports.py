"""Exports (item 6): a CSV or TSV meant for a spreadsheet neutralises every cell a spreadsheet would run as a formula
(`= + - @`, a leading tab or carriage return get a leading quote); the machine formats `export_case` writes (BEIR
qrels TSV, TREC qrels, JSONL) stay byte-exact, so a re-import and evaluation tools read the ids as graded."""
from __future__ import annotations

import csv
import io
import json

import pytest

from retrieval.judgments import JudgmentStore
from retrieval.judgments.io import FORMULA_START, export_case, import_files, spreadsheet_cell, spreadsheet_csv
from retrieval.types import Scope

HOSTILE = ["=HYPERLINK(\"http://evil.invalid\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
           "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_formula_cell_gets_a_leading_quote(text):
    assert spreadsheet_cell(text) == "'" + text
    assert text.startswith(FORMULA_START)


@pytest.mark.parametrize("value", ["maya-inv-20931", "plain words", "a=b", "", "'already quoted", " =spaced"])
def test_ordinary_text_is_unchanged(value):
    assert spreadsheet_cell(value) == value


@pytest.mark.parametrize("value", [-0.25, 3, 0.0, True, None])
def test_numbers_stay_numbers(value):
    assert spreadsheet_cell(value) is value


def test_spreadsheet_csv_neutralises_every_text_cell_and_keeps_the_rest():
    rows = [{"qid": "q1", "query": HOSTILE[0], "Δ": -0.25, "entered top 10": "-id, @id"},
            {"qid": "=q2", "query": "ordinary, with \"quotes\"", "Δ": 0.5, "entered top 10": "", "extra": "+x"}]
    out = spreadsheet_csv(rows)
    got = list(csv.reader(io.StringIO(out)))
    assert got[0] == ["qid", "query", "Δ", "entered top 10", "extra"]
    assert got[1] == ["q1", "'" + HOSTILE[0], "-0.25", "'-id, @id", ""]
    assert got[2] == ["'=q2", "ordinary, with \"quotes\"", "0.5", "", "'+x"]
    for row in got[1:]:
        for cell in row:
            assert not cell.startswith(FORMULA_START) or cell.lstrip("-").replace(".", "").isdigit()
    tsv = list(csv.reader(io.StringIO(spreadsheet_csv(rows, delimiter="\t")), delimiter="\t"))
    assert tsv == got


def test_case_export_files_are_byte_exact_for_ids_a_spreadsheet_would_run(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    scope = Scope("user", "maya")
    line = {"qid": "=q1", "query": "-what about @home?", "scope": "user:maya",
            "relevant": {"=HYPERLINK(1)": 2, "-minus": 1, "@at": 3, "+plus": 0}}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(line) + "\n")
    import_files(js, "odd", jsonl=src)
    out = tmp_path / "out"
    export_case(js, "odd", out)
    assert (out / "qrels" / "test.tsv").read_bytes() == (
        b"query-id\tcorpus-id\tscore\n"
        + b"".join(f"=q1\t{t}\t{g}\n".encode() for t, g in sorted(line["relevant"].items())))
    assert (out / "qrels.trec").read_bytes() == b"".join(
        f"=q1 0 {t} {g}\n".encode() for t, g in sorted(line["relevant"].items()))
    assert json.loads((out / "queries.jsonl").read_text()) == {"_id": "=q1", "text": "-what about @home?"}
    # and a re-import reads exactly what was graded
    js2 = JudgmentStore(str(tmp_path / "db2"))
    import_files(js2, "again", queries=out / "queries.jsonl", qrels=out / "qrels.trec", scope=scope)
    assert js2.qrels("again") == js.qrels("odd")
