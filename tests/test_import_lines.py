"""Every import is line by line: one hostile line among good ones is listed with its line number and every good
line is kept (`retrieval.lines`, the one reader they share).

The fuzz test is generated from IMPORTERS, and `test_every_import_command_is_fuzzed` holds that table to the
CLI's own command list: a new import command fails until it has an entry here.
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cligen import commands
from retrieval.ingest import load_file
from retrieval.lines import read_lines
from retrieval.judgments.exchange import COLUMNS, export_ratings, import_ratings
from retrieval.judgments.io import parse_jsonl, parse_qrels, parse_queries
from retrieval.judgments.model import Case, CaseQuery, Judgment
from retrieval.replay.logs import BadLine, LoggedQuery, parse_lines

CASE = Case("c", (CaseQuery("q1", "query one"),))


class FakeStore:
    """What `import_ratings` and `export_ratings` need of a JudgmentStore: the grades written, the case's grades."""

    def __init__(self, judgments: list[Judgment] = ()):
        self.added: list[Judgment] = []
        self.judgments = list(judgments)

    def add_judgments(self, js, scale, access=None):
        self.added += js
        return len(js)

    def case_judgments(self, case):
        return self.judgments


def _ingest(name: str) -> Callable[[bytes], tuple[list[str], list[int]]]:
    def run(data: bytes):
        rep = load_file(name, data)
        return [t.id if not name.endswith(".txt") else t.content for t in rep.traces], [e.line for e in rep.errors]
    return run


def _queries(data: bytes):
    texts, errs = parse_queries(data, "q.jsonl")
    return list(texts), [e.line for e in errs]


def _qrels(data: bytes):
    qrels, errs = parse_qrels(data, "graded", "qrels.trec")
    return [f"{q}:{d}" for q, r in qrels.items() for d in r], [e.line for e in errs]


def _case_jsonl(data: bytes):
    qs, _, errs = parse_jsonl(data, "graded", "case.jsonl")
    return [q.qid for q in qs], [e.line for e in errs]


def _judge(name: str):
    def run(data: bytes):
        fake = FakeStore()
        rep = import_ratings(fake, CASE, data, name)  # type: ignore[arg-type]
        return [j.trace_id for j in fake.added], [e.line for e in rep.errors]
    return run


def _log(data: bytes):
    out = list(parse_lines(io.BytesIO(data)))  # as `import-log` reads a file: binary lines
    return [x.query for x in out if isinstance(x, LoggedQuery)], [x.line for x in out if isinstance(x, BadLine)]


def _csv_line(values: list[str]) -> str:
    buf = io.StringIO()
    import csv
    csv.writer(buf, lineterminator="").writerow(values)
    return buf.getvalue()


def _rating(i: int, text: str) -> dict:
    return {"qid": "q1", "trace_id": f"t{i}", "rater": "alice", "grade": 2, "note": text,
            "updated_at": "2026-03-01T10:00:00+00:00"}


@dataclass(frozen=True)
class Importer:
    """One importer: a good line for item i holding free text, the key it is kept under, how it runs, and how its
    format is broken (kinds it has no way to express are left out)."""

    command: str
    name: str
    good: Callable[[int, str], str]
    key: Callable[[int, str], str]
    run: Callable[[bytes], tuple[list[str], list[int]]]
    header: str = ""
    sep: str = "\n"
    kinds: tuple[str, ...] = ("utf8", "nul", "deep", "u2028", "unclosed", "huge", "duplicate")
    huge: Callable[[int], str] = field(default=lambda i: "")
    deep_is_text: bool = False  # a plain-text paragraph of "[[[…" is text, not an attack


def _jsonl_huge(make: Callable[[int, str], str], key: str, value: str) -> Callable[[int], str]:
    return lambda i: make(i, "x")[:-1] + f', "{key}": {value}}}'


TRACE = lambda i, t: json.dumps({"id": f"t{i}", "text": f"trace {i} {t}"})
QUERY = lambda i, t: json.dumps({"_id": f"q{i}", "text": f"query {i} {t}"})
CASELINE = lambda i, t: json.dumps({"qid": f"q{i}", "query": f"query {i} {t}", "relevant": {f"t{i}": 2}})
LOGLINE = lambda i, t: json.dumps({"timestamp": "2026-03-01T12:00:00Z", "query": f"query {i} {t}",
                                   "results": [{"id": f"t{i}", "score": 0.9}]})
IMPORTERS = [
    Importer("ingest", "a.jsonl", TRACE, lambda i, t: f"t{i}", _ingest("a.jsonl"), kinds=(
        "utf8", "nul", "deep", "u2028", "unclosed", "huge"), huge=_jsonl_huge(TRACE, "created_at", "1e400")),
    Importer("ingest", "a.csv", lambda i, t: _csv_line([f"t{i}", f"trace {i} {t}"]), lambda i, t: f"t{i}",
             _ingest("a.csv"), header="id,content", kinds=("utf8", "nul", "deep", "u2028", "unclosed")),
    Importer("ingest", "a.txt", lambda i, t: f"trace {i} {t}", lambda i, t: f"trace {i} {t}".strip(), _ingest("a.txt"),
             sep="\n\n", kinds=("utf8", "nul", "deep", "u2028", "unclosed"), deep_is_text=True),
    Importer("case import", "queries.jsonl", QUERY, lambda i, t: f"q{i}", _queries,
             huge=lambda i: '{"_id": ' + "7" * 5000 + ', "text": "x"}'),
    Importer("case import", "qrels.trec", lambda i, t: f"q{i} 0 t{i} 2", lambda i, t: f"q{i}:t{i}", _qrels,
             kinds=("utf8", "nul", "deep", "huge", "duplicate"), huge=lambda i: f"q{i} 0 t{i} 1e400"),
    Importer("case import", "case.jsonl", CASELINE, lambda i, t: f"q{i}", _case_jsonl,
             huge=lambda i: json.dumps({"qid": f"q{i}", "query": "x"})[:-1] + ', "relevant": {"t": 1e400}}'),
    Importer("judge import", "r.jsonl", lambda i, t: json.dumps(_rating(i, t), ensure_ascii=False),
             lambda i, t: f"t{i}", _judge("r.jsonl"), kinds=("utf8", "nul", "deep", "u2028", "unclosed", "huge"),
             huge=lambda i: json.dumps({**_rating(i, "x"), "updated_at": 1e15})),
    Importer("judge import", "r.csv", lambda i, t: _csv_line([str(_rating(i, t).get(c, "")) for c in COLUMNS]),
             lambda i, t: f"t{i}", _judge("r.csv"), header=",".join(COLUMNS),
             kinds=("utf8", "nul", "deep", "u2028", "unclosed", "huge"),
             huge=lambda i: _csv_line([str({**_rating(i, "x"), "updated_at": "-1e12"}.get(c, "")) for c in COLUMNS])),
    Importer("import-log", "log.jsonl", LOGLINE, lambda i, t: f"query {i} {t}", _log,
             kinds=("utf8", "nul", "deep", "u2028", "unclosed", "huge"),
             huge=lambda i: LOGLINE(i, "x").replace('"2026-03-01T12:00:00Z"', "1e400")),
]
HOSTILE = 999


def hostile(imp: Importer, kind: str) -> tuple[bytes, bool, str | None]:
    """(the line's bytes, whether it must be rejected, the key it is kept under when it is text)."""
    if kind == "utf8":
        return imp.good(HOSTILE, "x").replace("999", "9\udcff9", 1).encode("utf-8", "surrogateescape"), True, None
    if kind == "nul":
        return imp.good(HOSTILE, "x").replace("999", "9\x009", 1).encode(), True, None
    if kind == "deep":
        text = "[" * 200_000
        return text.encode(), not imp.deep_is_text, text
    if kind == "u2028":  # a line separator inside a string is not a line break: the line is good
        t = "a\u2028b\x85c\x0cd"
        return imp.good(HOSTILE, t).encode(), False, imp.key(HOSTILE, t)
    if kind == "unclosed":
        line = imp.good(HOSTILE, "CUT")
        if imp.name.endswith(".csv"):  # a field that opens a quote and never closes it
            line = ",".join('"cut' if "CUT" in f else f for f in line.split(","))
        elif imp.name.endswith(".txt"):
            return b'"cut', False, '"cut'
        else:
            line = line[:line.index("CUT")] + "cut"  # a JSON string never closed
        return line.encode(), True, None
    if kind == "huge":
        return imp.huge(HOSTILE).encode(), True, None
    assert kind == "duplicate"  # the first good line again, with other text (qrels: another grade)
    line = imp.good(0, "other") if not imp.name.startswith("qrels") else "q0 0 t0 3"
    return line.encode(), True, None


CASES = [(imp, kind) for imp in IMPORTERS for kind in imp.kinds]


def test_every_import_command_is_fuzzed():
    importing = {c for c in commands() if "import" in c or "ingest" in c}
    assert importing == {imp.command for imp in IMPORTERS}
    assert {k for imp in IMPORTERS for k in imp.kinds} == {"utf8", "nul", "deep", "u2028", "unclosed", "huge",
                                                            "duplicate"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize("imp,kind", CASES, ids=[f"{i.command}:{i.name}:{k}" for i, k in CASES])
@given(data=st.data())
def test_one_hostile_line_is_listed_and_every_good_line_is_kept(imp, kind, data):
    n = data.draw(st.integers(1, 6), label="good lines")  # a file of one NUL line alone is binary, refused whole
    at = data.draw(st.integers(1 if kind == "duplicate" else 0, n), label="hostile at")
    words = data.draw(st.lists(st.text(st.characters(categories=("L", "N", "Zs")), max_size=8), min_size=n,
                               max_size=n), label="texts")
    items = [imp.good(i, w).encode() for i, w in enumerate(words)]
    bad, rejected, kept_as = hostile(imp, kind)
    items.insert(at, bad)
    sep = imp.sep.encode()
    head = (imp.header + "\n").encode() if imp.header else b""
    kept, errors = imp.run(head + sep.join(items) + b"\n")
    goods = [imp.key(i, w) for i, w in enumerate(words)]
    line = head.count(b"\n") + at * sep.count(b"\n") + 1
    if rejected:
        assert (kept, errors) == (goods, [line])
    else:
        assert (kept, errors) == (goods[:at] + [kept_as] + goods[at:], [])


# ---------------------------------------------------------------- judge: export then import gives the same rows

RATERS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,20}", fullmatch=True).filter(
    lambda r: r not in ("machine", "implicit", "local"))
NOTES = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(RATERS, NOTES, st.sampled_from([0, 1, 2, 3])), min_size=1, max_size=5,
                     unique_by=lambda r: r[0]), fmt=st.sampled_from(["jsonl", "csv"]),
       line_breaks=st.sampled_from(["\u2028", "\x85", "\r", "\r\n", "\x0b\x0c\x1c\x1d\x1e", ""]))
def test_judge_export_then_import_gives_the_same_rows(rows, fmt, line_breaks):
    js = [Judgment(None, "query one", "t1", g, "human", "import", 1_772_359_200.0, r, "", f"{note}{line_breaks}x",
                   "", 1_772_359_100.0) for r, note, g in rows]
    text = export_ratings(FakeStore(js), CASE, fmt)  # type: ignore[arg-type]
    back = FakeStore()
    rep = import_ratings(back, CASE, text.encode(), f"ratings.{fmt}")  # type: ignore[arg-type]
    assert rep.errors == ()

    def view(j: Judgment) -> tuple:
        return j.who, j.trace_id, j.grade, j.note, j.updated_at, j.created_at
    assert sorted(map(view, back.added)) == sorted(map(view, js))


@pytest.mark.parametrize("field,value", [("updated_at", 1e15), ("created_at", -1e12), ("updated_at", "Infinity"),
                                         ("created_at", float("nan")), ("updated_at", "+10000-01-01")])
def test_judge_import_rejects_an_absurd_time_naming_the_field_and_the_range(field, value):
    good = json.dumps(_rating(1, "ok"))
    bad = json.dumps({**_rating(2, "x"), field: value}).replace('"Infinity"', "Infinity")
    fake = FakeStore()
    rep = import_ratings(fake, CASE, f"{good}\n{bad}\n", "r.jsonl")  # type: ignore[arg-type]
    assert [j.trace_id for j in fake.added] == ["t1"]
    (err,) = rep.errors
    assert err.line == 2 and f"field '{field}'" in err.reason and "1678-01-01 .. 2262-04-11" in err.reason


def test_a_utf16_file_is_refused_as_a_whole_naming_the_fix():
    with pytest.raises(ValueError, match="not UTF-8 text: it starts with a UTF-16 byte-order mark; re-save"):
        read_lines("id\n".encode("utf-16"), "a.csv")


# ---------------------------------------------------------------- on the command line: file and line named

@pytest.fixture(scope="module")
def gate_store(tmp_path_factory):
    from cligen import build_store

    return build_store(tmp_path_factory.mktemp("imports"))


@pytest.mark.parametrize("command", sorted(c for c in commands() if "import" in c or "ingest" in c))
def test_each_import_command_names_the_file_and_line_of_a_bad_line_and_keeps_the_rest(command, gate_store,
                                                                                      tmp_path):
    from cligen import PARSER, copy_store, leaves, run, sample_argv

    base, files = gate_store
    db = copy_store(base, tmp_path / "db")
    argv = sample_argv(command, dict(leaves(PARSER))[command], db, files)
    source = next(Path(a) for a in argv if Path(a).is_file())
    mine = tmp_path / source.name
    mine.write_bytes(b'{"text": "caf\xe9"}\n' + source.read_bytes())  # a Latin-1 line, then the sample's good one
    got = run([str(mine) if a == str(source) else a for a in argv])
    assert got.rc == 0, got.err
    assert f"{mine.name} line 1: not UTF-8 text (byte 14 of the line is 0xe9)" in got.err
