"""A case's ratings out and back in, every rater kept apart: TREC qrels (one rater, or combined by the case's
policy), CSV and JSONL (rater, grade, "can't rate" and its note, content hash, prompt version, timestamps).

JSONL and TREC are byte-exact machine formats. CSV is for spreadsheets: its cells are neutralised
(`io.spreadsheet_cell`), and importing it removes that quote again. Import maps each row back to its rater
for the local operator only (`rename` maps names across stores); a signed-in visitor's import is stored under
their sign-in (`identity`); a bad row is reported with its
line and reason and the others are kept; nothing is written when the visitor may not grade in a row's scope.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from retrieval.lines import Line, csv_records, json_value, read_lines
from retrieval.types import MAX_TIME, MIN_TIME
from retrieval.judgments.io import LineError, spreadsheet_csv, trec_line, unquote_cell
from retrieval.judgments.identity import honours_rater_column, person, writer
from retrieval.judgments.model import CANT_RATE, Case, Judgment, check_grade, query_key, scope_text
from retrieval.judgments.raters import combined_grades, usable
from retrieval.judgments.store import JudgmentStore

if TYPE_CHECKING:
    from retrieval.access import Access

FORMATS = ("trec", "csv", "jsonl")
COLUMNS = ("case", "qid", "query", "scope", "trace_id", "rater", "grader", "grade", "cant_rate", "note",
           "content_hash", "prompt_version", "source", "created_at", "updated_at")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="seconds") if t else ""


def _epoch(name: str, value: object) -> float:
    """A row's time as epoch seconds (0 when empty): ISO 8601 or a number of seconds, within what a date can show
    (`types.MIN_TIME` .. `MAX_TIME`); ValueError naming the field and the range (an absurd time would be stored
    and then fail every export of the case)."""
    if value is None or value == "":
        return 0.0
    low, high = MIN_TIME.timestamp(), MAX_TIME.timestamp()
    shown = ascii(value)[:60] if isinstance(value, str) else repr(value)[:60]
    span = f"{MIN_TIME:%Y-%m-%d} .. {MAX_TIME:%Y-%m-%d}"
    want = "give ISO 8601 (e.g. 2025-03-01T10:00:00+00:00) or epoch seconds"
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError
        t = float(value) if not isinstance(value, str) else datetime.fromisoformat(value.strip()).timestamp()
    except (ValueError, OverflowError):
        raise ValueError(f"field '{name}' is {shown}, not a time; {want} within {span}") from None
    if not low <= t <= high:  # NaN fails too
        raise ValueError(f"field '{name}' is {shown}, outside the valid range {span}; {want} within it")
    return t


def rating_rows(case: Case, judgments: Iterable[Judgment], rater: str | None = None) -> list[dict]:
    """One row per rating of the case's queries (all raters, or `rater`), in case order."""
    qid = {(scope_text(q.scope), query_key(q.query)): q.qid for q in case.queries}
    rows = []
    for j in judgments:
        q = qid.get((scope_text(j.scope), query_key(j.query)))
        if q is None or (rater and j.who != rater):
            continue
        rows.append({"case": case.name, "qid": q, "query": j.query, "scope": scope_text(j.scope),
                     "trace_id": j.trace_id, "rater": j.who, "grader": j.grader,
                     "grade": None if j.cant_rate else j.grade, "cant_rate": j.cant_rate, "note": j.note,
                     "content_hash": j.content_hash, "prompt_version": j.prompt_version, "source": j.source,
                     "created_at": _iso(j.created_at), "updated_at": _iso(j.updated_at)})
    order = {q.qid: n for n, q in enumerate(case.queries)}
    return sorted(rows, key=lambda r: (order[r["qid"]], r["trace_id"], r["rater"]))


def export_ratings(js: JudgmentStore, case: Case | str, fmt: str, rater: str | None = None,
                   hashes: Mapping[str, str] | None = None) -> str:
    """The case's ratings as text. `trec`: one rater's grades (`rater`), or with `rater=None` the grades the
    case's policy combines — stale grades left out, as everywhere (`fresh`; against `hashes`, else the store's
    traces now); `csv` / `jsonl`: every rater's rows (or `rater`'s), stale ones too, each with its content hash."""
    case = js.case(case) if isinstance(case, str) else case
    if fmt not in FORMATS:
        raise ValueError(f"export format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    judgments = js.case_judgments(case)
    if fmt == "trec":
        hashes = js.hashes_now(judgments) if hashes is None else hashes
        if rater:
            mine = [j for j in usable(judgments, hashes) if j.who == rater]
            grades = {(scope_text(j.scope), query_key(j.query), j.trace_id): j.grade for j in mine}
        else:
            grades = combined_grades(judgments, js.policy(case.name), hashes)
        return "".join(trec_line(q.qid, t, g) for q in case.queries for (s, qk, t), g in sorted(grades.items())
                       if (s, qk) == (scope_text(q.scope), query_key(q.query)))
    rows = rating_rows(case, judgments, rater)
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    for r in rows:
        _csv_can_carry(r)
    return spreadsheet_csv(rows or [dict.fromkeys(COLUMNS)])


def _csv_can_carry(row: Mapping) -> None:
    """ValueError for a rating a CSV line cannot give back: a NUL in any text (a spreadsheet cuts the cell there, and
    `judge import` refuses the line as not text). JSONL escapes it (`\\u0000`) and returns it exactly; every other
    control character, tab and line break included, survives a CSV round trip (tests/test_ids_and_csv.py)."""
    for col, v in row.items():
        if isinstance(v, str) and "\x00" in v:
            raise ValueError(f"the {col} of the rating of {row['trace_id']!r} for query {row['qid']!r} by "
                             f"{row['rater']!r} holds a NUL character (position {v.index(chr(0)) + 1}), which a CSV "
                             "line cannot carry; nothing was written: export as JSONL (--format jsonl), which "
                             "carries it exactly")


@dataclass(frozen=True)
class RatingsReport:
    imported: int
    raters: tuple[str, ...]
    errors: tuple[LineError, ...] = ()
    notes: tuple[str, ...] = ()  # what the import decided for the file, e.g. its rater column ignored

    def to_dict(self) -> dict:
        return {"imported": self.imported, "raters": list(self.raters), "errors": [str(e) for e in self.errors],
                **({"notes": list(self.notes)} if self.notes else {})}


def _unquote(v: object) -> object:
    return unquote_cell(v) if isinstance(v, str) else v


def parse_ratings(data: bytes | str, name: str = "ratings.jsonl") -> list[tuple[int, dict]]:
    """(line number, row) pairs from JSONL or (by the name's ending) CSV, read by the one line reader
    (`retrieval.lines`); a line that cannot be read is a row {"_bad": why}, which `_judgment` rejects."""
    lines = read_lines(data, name)
    if name.lower().endswith(".csv"):
        return _csv_ratings(lines)
    out: list[tuple[int, dict]] = []
    for line in lines:
        if line.text is None:
            out.append((line.n, {"_bad": line.error}))
        elif line.text.strip():
            try:
                r = json_value(line.text)
            except ValueError as exc:
                r = {"_bad": str(exc)}
            out.append((line.n, r if isinstance(r, dict) else {"_bad": "not a JSON object"}))
    return out


def _csv_ratings(lines: list[Line]) -> list[tuple[int, dict]]:
    """CSV rows as dicts by the header row; an unclosed quote costs its own line only (`csv_records`)."""
    out: list[tuple[int, dict]] = []
    header: list[str] | None = None
    for n, row, err in csv_records(lines):
        if header is None:
            if row is None:
                return [(n, {"_bad": f"no usable header row ({err}); the first line must name the columns"})]
            header = [c.strip() for c in row]
        elif row is None:
            out.append((n, {"_bad": err}))
        elif len(row) > len(header) and any(c.strip() for c in row[len(header):]):
            out.append((n, {"_bad": f"row has {len(row)} fields but the header names {len(header)}; "
                                     "quote fields that contain commas"}))
        else:
            out.append((n, {k: _unquote(v) for k, v in zip(header, row) if k}))
    return out


def _judgment(case: Case, r: Mapping, who: str) -> Judgment:
    """One row as a person's grade under `who` (the row's own rater, or the importer: `import_ratings` decides)."""
    if "_bad" in r:
        raise ValueError(r["_bad"])
    q = next((x for x in case.queries if x.qid == str(r.get("qid", ""))), None)
    if q is None:
        raise ValueError(f"query id {r.get('qid')!r} is not in case {case.name}")
    if str(r.get("grader") or "human") != "human":
        raise ValueError(f"a {r.get('grader')} grade cannot be imported: only the machine judge or a log import "
                         "writes those")
    rater = person(who)
    cant = str(r.get("cant_rate")).lower() in ("true", "1")
    grade = CANT_RATE if cant else check_grade(r.get("grade"), case.scale)
    if not str(r.get("trace_id") or "").strip():
        raise ValueError("trace_id is empty")
    return Judgment(q.scope, q.query, str(r["trace_id"]), grade, "human", str(r.get("source") or "import"),
                    _epoch("updated_at", r.get("updated_at")), rater, str(r.get("content_hash") or ""),
                    str(r.get("note") or ""),
                    str(r.get("prompt_version") or ""), _epoch("created_at", r.get("created_at")))


def import_ratings(js: JudgmentStore, case: Case | str, data: bytes | str, name: str = "ratings.jsonl", *,
                   rename: Mapping[str, str] | None = None,
                   known_ids: Callable[[list[str]], Iterable[str]] | None = None,
                   access: Access | None = None, rater: str = "") -> RatingsReport:
    """Write the ratings of an export back. Who they belong to is `identity`'s rule: for the local operator (no
    sign-in) each row goes to the rater it names (renamed by `rename`; a row without one to `rater` or `local`);
    for a signed-in visitor every row is theirs and the report says the rater column was ignored. A row naming a
    reserved rater (`machine`, `implicit`) or a machine-made grade is a bad row."""
    case = js.case(case) if isinstance(case, str) else case
    honoured = honours_rater_column(access)
    me = writer(access, rater)
    good: list[Judgment] = []
    errors: list[LineError] = []
    named: set[str] = set()
    for n, r in parse_ratings(data, name):
        try:
            named.add(str(r.get("rater") or ""))
            who = str(r.get("rater") or "") if honoured else me
            good.append(_judgment(case, r, (rename or {}).get(who, who) if who else me))
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
            errors.append(LineError(name, n, f"{exc}; each row needs qid, trace_id, rater and grade "
                                    "(or cant_rate true)"))
    if known_ids is not None and good:
        known = set(known_ids(sorted({j.trace_id for j in good})))
        errors += [LineError(name, 0, f"trace {j.trace_id!r} is not in the store; skipped")
                   for j in good if j.trace_id not in known]
        good = [j for j in good if j.trace_id in known]
    n = js.add_judgments(good, case.scale, access=access) if good else 0
    notes = () if honoured or not (named - {"", me}) else (f"rater column ignored: grades stored as {me} (only "
                                                           "the local operator, without sign-in, imports as others)",)
    return RatingsReport(n, tuple(sorted({j.who for j in good})), tuple(errors), notes)
