"""Every command and sub-command of the CLI (read from `build_parser()`, so a new one is fuzzed without anyone
listing it) run with hostile values in each of its arguments: exit code 0 or 2, never a traceback, and on a
failure exactly one `error:` line. `RETRIEVAL_TRACEBACK=1` makes a bug raise here instead of hiding as a line.

Bounded: every argument gets the values that matter most to it plus a rotating share of the rest, in-process
on one small demo store (hashing embedder), run from a directory deep inside tmp so `../..` stays in tmp. An
`s3://` value reaches moto's S3 on 127.0.0.1 (its bucket exists, its store does not): an endpoint that answers
nothing costs LanceDB's connect 2.5-5 s of retries, paid once below rather than by every command."""
from __future__ import annotations

import argparse

import pytest

from cligen import build_store, commands, run, sample_argv
from s3server import moto_s3

SECRET = "s3cr3tKEY"
HOSTILE = ["", " ", "0", "-1", str(10**30), "nan", "inf", "../..", "a\x00b", "\ud800", "x" * 5000,
           f"s3://AKIA:{SECRET}@bucket/x", "2026-13-45T99:99Z", "9999-12-31T23:00-05:00", "ok..tag", "latest",
           "user:", "user:maya\n", "1e309", "a.lock"]
# Arguments where a hostile value is most likely to reach deep code: every value for them.
KEY = {"db", "as_of", "from_", "to", "scope", "version", "k", "name", "case", "snapshot", "a", "b", "file", "text",
       "recall_top_k", "rrf_k", "dense_weight", "embedder", "rater", "rename", "mode", "table", "columns"}
ROTATE = 3  # values per other argument, taken in turn from HOSTILE
# The store flags every command shares (one parser, one opener): each command gets the values that reach a path, a
# credential or a C string plus its own turn of the rest, so the commands together still try every value of each.
SHARED = {"db", "embedder", "table", "columns"}
ALWAYS = ["", "../..", "a\x00b", f"s3://AKIA:{SECRET}@bucket/x"]
SHARED_ROTATE = 5
HEAVY = {"build-demo", "eval"}  # a valid run builds a whole store: their arguments rotate like the minor ones
FAST = {"calibrate": ["--sample", "4"], "adapt": ["--resamples", "20"], "eval": ["--max-queries", "2"]}


def _slots(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments that take a value (positionals and options), in order."""
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._StoreTrueAction,
                                                             argparse._StoreConstAction, argparse._SubParsersAction))]


def _cases() -> list[tuple[str, str, int]]:
    out, turn = [], 0
    always = [HOSTILE.index(v) for v in ALWAYS]
    rest = [i for i in range(len(HOSTILE)) if i not in always]
    shared_turn: dict[str, int] = {}
    for name, parser in commands().items():
        for action in _slots(parser):
            if action.dest in SHARED and name not in HEAVY:
                t = shared_turn.get(action.dest, 0)
                picks = always + [rest[(t + i) % len(rest)] for i in range(SHARED_ROTATE)]
                shared_turn[action.dest] = t + SHARED_ROTATE
            elif action.dest in KEY and name not in HEAVY:
                picks = list(range(len(HOSTILE)))
            else:
                picks = [(turn + i) % len(HOSTILE) for i in range(ROTATE)]
                turn += ROTATE
            out += [(name, action.dest, i) for i in picks]
    return out


def _replace(command: str, argv: list[str], parser: argparse.ArgumentParser, dest: str, value: str) -> list[str]:
    """`argv` with argument `dest` set to `value` (a positional's slot, or the option replaced or added)."""
    action = next(a for a in _slots(parser) if a.dest == dest)
    if action.option_strings:
        argv = list(argv)
        for flag in action.option_strings:
            while flag in argv:
                i = argv.index(flag)
                del argv[i:i + 2]
        return argv + [f"{action.option_strings[0]}={value}"]  # `=`: a value starting with '-' stays a value
    positions = [a.dest for a in _slots(parser) if not a.option_strings]  # in the order sample_argv wrote them
    idx = len(command.split()) + positions.index(dest)
    if idx >= len(argv) or argv[idx].startswith("--"):  # an optional positional sample_argv left out
        return argv[:idx] + [value] + argv[idx:]
    return argv[:idx] + [value] + argv[idx + 1:]


@pytest.fixture(scope="module")
def s3_endpoint():
    with moto_s3("bucket") as url:  # the bucket the hostile `s3://…@bucket/x` value names
        yield url


def _hostile_env(monkeypatch, endpoint: str) -> None:
    for k, v in {"RETRIEVAL_TRACEBACK": "1", "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "x",
                 "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1", "HF_HUB_OFFLINE": "1"}.items():
        monkeypatch.setenv(k, v)
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_USER", "RETRIEVAL_DB",
              "LANCEDB_STORAGE_OPTIONS"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    db, files = build_store(root)
    deep = root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    from retrieval.models import HashingEmbedder
    from retrieval.workspace import Workspace

    Workspace(str(root / "tiny"), embedder=HashingEmbedder(384), fact_extractor=None).ingest(
        [__import__("conftest").make_trace("t1", "one small note")])
    FAST["reembed"] = ["--db", str(root / "tiny")]  # re-embeds one trace, not the demo store, on every valid run
    return db, files, deep


CASES = _cases()


def test_the_commands_together_try_every_hostile_value_of_every_shared_store_flag():
    tried = {(dest, i) for _, dest, i in CASES if dest in SHARED}
    assert tried == {(dest, i) for dest in SHARED for i in range(len(HOSTILE))}


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_command_with_hostile_arguments_fails_in_one_line(fuzzed, s3_endpoint, monkeypatch, command):
    db, files, deep = fuzzed
    monkeypatch.chdir(deep)
    _hostile_env(monkeypatch, s3_endpoint)
    parser = commands()[command]
    base = sample_argv(command, parser, db, files) + FAST.get(command, [])
    tried = 0
    for name, dest, i in CASES:
        if name != command:
            continue
        argv = _replace(command, base, parser, dest, HOSTILE[i])
        out = run(argv)  # a bug raises here (RETRIEVAL_TRACEBACK=1) and fails the test with its traceback
        tried += 1
        shown = (command, dest, HOSTILE[i][:40], out.rc, out.err[-800:])
        assert out.rc in (0, 2), shown
        assert "Traceback" not in out.err, shown
        if out.rc == 2:
            assert len(out.error_lines) == 1, shown
        assert SECRET not in out.out + out.err, shown
    assert tried > 0


def test_an_s3_store_whose_endpoint_answers_nothing_fails_in_one_line_without_its_secret(fuzzed, monkeypatch):
    """The fuzz's `s3://` values reach a live (fake) S3; this is the endpoint that refuses every connection."""
    _, _, deep = fuzzed
    monkeypatch.chdir(deep)
    _hostile_env(monkeypatch, "http://127.0.0.1:1")
    out = run(["status", "--db", f"s3://AKIA:{SECRET}@bucket/x"])
    assert out.rc == 2 and len(out.error_lines) == 1, out.err[-800:]
    assert SECRET not in out.out + out.err
