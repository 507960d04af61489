"""Import and export cases: BEIR queries.jsonl + TREC or BEIR qrels, and JSONL (data/demo/judgments.jsonl).

Lenient like the trace loaders: a bad line is reported with its number and reason and the good
lines are kept. Judged ids missing from the store and qrels queries missing from the queries file
are listed and skipped (a grade on a trace that is not there could never be shown or regraded).

Exports come in two kinds. Machine formats (`export_case`: BEIR queries.jsonl and qrels/test.tsv, TREC
qrels.trec, the case JSONL) are byte-exact: ids and queries are written as stored, so evaluation tools and a
re-import read exactly what was graded. Spreadsheet exports (`spreadsheet_csv`, the app's CSV downloads) are
neutralised: a cell a spreadsheet would run as a formula starts with a quote (`spreadsheet_cell`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import contextlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Sequence

from retrieval.lines import json_value, read_lines
from retrieval.types import Scope
from retrieval.judgments.model import (Case, CaseQuery, Judgment, LabelledQuery, check_case_name, check_grade,
                                       parse_scope, scope_text)
from retrieval.judgments.cells import (FORMULA_START, formula_like, spreadsheet_cell, spreadsheet_csv,  # noqa: F401
                                       trec_line, unquote_cell)
from retrieval.judgments.identity import writer
from retrieval.judgments.store import JudgmentStore, check_grading

if TYPE_CHECKING:
    from retrieval.access import Access

MAX_LINE = 100_000  # characters; a longer line is not a qrels or query line


@dataclass(frozen=True)
class LineError:
    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.reason}"


@dataclass(frozen=True)
class ImportReport:
    case: str
    queries: int  # queries in the case after the import
    judgments: int  # grades written
    errors: tuple[LineError, ...] = ()
    unknown_ids: tuple[str, ...] = ()  # judged trace ids not in the store (skipped)
    unknown_queries: tuple[str, ...] = ()  # qrels query ids without a query text (skipped)

    def to_dict(self) -> dict:
        return {"case": self.case, "queries": self.queries, "judgments": self.judgments,
                "errors": [str(e) for e in self.errors], "unknown_ids": list(self.unknown_ids),
                "unknown_queries": list(self.unknown_queries)}


def _lines(data: bytes | str, name: str) -> Iterator[tuple[int, str] | LineError]:
    """(line number, text) per non-blank line, or the `LineError` of a line that is not text (`retrieval.lines`:
    split on \\n only, decoded line by line)."""
    for line in read_lines(data, name):
        if line.text is None:
            yield LineError(name, line.n, line.error)
        elif line.text.strip():
            yield line.n, line.text


def parse_qrels(data: bytes | str, scale: str = "graded",
                name: str = "qrels") -> tuple[dict[str, dict[str, int]], list[LineError]]:
    """TREC (`qid 0 docid grade`, whitespace) or BEIR (`query-id<TAB>corpus-id<TAB>score`, header
    optional), told apart per line by the column count. Returns ({qid: {doc id: grade}}, errors).
    A pair graded again with the same grade is harmless; with another grade it is that line's error."""
    qrels: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], int] = {}
    errors: list[LineError] = []
    for got in _lines(data, name):
        if isinstance(got, LineError):
            errors.append(got)
            continue
        n, line = got
        if line.lstrip().startswith("#"):
            continue
        try:
            qid, doc, grade = _qrels_columns(line, scale)
        except ValueError as exc:
            errors.append(LineError(name, n, str(exc)))
            continue
        if qid is None:
            continue
        before = qrels.setdefault(qid, {}).setdefault(doc, grade)
        if before != grade:
            errors.append(LineError(name, n, f"query {qid!r}, document {doc!r} is graded {before} on line "
                                             f"{first[qid, doc]} and {grade} here; keep one of the two lines"))
        first.setdefault((qid, doc), n)
    return qrels, errors


def _qrels_columns(line: str, scale: str) -> tuple[str | None, str, int]:
    """(qid, doc id, grade) of one qrels line, (None, "", 0) for BEIR's header; ValueError naming the fault."""
    if len(line) > MAX_LINE:
        raise ValueError(f"line is longer than {MAX_LINE} characters")
    cols = [c.strip() for c in (line.split("\t") if "\t" in line else line.split())]
    if len(cols) == 3 and cols[0] == "query-id":
        return None, "", 0
    if len(cols) == 4:
        qid, doc, grade = cols[0], cols[2], cols[3]
    elif len(cols) == 3:
        qid, doc, grade = cols
    else:
        raise ValueError(f"has {len(cols)} column(s); expected TREC `qid 0 docid grade` "
                         "or BEIR `query-id<TAB>corpus-id<TAB>score`")
    if not qid or not doc:
        raise ValueError("empty query id or document id")
    return qid, doc, check_grade(grade, scale)


def parse_queries(data: bytes | str, name: str = "queries.jsonl") -> tuple[dict[str, str], list[LineError]]:
    """BEIR queries.jsonl ({"_id", "text"}) → ({qid: text}, errors); a query id seen before is that line's error
    (it would move the first query's grades to the second text)."""
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    errors: list[LineError] = []
    for got in _lines(data, name):
        if isinstance(got, LineError):
            errors.append(got)
            continue
        n, line = got
        try:
            r = json_value(line)
            qid, text = str(r["_id"]), r["text"]
            if not isinstance(text, str) or not text.strip() or r["_id"] is None or not qid.strip():
                raise ValueError
        except (ValueError, KeyError, TypeError, RecursionError):
            errors.append(LineError(name, n, 'not a BEIR query: expected {"_id": ..., "text": "..."}'))
            continue
        if qid in first:
            errors.append(LineError(name, n, f"duplicate query id {qid!r}, first on line {first[qid]}; "
                                             "give each query its own id"))
            continue
        first[qid] = n
        out[qid] = text.strip()
    return out, errors


def refuse_bad_lines(errors: Sequence[LineError]) -> None:
    """Evaluation's policy on the same parsers: a file with a bad line is refused, naming the first (a case import
    reports bad lines and keeps the rest)."""
    if errors:
        raise ValueError(f"{errors[0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))


LINE_HELP = ('each line needs qid, query and relevant (e.g. {"qid": "q1", "query": "…", "scope": "user:u1", '
             '"relevant": {"trace-id": 2}})')


def evaluation_grade(grade: object) -> float:
    """A grade as evaluation reads it: any finite number >= 0 (TREC's 0–4, a mean 2.5), not only a case's scale."""
    if isinstance(grade, str):
        with contextlib.suppress(ValueError):
            grade = float(grade.strip())
    if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade) or grade < 0:
        raise ValueError(f"grade {grade!r} must be a finite number >= 0")
    return float(grade)


def judgment_line(line: str, scale: str | None = "graded",
                  need_relevant: bool = False) -> tuple[CaseQuery, dict[str, float], str | None]:
    """One judgments JSONL line {"qid", "query", "scope"?, "relevant": {id: grade}, "note"?, "phenomenon"?} →
    (query, its grades, its phenomenon); ValueError naming the field at fault. Grades are checked against a case's
    `scale`, or with `scale=None` (evaluation) as any finite number >= 0; `need_relevant` (evaluation) wants a
    `relevant` object on every line."""
    r = json_value(line)
    if not isinstance(r, dict):
        raise ValueError("the line is not a JSON object")
    missing = [k for k in ("qid", "query", "relevant") if k not in r and (k != "relevant" or need_relevant)]
    if missing:
        raise ValueError(f"missing field {', '.join(repr(m) for m in missing)}")
    q = CaseQuery(str(r["qid"]), str(r["query"]).strip(), parse_scope(r.get("scope")), str(r.get("note") or ""))
    if not q.query:
        raise ValueError("empty query")
    rel = {} if r.get("relevant") is None and not need_relevant else r["relevant"]
    if not isinstance(rel, dict):
        raise ValueError("'relevant' must be an object of trace id → grade")
    check = evaluation_grade if scale is None else (lambda g: float(check_grade(g, scale)))
    phenomenon = r.get("phenomenon")
    return q, {str(t): check(g) for t, g in rel.items()}, None if phenomenon is None else str(phenomenon)


def _judgment_lines(data: bytes | str, scale: str | None, name: str, need_relevant: bool = False):
    """(line number, (query, grades, phenomenon)) or (line number, LineError) for each non-blank line."""
    for got in _lines(data, name):
        if isinstance(got, LineError):
            yield got.line, got
            continue
        n, line = got
        try:
            yield n, judgment_line(line, scale, need_relevant)
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            yield n, LineError(name, n, f"{exc}; {LINE_HELP}")


def parse_jsonl(data: bytes | str, scale: str = "graded",
                name: str = "judgments.jsonl") -> tuple[list[CaseQuery], dict[str, dict[str, int]], list[LineError]]:
    """Judgments JSONL → (queries, qrels, errors): a case import keeps the good lines (a query without grades too)."""
    queries: list[CaseQuery] = []
    qrels: dict[str, dict[str, int]] = {}
    errors: list[LineError] = []
    first: dict[str, int] = {}
    for n, parsed in _judgment_lines(data, scale, name):
        if isinstance(parsed, LineError):
            errors.append(parsed)
            continue
        q, grades, _ = parsed
        if q.qid in first:
            errors.append(LineError(name, n, f"duplicate query id {q.qid!r}, first on line {first[q.qid]}; "
                                             "give each query its own id"))
            continue
        first[q.qid] = n
        queries.append(q)
        if grades:
            qrels[q.qid] = {t: int(g) for t, g in grades.items()}  # on the case's scale: whole numbers
    return queries, qrels, errors


def parse_labelled(data: bytes | str, name: str = "judgments.jsonl") -> list[LabelledQuery]:
    """The same JSONL as labelled queries for evaluation, which refuses a file with a bad line (naming `name` and
    the line, never a temporary path), needs a `relevant` object on every line and takes any grade >= 0."""
    out = []
    for n, parsed in _judgment_lines(data, None, name, need_relevant=True):
        if isinstance(parsed, LineError):
            raise ValueError(f"{name}, line {n}: {parsed.reason}")
        q, grades, phenomenon = parsed
        out.append(LabelledQuery(q.qid, q.query, grades, q.scope, phenomenon, q.note))
    return out


def import_case(js: JudgmentStore, name: str, queries: list[CaseQuery], qrels: dict[str, dict[str, int]],
                known_ids: Callable[[list[str]], Iterable[str]] | None = None, scale: str = "graded",
                errors: Iterable[LineError] = (), source: str = "import", replace: bool = False,
                keep_unjudged: bool = False, access: Access | None = None, rater: str = "") -> ImportReport:
    """Write a case and its human grades. `known_ids(ids)` returns those in the store (None: trust all);
    a caller serving a limited visitor passes only the ids that visitor may see.

    With qrels, only judged queries are kept unless `keep_unjudged` (BEIR queries files hold every split).
    The grades are written first and the case last, so a crash in between leaves no case without its
    grades (the orphaned grades are harmless and a re-import completes it). `access` must be allowed
    to grade in every scope the case names, else nothing is written. The grades are stored under who imports
    (`identity.writer`: the sign-in, else `rater`, else `local`).
    """
    check_case_name(name)
    by_qid = {q.qid: q for q in queries}
    unknown_queries = tuple(sorted(q for q in qrels if q not in by_qid))
    if qrels and not keep_unjudged:
        queries = [q for q in queries if q.qid in qrels]
    all_ids = sorted({t for q in queries for t in qrels.get(q.qid, {})})
    known = set(known_ids(all_ids)) if known_ids else set(all_ids)
    unknown_ids = tuple(t for t in all_ids if t not in known)
    if not queries:
        raise ValueError(f"nothing to import into case {name!r}: no query with a judgment "
                         f"({len(unknown_queries)} qrels query id(s) have no text in the queries file); "
                         "are the two files from the same dataset?")
    check_grading(access, [q.scope for q in queries])
    who = writer(access, rater)  # the grades are the importer's (`identity`)
    n = js.add_judgments([Judgment(q.scope, q.query, t, g, "human", source, rater=who) for q in queries
                          for t, g in qrels.get(q.qid, {}).items() if t in known], scale, access=access)
    case = js.save_case(Case(name, tuple(queries), scale), replace=replace, access=access)
    return ImportReport(name, len(case.queries), n, tuple(errors), unknown_ids, unknown_queries)


Source = str | Path | tuple[str, bytes]  # a path, or an upload as (its file name, its bytes)


def _read(source: Source) -> tuple[str, bytes]:
    if isinstance(source, tuple):
        return source
    return Path(source).name, Path(source).read_bytes()


def import_files(js: JudgmentStore, name: str, *, queries: Source | None = None, qrels: Source | None = None,
                 jsonl: Source | None = None, scope: Scope | None = None, scale: str = "graded",
                 known_ids=None, replace: bool = False, access: Access | None = None) -> ImportReport:
    """A case from files or uploads (the CLI's `case import`, the Snapshots page): BEIR queries + qrels (in
    `scope`), or one JSONL file (its lines carry their scope; its queries without grades are kept)."""
    check_case_name(name)
    if jsonl is not None:
        if queries is not None or qrels is not None:
            raise ValueError("give either --jsonl or --queries with --qrels, not both")
        file, data = _read(jsonl)
        qs, graded, errs = parse_jsonl(data, scale, file)
        return import_case(js, name, qs, graded, known_ids, scale, errs, f"import:{file}", replace,
                           keep_unjudged=True, access=access)
    if queries is None:
        raise ValueError("give --queries FILE (BEIR queries.jsonl) with --qrels FILE, or --jsonl FILE")
    file, data = _read(queries)
    texts, errs = parse_queries(data, file)
    qr: dict[str, dict[str, int]] = {}  # qid -> {trace id: grade}
    if qrels is not None:
        file, data = _read(qrels)
        qr, qerrs = parse_qrels(data, scale, file)
        errs += qerrs
    qs = [CaseQuery(q, t, scope) for q, t in texts.items()]
    return import_case(js, name, qs, qr, known_ids, scale, errs, f"import:{file}", replace, access=access)


def export_case(js: JudgmentStore, name: str, out: str | Path) -> list[Path]:
    """Write queries.jsonl, qrels/test.tsv (BEIR), qrels.trec (TREC) and NAME.jsonl into `out`.

    The grades the case's policy combines (every rater's, apart: `exchange`). BEIR files carry no scope: the JSONL
    does (re-import it to keep scopes).
    Every file is byte-exact — ids and query texts as stored, nothing neutralised — because they are machine
    formats read by BEIR, trec_eval / ir-measures and `case import`: a quote put before an id starting with
    "-" or "=" would make it another id. These files are not meant for a spreadsheet; for one, use
    `spreadsheet_csv`, which neutralises formula cells."""
    case = js.case(name)
    qrels = js.qrels(case)
    out = Path(out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    paths = [out / "queries.jsonl", out / "qrels" / "test.tsv", out / "qrels.trec", out / f"{name}.jsonl"]
    paths[0].write_text("".join(json.dumps({"_id": q.qid, "text": q.query}) + "\n" for q in case.queries))
    trec = "".join(trec_line(q, t, g) for q, r in qrels.items() for t, g in r.items())  # refused before writing
    paths[1].write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{t}\t{g}\n" for q, r in qrels.items() for t, g in r.items()))
    paths[2].write_text(trec)
    paths[3].write_text("".join(json.dumps({"qid": q.qid, "query": q.query, "scope": scope_text(q.scope) or None,
                                            "relevant": qrels.get(q.qid, {}), **({"note": q.note} if q.note else {})})
                                + "\n" for q in case.queries))
    return paths


def ensure_demo_case(uri: str, path: str | Path, name: str = "demo") -> ImportReport | None:
    """Ship the demo judgments as case `name` (once: an existing case is left as it is)."""
    js = JudgmentStore(uri)
    if js.find_case(name) is not None:
        return None
    qs, qr, errs = parse_jsonl(Path(path).read_bytes(), "graded", Path(path).name)
    if errs:
        raise ValueError(f"demo judgments have bad lines: {[str(e) for e in errs[:3]]}")
    return import_case(js, name, qs, qr, None, "graded", (), "demo", keep_unjudged=True,
                       rater="human")  # shipped grades: the rater of grades made before raters had names


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def suggest_case_name(text: str) -> str:
    """A valid case name from a file name ("my queries.jsonl" -> "my-queries")."""
    base = _SAFE.sub("-", Path(text).stem).strip("-_.")[:64]
    return base or "case"
