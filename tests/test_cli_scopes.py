"""A visitor limited to some scopes learns nothing from the CLI's read commands about other scopes, generated from
the command table (`retrieval/cli/gate.py` COMMANDS, `tests/cligen.py`): every command that reads (with its sample
command line, or with `--dry-run` where that makes a write a read) is run as a visitor limited to `user:maya` on S
and on S′ — S with other scopes' traces, cases and grades changed or added (the same number of commits, so the
same versions) — naming the visitor's case, a case of every scope (`demo`), and a case only S′ holds, and the
output must be identical (non-interference): a hidden case is told exactly as an unknown one. S′ also holds a snapshot
of the visitor's own case that ran a query of priya's: hidden too (a snapshot is decided on what it ran). Every write
command whose sample names a case or snapshot is run naming priya's case or that snapshot, on copies of S and S′:
told as an unknown name, nothing written. A new command is covered with no edit here.

Not hidden, by design: version numbers, tags and commit times (`status`, `tag --list`) are the store's, one table for
every scope, and written only by writers of every scope (`tag` is store-wide in the gate); S and S′ have the same
versions. A case name another scope's case holds cannot be taken (the one leak a shared name space leaves; tested)."""
from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cligen import build_store, commands, run, sample_argv, tree_hash
from nonint import normalise
from retrieval.cli.gate import COMMANDS
from retrieval.cli.main import build_parser

POLICY = '[users."maya@example.com"]\nscopes = ["user:maya"]\nwrite = true\n'
OTHERS = ("user:priya", "user:tomas", "priya-", "tomas-")  # what a maya-only output never names
HIDDEN_ONLY_IN_S1 = "hidden-only"  # a case only S′ holds
T0 = datetime.now(UTC)  # commit and save times after this are this run's (`nonint.normalise`)
ENV_KEYS = ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_USER", "RETRIEVAL_ALLOW_GRADING",
            "RETRIEVAL_AUTH_HEADER", "RETRIEVAL_DB", "RETRIEVAL_TRACEBACK")


def _priya(db: Path, n: int, words: str) -> None:
    """One commit of priya's notes (S: one; S′: two, other words): the versions stay equal, the data differs."""
    from retrieval.models import HashingEmbedder
    from retrieval.types import MemoryTrace
    from retrieval.workspace import Workspace

    Workspace(str(db), embedder=HashingEmbedder(384)).ingest(
        [MemoryTrace(id=f"priya-extra-{i}", scope="user", scope_id="priya", content=f"{words} {i}")
         for i in range(n)], extract_facts=False)


def _other_judgments(db: Path) -> None:
    """S′ only: a case of priya's with a grade and a combination policy, another grade of priya's in the shared
    `demo` case, and a snapshot of the visitor's case `gate-tiny` that ran a query of priya's (the case held it
    then): a snapshot is the visitor's only when every query it ran is, whatever its case is called today."""
    from dataclasses import replace

    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.raters import CasePolicy
    from retrieval.judgments.snapshots import new_snapshot_id
    from retrieval.types import Scope

    js = JudgmentStore(str(db))
    priya = Scope("user", "priya")
    js.add_to_case(HIDDEN_ONLY_IN_S1, "where is my lens?", priya)
    js.set_grade(priya, "where is my lens?", "priya-extra-1", 3)
    js.set_policy(HIDDEN_ONLY_IN_S1, CasePolicy("majority", "", 5))
    q = next(q for q in js.case("demo").queries if q.scope == priya)
    js.set_grade(priya, q.query, "priya-extra-0", 2)
    mine = js.snapshots("gate-tiny")[0]
    theirs = replace(mine.queries[0], qid="p1", query="where is my lens?", scope=priya)
    js.save_snapshot(replace(mine, id=new_snapshot_id(), label="ran priya's query", queries=(*mine.queries, theirs)))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("scopes")
    base, files = build_store(root)
    s, s1 = root / "S", root / "S1"
    shutil.copytree(base, s)
    shutil.copytree(base, s1)
    _priya(s, 1, "a note about the bakery")
    _priya(s1, 2, "the lens repair ticket")
    _other_judgments(s1)
    (root / "policy.toml").write_text(POLICY)
    return root, {"S": s, "S'": s1}, files


@pytest.fixture
def maya(monkeypatch, stores):
    root = stores[0]
    for k in ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RETRIEVAL_AUTH", "proxy")
    monkeypatch.setenv("RETRIEVAL_POLICY", str(root / "policy.toml"))
    monkeypatch.setenv("RETRIEVAL_USER", "maya@example.com")
    return monkeypatch


def _reads() -> dict[str, list[str]]:
    """Every read command line the sample table gives (a write with `--dry-run` counts: it then reads)."""
    from cligen import Files

    dummy = Files(*(Path("/x") for _ in range(4)), "SNAP", Path("/x"))
    out = {}
    for name, parser in commands().items():
        argv = sample_argv(name, parser, Path("DB"), dummy)
        flags = {s for a in parser._actions for s in a.option_strings}
        if COMMANDS[name].write(build_parser().parse_args(argv)) and "--dry-run" in flags:
            argv += ["--dry-run"]
        if not COMMANDS[name].write(build_parser().parse_args(argv)):
            out[name] = argv
    return out


READS = _reads()


def _variants(argv: list[str], db: Path, files, snapshots: list[str]) -> list[list[str]]:
    """`argv` naming each case and snapshot in turn: the visitor's (`gate-tiny`), one of every scope (`demo`), one
    only S′ holds; the visitor's snapshot and a `demo` snapshot."""
    out = []
    for case in ("gate-tiny", "demo", HIDDEN_ONLY_IN_S1):
        for snap in snapshots:
            v = [case if tok == "demo" and prev != "--dataset" else snap if tok == "SNAP" else tok
                 for prev, tok in zip(["", *argv], argv)]
            v = [str(db) if tok == "DB" else str(files.out) if tok == "/x" else tok for tok in v]
            if v not in out:
                out.append(v)
    return out


def _said(argv: list[str], stores_) -> dict[str, str]:
    root, dbs, files = stores_
    said = {}
    for which, db in dbs.items():
        shutil.rmtree(files.out, ignore_errors=True)
        r = run([str(db) if a == "DB" else a for a in argv])
        written = "".join(f"\n== {p.name}\n{p.read_text()}" for p in sorted(files.out.rglob("*")) if p.is_file()) \
            if files.out.exists() else ""
        said[which] = normalise(f"rc {r.rc}\n{r.out}\n{r.err}{written}", (T0, datetime.now(UTC)), (str(db),))
    return said


def _snapshots(dbs: dict[str, Path]) -> list[str]:
    """The visitor's snapshot, a `demo` snapshot, and the snapshot only S′ holds (of `gate-tiny`, with a query of
    priya's)."""
    from retrieval.judgments import JudgmentStore

    js, js1 = JudgmentStore(str(dbs["S"])), JudgmentStore(str(dbs["S'"]))
    only_s1 = [s.id for s in js1.snapshots("gate-tiny") if s.label == "ran priya's query"]
    return [js.snapshots("gate-tiny")[0].id, js.snapshots("demo")[0].id, *only_s1]


def _writes_naming_a_hidden_thing() -> dict[str, list[list[str]]]:
    """Every write command line the sample table gives that names a case or a snapshot, with that name turned into
    the case only S′ holds (priya's) or the snapshot only S′ holds: on S it does not exist, on S′ it is hidden."""
    from cligen import Files

    dummy = Files(*(Path("/x") for _ in range(4)), "SNAP", Path("/x"))
    out: dict[str, list[list[str]]] = {}
    for name, parser in commands().items():
        argv = sample_argv(name, parser, Path("DB"), dummy)
        if name in READS:
            continue
        for hidden, names in ((HIDDEN_ONLY_IN_S1, ("demo", "gate-tiny")), ("HIDDEN_SNAP", ("SNAP",))):
            v = [hidden if tok in names and prev != "--dataset" else tok for prev, tok in zip(["", *argv], argv)]
            if v != argv:
                out.setdefault(name, []).append(v)
    return out


WRITES = _writes_naming_a_hidden_thing()


def test_the_read_commands_are_found_from_the_command_table():
    assert {"status", "case list", "case export", "snapshot list", "snapshot diff", "judge export",
            "judge agreement", "doctor", "query"} <= set(READS)


@pytest.mark.parametrize("name", sorted(READS))
def test_every_read_command_tells_a_limited_visitor_the_same_whatever_other_scopes_hold(stores, maya, name):
    root, dbs, files = stores
    for argv in _variants(READS[name], Path("DB"), files, _snapshots(dbs)):
        a, b = _said(argv, stores).values()
        assert a == b, f"{' '.join(argv)}\n--- S\n{a[:3000]}\n--- S′\n{b[:3000]}"


@pytest.mark.parametrize("name", sorted(READS))
def test_a_limited_visitors_output_never_names_another_scope(stores, maya, name):
    root, dbs, files = stores
    for argv in _variants(READS[name], Path("DB"), files, _snapshots(dbs)):
        said = _said(argv, stores)["S'"]
        named = [o for o in OTHERS if o in said]
        assert not named, f"{' '.join(argv)} names {named}:\n{said[:4000]}"


def test_the_comparison_can_fail_the_operator_sees_other_scopes(stores, monkeypatch):
    """Not vacuous: without sign-in the same command lines tell S and S′ apart and name priya."""
    for k in ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    root, dbs, files = stores
    said = _said(["case", "list", "--db", "DB"], stores)
    assert said["S"] != said["S'"] and HIDDEN_ONLY_IN_S1 in said["S'"]
    status = json.loads(_said(["status", "--db", "DB"], stores)["S'"].split("\n", 1)[1].rsplit("}", 1)[0] + "}")
    assert "user:priya" in status["scopes"]


def test_a_hidden_case_is_told_exactly_as_an_unknown_one(stores, maya):
    root, dbs, files = stores
    hidden = run(["case", "export", "demo", "--out", str(files.out), "--db", str(dbs["S'"])])
    unknown = run(["case", "export", "no-such", "--out", str(files.out), "--db", str(dbs["S'"])])
    assert hidden.rc == unknown.rc == 2
    assert hidden.error_lines == [unknown.error_lines[0].replace("'no-such'", "'demo'")]
    assert "known: gate-tiny " in hidden.error_lines[0]


def test_the_writes_naming_a_case_or_snapshot_are_found_from_the_command_table():
    assert {"judge policy", "judge import", "snapshot run", "snapshot grade"} <= set(WRITES)


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_naming_another_scopes_case_or_snapshot_is_told_as_naming_an_unknown_one(stores, maya, tmp_path,
                                                                                         name):
    """A write is no oracle either: naming priya's case (or a snapshot that ran her query) answers exactly as naming
    a case that does not exist, and writes nothing. Each run gets its own copy of S and of S′ (a write that were let
    through would change them)."""
    root, dbs, files = stores
    hidden_snap = _snapshots(dbs)[-1]
    for n, argv in enumerate(WRITES[name]):
        copies = {k: shutil.copytree(db, tmp_path / f"{n}-{k}") for k, db in dbs.items()}
        said = {}
        for which, db in copies.items():
            before = tree_hash(db)
            r = run([str(db) if a == "DB" else str(files.out) if a == "/x" else hidden_snap if a == "HIDDEN_SNAP"
                     else a for a in argv])
            said[which] = normalise(f"rc {r.rc}\n{r.out}\n{r.err}", (T0, datetime.now(UTC)), (str(db),))
            assert r.rc != 0 and tree_hash(db) == before, f"{' '.join(argv)} on {which}: {said[which][:2000]}"
        a, b = said.values()
        assert a == b, f"{' '.join(argv)}\n--- S\n{a[:3000]}\n--- S′\n{b[:3000]}"


def _on_copies(stores_, tmp_path: Path, argv: list[str]) -> dict[str, str]:
    """`argv` run on a fresh copy of S and of S′ (`DB` standing for the copy): what each said."""
    said = {}
    for which, db in stores_[1].items():
        copy = shutil.copytree(db, tmp_path / which)
        r = run([str(copy) if a == "DB" else a for a in argv])
        said[which] = normalise(f"rc {r.rc}\n{r.out}\n{r.err}", (T0, datetime.now(UTC)), (str(copy),))
    return said


IMPORTS = {  # every import that checks graded ids against the store: its command and one line of its file
    "judge import": (["judge", "import", "gate-tiny"], {"qid": "g1", "scope": "user:maya", "query": "kayak",
                                                        "trace_id": "priya-extra-1", "grade": 2, "rater": "local"}),
    "case import": (["case", "import", "gate-new", "--jsonl"], {"qid": "g1", "query": "kayak", "scope": "user:maya",
                                                                "relevant": {"priya-extra-1": 2}}),
}


@pytest.mark.parametrize("command", sorted(IMPORTS))
def test_importing_a_grade_of_another_scopes_trace_is_told_as_of_an_unknown_trace(stores, maya, tmp_path, command):
    """An import checks the graded ids against the store: a trace of priya's (only S′ holds `priya-extra-1`) is
    "not in the store" to maya, as an id no store holds, and her grade of it is not kept on either."""
    args, line = IMPORTS[command]
    grades = tmp_path / "grades.jsonl"
    grades.write_text(json.dumps(line) + "\n")
    said = _on_copies(stores, tmp_path, [*args, str(grades), "--db", "DB"])
    a, b = said.values()
    assert a == b, f"--- S\n{a}\n--- S′\n{b}"
    assert "priya-extra-1" in b and ("is not in the store; skipped" in b or "are not in" in b)


def test_creating_a_case_under_another_scopes_case_name_is_refused_without_naming_it(stores, maya, tmp_path):
    """A shared name space cannot hide that a name is taken (a free name succeeds), so the refusal is the one leak
    left and says no more: no scope, no query, and nothing added to priya's case."""
    from retrieval.judgments import JudgmentStore

    root, dbs, files = stores
    said = _on_copies(stores, tmp_path, ["case", "import", HIDDEN_ONLY_IN_S1, "--jsonl", str(files.case),
                                         "--db", "DB"])
    assert said["S"].startswith("rc 0"), said["S"]
    assert said["S'"].startswith("rc 2") and f"the case name {HIDDEN_ONLY_IN_S1!r} cannot be used" in said["S'"]
    assert not [o for o in OTHERS if o in said["S'"]], said["S'"]
    assert [q.query for q in JudgmentStore(str(tmp_path / "S'")).case(HIDDEN_ONLY_IN_S1).queries] \
        == ["where is my lens?"]
