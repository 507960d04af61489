"""Ids that exchange formats can carry, and a CSV round trip that gives back what was written (issue 32, item 10)."""
from __future__ import annotations

import json
import tempfile

import pytest
from conftest import U1
from hypothesis import HealthCheck, given, settings, strategies as st

from retrieval.cli.main import main
from retrieval.ingest.parse import trace_from_record
from retrieval.judgments import Case, CaseQuery, Judgment, JudgmentStore
from retrieval.judgments.exchange import export_ratings, import_ratings
from retrieval.judgments.io import spreadsheet_cell

Q = "refund for invoice INV-8842"


@pytest.mark.parametrize("tid, shown", [("a b 3", "' ' at position 1"), ("x\ty", "'\\t' at position 1"),
                                        ("n\u00a0b", "'\\xa0' at position 1")])
def test_an_id_with_whitespace_is_refused_at_parse_naming_the_id_and_the_rule(tid, shown):
    with pytest.raises(ValueError) as exc:
        trace_from_record({"id": tid, "content": "some text"})
    assert str(exc.value).startswith(f"trace {ascii(tid)}: field 'id' holds whitespace ({shown}); ids may not hold "
                                     "spaces or tabs (TREC qrels and other exchange formats split on them)")
    assert trace_from_record({"id": "  padded ", "content": "x"}).id == "padded"  # padding is not part of the id


def test_a_loader_made_id_from_a_file_name_with_spaces_has_none():
    t = trace_from_record({"content": "some text"}, id_prefix="my notes 2026")
    assert " " not in t.id and t.id.startswith("user:default/my-notes-2026-")


def test_trec_export_refuses_an_id_with_whitespace_instead_of_writing_six_columns(tmp_path, capsys):
    db = str(tmp_path / "db")
    js = JudgmentStore(db)  # an id written by another writer of the table, not the loaders
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments([Judgment(U1, Q, "a b 3", 2, rater="ana"), Judgment(U1, Q, "ok", 1, rater="ana")])
    with pytest.raises(ValueError, match="trace id 'a b 3' holds whitespace, which TREC qrels cannot carry"):
        export_ratings(js, "c", "trec")
    assert main(["judge", "export", "c", "--format", "trec", "--out", str(tmp_path / "x.qrels"), "--db", db]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: trace id 'a b 3' holds whitespace") and err.count("\n") == 1
    assert not (tmp_path / "x.qrels").exists()
    assert main(["case", "export", "c", "--out", str(tmp_path / "out"), "--db", db]) == 2
    assert not (tmp_path / "out" / "qrels.trec").exists()


NOTES = ["'=x", "=x", "''=x", "'plain", "+1", "@a", "-2", "'", "''", "plain", "'\t=1", "\r=2"]


@given(st.text(max_size=12))
def test_the_csv_neutralisation_is_undone_exactly(text):
    from retrieval.judgments.io import unquote_cell

    assert unquote_cell(spreadsheet_cell(text)) == text


def test_a_csv_round_trip_keeps_every_note_exactly(tmp_path):
    js = JudgmentStore(str(tmp_path / "a"))
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments([Judgment(U1, Q, f"t{n}", -1, rater="ana", note=note) for n, note in enumerate(NOTES)])
    csv = export_ratings(js, "c", "csv")
    assert "'=x" in csv and "''=x" in csv  # the formula cell is neutralised, and so is the quoted one
    back = JudgmentStore(str(tmp_path / "b"))
    back.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    rep = import_ratings(back, "c", csv, "ratings.csv")
    assert rep.errors == () and rep.imported == len(NOTES)
    assert {j.trace_id: j.note for j in back.judgments()} == {f"t{n}": note for n, note in enumerate(NOTES)}
    assert json.loads(export_ratings(back, "c", "jsonl").splitlines()[0])["note"] in NOTES


# Any text a note can hold (every control character, NUL, CR, LF, U+2028, quotes, formula starts), several at once.
ANY_NOTES = st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
                     | st.sampled_from(["a\x00b", "\x00", "\r", "a\r\nb", "\x1b[31m", "'=1", "\u2028"]),
                     min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=ANY_NOTES, query=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12))
def test_judge_export_then_import_gives_back_every_note_or_refuses_csv_in_words(notes, query):
    """JSONL carries any text exactly; CSV carries any text without a NUL exactly (control characters, line breaks
    and formula starts included) and refuses one with a NUL, naming the rating and the fix, instead of writing a
    line `judge import` would refuse (probe: a note with a NUL was exported raw and its rating lost on import)."""
    with tempfile.TemporaryDirectory() as d:
        js = JudgmentStore(f"{d}/a")
        js.save_case(Case("c", (CaseQuery("q1", query, U1),)))
        js.add_judgments([Judgment(U1, query, f"t{n}", -1, rater="ana", note=note) for n, note in enumerate(notes)])
        want = {f"t{n}": note for n, note in enumerate(notes)}
        nul = any("\x00" in t for t in [*notes, query])
        for fmt in ("jsonl", "csv"):
            if fmt == "csv" and nul:
                with pytest.raises(ValueError, match="holds a NUL character .* which a CSV line cannot carry; "
                                                     "nothing was written: export as JSONL"):
                    export_ratings(js, "c", "csv")
                continue
            text = export_ratings(js, "c", fmt)
            back = JudgmentStore(f"{d}/{fmt}")
            back.save_case(Case("c", (CaseQuery("q1", query, U1),)))
            rep = import_ratings(back, "c", text.encode("utf-8"), f"ratings.{fmt}")
            assert rep.errors == () and rep.imported == len(notes), (fmt, rep.errors)
            assert {j.trace_id: j.note for j in back.judgments()} == want, fmt


def test_judge_export_csv_of_a_nul_note_writes_no_file_and_says_why(tmp_path, capsys):
    db = str(tmp_path / "db")
    js = JudgmentStore(db)
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments([Judgment(U1, Q, "t1", 2, rater="ana", note="before\x00after")])
    out = tmp_path / "r.csv"
    assert main(["judge", "export", "c", "--format", "csv", "--out", str(out), "--db", db]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the note of the rating of 't1' for query 'q1' by 'ana' holds a NUL character "
                          "(position 7)") and err.count("\n") == 1, err
    assert not out.exists()
    assert main(["judge", "export", "c", "--format", "jsonl", "--out", str(out), "--db", db]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["note"] == "before\x00after"
