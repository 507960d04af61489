"""Cells and lines for exchange files: a spreadsheet's CSV cells neutralised (and restored exactly on import), and a
TREC qrels line that refuses an id its columns cannot carry. Re-exported by `judgments.io`."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable

# A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell starting with one of these as a formula
# (OWASP "CSV injection"); a leading tab or carriage return is stripped by some of them before that check.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: object) -> object:
    """A cell for a CSV or TSV meant for a spreadsheet: text starting with `= + - @`, a tab or a carriage return
    gets a leading single quote, so the spreadsheet shows it as text and never runs it. Numbers (int, float,
    bool) and None pass unchanged, so -0.25 stays a number. Not for machine formats (see `export_case`)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    return "'" + text if formula_like(text) else text


def formula_like(text: str) -> bool:
    """Does `text`, past any leading quotes, start like a formula? Export quotes exactly these and import
    (`unquote_cell`) takes exactly one quote off them, so a note that really starts with `'=` survives a round trip."""
    return text.lstrip("'").startswith(FORMULA_START)


def unquote_cell(text: str) -> str:
    """What `spreadsheet_cell` was given, from what it wrote (the exact inverse for text)."""
    return text[1:] if text.startswith("'") and formula_like(text) else text


def trec_line(qid: str, trace_id: str, grade: int) -> str:
    """`qid 0 trace grade` — or ValueError when an id holds whitespace, which would split it into more columns
    (a re-import would then drop the grade)."""
    for what, value in (("query id", qid), ("trace id", trace_id)):
        if any(c.isspace() for c in value):
            raise ValueError(f"{what} {value!r} holds whitespace, which TREC qrels cannot carry (the line would get "
                             "more than 4 columns); nothing was written: export as JSONL or CSV instead")
    return f"{qid} 0 {trace_id} {grade}\n"


def spreadsheet_csv(rows: Iterable[dict], delimiter: str = ",") -> str:
    """`rows` (dicts; the first row's keys, then any new key in order, are the columns) as CSV (or TSV with
    `delimiter="\t"`) for a spreadsheet: every text cell, header included, through `spreadsheet_cell`. This
    output is neutralised, not byte-exact: read it back with a spreadsheet, not with `case import`."""
    rows = list(rows)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")
    w.writerow([spreadsheet_cell(c) for c in columns])
    for r in rows:
        w.writerow([spreadsheet_cell(r.get(c)) for c in columns])
    return buf.getvalue()
