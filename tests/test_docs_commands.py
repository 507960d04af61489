"""Docs stay true: every `python -m retrieval …` command line the README, the docs and the Makefile name is
checked against the CLI's own parser (the command, its subcommand and every `--flag` must exist there).

A renamed flag or a command described before it exists fails here, not in a reader's terminal."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from retrieval.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
# A command line runs to the end of its code span, line, pipe or shell separator.
COMMAND = re.compile(r"python -m retrieval ((?:[^`|;&\n)\]])*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subcommands here; no public accessor exists
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def command_lines() -> list[tuple[str, int, str]]:
    found = []
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in COMMAND.finditer(line):
                found.append((path.name, number, match.group(1).strip()))
    return found


def resolve(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The (sub)parser a command line reaches and the names it took to get there."""
    parser, path = build_parser(), []
    for word in words:
        choices = _subparsers(parser)
        if not choices:
            break
        if word not in choices:
            raise LookupError(f"no command {' '.join([*path, word])!r} (choices: {', '.join(sorted(choices))})")
        parser, path = choices[word], [*path, word]
    return parser, path


LINES = command_lines()


def test_the_docs_name_commands_at_all():
    assert len(LINES) >= 20, "the docs should show the CLI; did the pattern stop matching?"


@pytest.mark.parametrize("where,number,line", LINES, ids=[f"{w}:{n}" for w, n, _ in LINES])
def test_a_documented_command_line_exists_in_the_parser(where, number, line):
    words = [w for w in line.split() if re.fullmatch(r"[a-z][a-z-]*", w)]
    if not words or line.startswith(("…", "...")):
        pytest.skip("names no command")
    try:
        parser, path = resolve(words)
    except LookupError as exc:
        pytest.fail(f"{where}:{number}: `python -m retrieval {line}`: {exc}")
    assert path, f"{where}:{number}: `{line}` names no command"
    unknown = sorted(set(FLAG.findall(line)) - _flags(parser))
    assert not unknown, (f"{where}:{number}: `python -m retrieval {line}`: {' '.join(path)} has no "
                         f"{', '.join(unknown)} (it takes {', '.join(sorted(_flags(parser)))})")


def test_a_wrong_flag_is_caught():
    parser, path = resolve(["query"])
    assert path == ["query"] and "--as-of" in _flags(parser) and "--no-such-flag" not in _flags(parser)
    with pytest.raises(LookupError, match="no command 'nosuch'"):
        resolve(["nosuch"])
