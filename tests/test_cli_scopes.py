"""A visitor limited to some scopes learns nothing from the CLI's read commands about other scopes, generated from
the command table (`retrieval/cli/gate.py` COMMANDS, `tests/cligen.py`): every command that reads (with its sample
command line, or with `--dry-run` where that makes a write a read) is run as a visitor limited to `user:maya` on S
and on S′ — S with other scopes' traces, cases and grades changed or added (the same number of commits, so the
same versions) — naming the visitor's case, a case of every scope (`demo`), and a case only S′ holds, and the
output must be identical (non-interference): a hidden case is told exactly as an unknown one. A new command is
covered with no edit here."""
from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cligen import build_store, commands, run, sample_argv
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
    """S′ only: a case of priya's with a grade, and another grade of priya's in the shared `demo` case."""
    from retrieval.judgments import JudgmentStore
    from retrieval.types import Scope

    js = JudgmentStore(str(db))
    priya = Scope("user", "priya")
    js.add_to_case(HIDDEN_ONLY_IN_S1, "where is my lens?", priya)
    js.set_grade(priya, "where is my lens?", "priya-extra-1", 3)
    q = next(q for q in js.case("demo").queries if q.scope == priya)
    js.set_grade(priya, q.query, "priya-extra-0", 2)


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


def _snapshots(db: Path) -> list[str]:
    from retrieval.judgments import JudgmentStore

    js = JudgmentStore(str(db))
    return [js.snapshots("gate-tiny")[0].id, js.snapshots("demo")[0].id]


def test_the_read_commands_are_found_from_the_command_table():
    assert {"status", "case list", "case export", "snapshot list", "snapshot diff", "judge export",
            "judge agreement", "doctor", "query"} <= set(READS)


@pytest.mark.parametrize("name", sorted(READS))
def test_every_read_command_tells_a_limited_visitor_the_same_whatever_other_scopes_hold(stores, maya, name):
    root, dbs, files = stores
    for argv in _variants(READS[name], Path("DB"), files, _snapshots(dbs["S"])):
        a, b = _said(argv, stores).values()
        assert a == b, f"{' '.join(argv)}\n--- S\n{a[:3000]}\n--- S′\n{b[:3000]}"


@pytest.mark.parametrize("name", sorted(READS))
def test_a_limited_visitors_output_never_names_another_scope(stores, maya, name):
    root, dbs, files = stores
    for argv in _variants(READS[name], Path("DB"), files, _snapshots(dbs["S"])):
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
