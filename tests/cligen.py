"""Shared by the generated CLI tests: every command and sub-command read from `build_parser()` itself, a sample
command line for each (so a refusal is the gate's, not a usage error), a small demo store built once with the
hashing embedder, and an in-process run of `main(argv)` that captures stdout, stderr and the exit code."""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from demostore import copy_demo
from retrieval.cli.gate import leaves
from retrieval.cli.main import build_parser, main

EMBEDDER = ["--embedder", "hashing"]


PARSER = build_parser()  # once per test process (25-120 ms a build: argparse's formatters); parsing never changes it


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every leaf command of the CLI, by its full name ("case import")."""
    return dict(leaves(PARSER))


def write_commands() -> list[str]:
    """The commands whose sample command line `retrieval/cli/gate.py` COMMANDS classifies as a write."""
    from retrieval.cli.gate import COMMANDS

    dummy = Files(*(Path("/x") for _ in range(4)), "snap", Path("/x"))  # parsing only: paths are not opened
    out = []
    for name, parser in commands().items():
        args = PARSER.parse_args(sample_argv(name, parser, Path("/db"), dummy))
        if name in COMMANDS and COMMANDS[name].write(args):
            out.append(name)
    return out


def tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Run:
    rc: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.replace("\r", "\n").splitlines() if ln.startswith("error:")]


def run(argv: list[str], parser: argparse.ArgumentParser | None = None) -> Run:
    """`main(argv)` in this process with the test process's parser (or `parser`), its output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv, parser or PARSER)
        except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
            rc = exc.code if isinstance(exc.code, int) else 2
    return Run(rc, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class Files:
    """Inputs a command reads: a trace file, an agent log, a ratings export, a case as JSONL, a snapshot id."""
    traces: Path
    log: Path
    ratings: Path
    case: Path
    snapshot: str
    out: Path


def build_store(root: Path) -> tuple[Path, Files]:
    """The demo store (hashing embedder) with its `demo` case and one snapshot, and the input files."""
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace import Workspace

    db = root / "base"
    copy_demo(str(db))
    traces = root / "traces.jsonl"
    traces.write_text(json.dumps({"id": "gate-1", "content": "a new note about kayaks", "scope": "user",
                                  "scope_id": "maya"}) + "\n")
    log = root / "log.jsonl"
    log.write_text(json.dumps({"timestamp": "2026-03-01T12:00:00Z", "query": "invoice", "scope": "user:maya",
                               "results": [{"id": "maya-intro", "score": 0.5}], "feedback": "positive"}) + "\n")
    ratings = root / "ratings.jsonl"
    ratings.write_text(json.dumps({"qid": "m01", "scope": "user:maya", "query": "what happened with invoice "
                                   "INV-20931?", "trace_id": "maya-intro", "grade": 2, "rater": "local"}) + "\n")
    case = root / "case.jsonl"
    case.write_text(json.dumps({"qid": "g1", "query": "kayak", "scope": "user:maya",
                                "relevant": {"maya-intro": 1}}) + "\n")
    from retrieval.judgments.io import import_files

    import_files(JudgmentStore(str(db)), "gate-tiny", jsonl=case)  # one query: `snapshot run`, `grade` stay quick
    snap = run_snapshot(Workspace(str(db), embedder=HashingEmbedder(384)), "gate-tiny",
                        PipelineConfig.for_preset("hybrid"), JudgmentStore(str(db)), label="one")
    return db, Files(traces, log, ratings, case, snap.id, root / "out")


def copy_store(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest)
    return dest


# A sample value for every positional argument and required option, by (command, dest) or by dest alone. A command
# whose argument has none here fails `test_every_command_has_a_sample_command_line`: add one.
def samples(files: Files) -> dict[tuple[str, str] | str, list[str]]:
    return {
        ("ingest", "file"): [str(files.traces)], ("import-log", "file"): [str(files.log)],
        ("judge import", "file"): [str(files.ratings)], ("case import", "name"): ["gate-case", "--jsonl",
                                                                                 str(files.case)],
        ("case export", "name"): ["demo"], ("snapshot grade", "snapshot"): [files.snapshot],
        ("snapshot diff", "a"): [files.snapshot], ("snapshot diff", "b"): [files.snapshot],
        ("tag", "name"): ["gate-v1"], ("snapshot run", "case"): ["gate-tiny"],
        ("analyzer", "name"): ["plain"], ("statistics", "mode"): ["store"],
        "case": ["demo"], "text": ["where do I live?"], "out": [str(files.out)], "from_": ["1"],
        "generator": ["openai:http://127.0.0.1:9#m"], "dataset": ["demo"],
    }


def sample_argv(command: str, parser: argparse.ArgumentParser, db: Path, files: Files) -> list[str]:
    """A command line for `command` that parses, with `--db DB` (and the hashing embedder where it is a flag)."""
    table = samples(files)
    argv = command.split()
    for action in parser._actions:
        if action.option_strings and not action.required:
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        value = table.get((command, action.dest), table.get(action.dest))
        if value is None and action.choices and not action.option_strings:
            value = [sorted(action.choices)[0]]
        if value is None and action.nargs == "?":
            continue
        if value is None and action.dest == "db":
            value = [str(db)]
        if value is None and action.dest == "embedder":
            value = ["hashing"]
        assert value is not None, f"no sample value for {command!r} {action.dest!r}: add one in tests/cligen.py"
        argv += ([action.option_strings[0]] if action.option_strings else []) + value
    flags = {s for a in parser._actions for s in a.option_strings}
    if "--db" in flags and "--db" not in argv:
        argv += ["--db", str(db)]
    if "--embedder" in flags and "--embedder" not in argv:
        argv += EMBEDDER
    if command == "eval":
        argv += ["--cache-dir", str(files.out / "cache"), "--max-queries", "2"]
    if command == "adapt":
        argv += ["--case", "demo"]
    return argv
