"""The one write gate, generated from the CLI's own command table (issue 32, items 4, 5, 19): every command is
classified read or write; every write command in demo mode and as a read-only visitor is refused before it runs
(exit code 2, one `error:` line, no traceback, the store's files byte-identical); expected failures (a bad tag
name, a full disk) are one `error:` line; a store URI's credentials are never printed."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cligen import build_store, commands, copy_store, run, sample_argv, tree_hash, write_commands
from s3server import moto_s3
from retrieval.cli.gate import COMMANDS, leaves
from retrieval.cli.main import build_parser

WRITES = write_commands()
POLICY = """
[users."reader@example.com"]
scopes = ["*"]

[users."maya@example.com"]
scopes = ["user:maya"]
write = true

[users."admin@example.com"]
scopes = ["*"]
write = true

[users."nobody@example.com"]
scopes = ["user:nobody"]
"""
ENV_KEYS = ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_USER", "RETRIEVAL_ALLOW_GRADING",
            "RETRIEVAL_AUTH_HEADER", "RETRIEVAL_DB", "RETRIEVAL_TRACEBACK")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    db, files = build_store(root)
    (root / "access.toml").write_text(POLICY)
    return root, db, files


@pytest.fixture
def env(monkeypatch):
    for k in ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def as_visitor(env, root: Path, user: str | None) -> None:
    env.setenv("RETRIEVAL_AUTH", "proxy")
    env.setenv("RETRIEVAL_POLICY", str(root / "access.toml"))
    if user:
        env.setenv("RETRIEVAL_USER", user)


def refused(out, match: str) -> None:
    assert "Traceback" not in out.err, out.err
    assert out.rc == 2, (out.rc, out.out[-500:], out.err[-1500:])
    assert len(out.error_lines) == 1 and match in out.error_lines[0], out.err


def test_every_command_is_classified_read_or_write():
    """A new command fails here until `retrieval/cli/gate.py` COMMANDS says whether it writes."""
    assert sorted(commands()) == sorted(COMMANDS)
    assert set(WRITES) >= {"ingest", "import-log", "case import", "judge import", "judge policy", "snapshot run",
                           "tag", "calibrate", "reembed", "analyzer", "statistics", "build-demo", "snapshot grade",
                           "adapt"}
    assert not {"query", "status", "case list", "snapshot list", "diff-versions", "judge export"} & set(WRITES)


def test_an_unclassified_command_is_refused_before_it_runs(built, env):
    from retrieval.cli import gate

    root, db, files = built
    env.delitem(gate.COMMANDS, "status")
    out = run(["status", "--db", str(db)])
    refused(out, "is not classified as a read or a write")


@pytest.mark.parametrize("command", WRITES)
def test_every_write_command_in_demo_mode_writes_nothing(built, env, tmp_path, command):
    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    before = tree_hash(db)
    env.setenv("RETRIEVAL_MODE", "demo")
    out = run(sample_argv(command, commands()[command], db, files))
    refused(out, "demo mode")
    assert tree_hash(db) == before


@pytest.mark.parametrize("command", WRITES)
def test_every_write_command_as_a_read_only_visitor_writes_nothing(built, env, tmp_path, command):
    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    before = tree_hash(db)
    as_visitor(env, root, "reader@example.com")
    out = run(sample_argv(command, commands()[command], db, files))
    refused(out, "reader@example.com may read but not change this store")
    assert tree_hash(db) == before


@pytest.mark.parametrize("user, why", [(None, "set RETRIEVAL_USER"), ("stranger@example.com", "not in the access "
                                                                                              "policy")])
def test_a_visitor_the_policy_does_not_know_writes_and_reads_nothing(built, env, tmp_path, user, why):
    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    before = tree_hash(db)
    as_visitor(env, root, user)
    refused(run(sample_argv("tag", commands()["tag"], db, files)), why)
    refused(run(["status", "--db", str(db)]), why)
    assert tree_hash(db) == before


def test_a_writer_limited_to_one_scope_writes_only_there(built, env, tmp_path):
    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    as_visitor(env, root, "maya@example.com")
    for store_wide in ("tag", "statistics", "analyzer", "reembed", "calibrate", "build-demo"):
        before = tree_hash(db)
        refused(run(sample_argv(store_wide, commands()[store_wide], db, files)), "changes every scope")
        assert tree_hash(db) == before
    theirs = tmp_path / "tomas.jsonl"
    theirs.write_text('{"id": "t-1", "content": "tomas note", "scope": "user", "scope_id": "tomas"}\n')
    before = tree_hash(db)
    refused(run(["ingest", str(theirs), "--db", str(db)]), "not yours to write to")
    assert tree_hash(db) == before
    ok = run(["ingest", str(files.traces), "--db", str(db), "--no-facts"])
    assert ok.rc == 0, ok.err


def test_the_audit_names_who_ran_a_write_command(built, env, tmp_path):
    from retrieval.workspace.audit import AuditLog

    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    assert run(["tag", "local-1", "--db", str(db)]).rc == 0
    as_visitor(env, root, "Admin@Example.com")
    assert run(["tag", "admin-1", "--db", str(db)]).rc == 0
    rows = [(e.actor, e.detail) for e in AuditLog(str(db)).entries() if e.action == "command"]
    assert rows == [("admin@example.com", "tag"), ("local", "tag")]


@pytest.mark.parametrize("name, why", [("ok..tag", "no '..' inside"), ("a.", "no '.' or '.lock' at the end"),
                                       ("a.lock", "no '.' or '.lock' at the end"), ("latest", "reserved"),
                                       ("Latest", "reserved"), ("a/b", "is not allowed"), ("", None)])
def test_a_tag_name_lancedb_or_as_of_cannot_use_is_one_error_line(built, env, tmp_path, name, why):
    root, base, files = built
    db = copy_store(base, tmp_path / "db")
    before = tree_hash(db)
    out = run(["tag", name, "--db", str(db)])
    if why is None:  # no name: lists the tags
        assert out.rc == 0 and '"tags": {}' in out.out
    else:
        refused(out, why)
    assert tree_hash(db) == before


@pytest.mark.parametrize("command", ["ingest", "import-log"])
def test_a_full_disk_during_a_write_is_one_error_line(built, env, tmp_path, command):
    from retrieval.replay.store import QueryLog
    from retrieval.store.memory import MemoryStore

    root, base, files = built
    db = copy_store(base, tmp_path / "db")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    env.setattr(MemoryStore, "add", full)
    env.setattr(QueryLog, "_write", staticmethod(full))
    out = run(sample_argv(command, commands()[command], db, files))
    refused(out, "the disk is full")


def test_an_unexpected_exception_is_one_line_and_its_traceback_on_request(built, env, tmp_path):
    import sys

    cli_main = sys.modules["retrieval.cli.main"]
    root, base, files = built

    def bug(args):
        raise KeyError("oops")

    env.setattr(cli_main, "build_parser", _patched_parser(bug))
    out = run(["status", "--db", str(base)], cli_main.build_parser())
    assert out.rc == 1 and len(out.error_lines) == 1 and "internal error (KeyError" in out.err
    assert "Traceback" not in out.err
    env.setenv("RETRIEVAL_TRACEBACK", "1")
    with pytest.raises(KeyError):
        cli_main.main(["status", "--db", str(base)])


def _patched_parser(func):
    def build():
        p = build_parser()
        dict(leaves(p))["status"].set_defaults(func=func)
        return p
    return build


def test_a_usage_error_is_one_error_line():
    out = run(["query"])
    assert out.rc == 2 and len(out.error_lines) == 1 and "the following arguments are required: text" in out.err
    assert "usage:" not in out.err


@pytest.fixture(scope="module")
def s3_endpoint():
    with moto_s3("memories") as url:
        yield url


def test_ingest_into_s3_with_credentials_in_the_uri_prints_none(built, env, s3_endpoint, tmp_path):
    """Item 5: `ingest`'s summary line printed the URI whole; so did every command that names the store."""
    from retrieval.store.remote import redact_text, redact_uri

    assert redact_uri("s3://AKIAKEY:s3cr/et@bucket/x") == "s3://***@bucket/x"  # a secret may hold '/'
    assert redact_text("not 's3://K:S@b/x' nor s3:/K:S@b/x") == "not 's3://***@b/x' nor s3:/***@b/x"  # Path folds //
    root, base, files = built
    env.chdir(tmp_path)  # were the URI ever read as a local path, it would land here
    for k, v in {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                 "AWS_REGION": "us-east-1"}.items():
        env.setenv(k, v)
    uri = "s3://AKIAKEY:s3cr3t@memories/store"
    runs = [run(["ingest", str(files.traces), "--db", uri, "--embedder", "hashing", "--no-facts"]),
            run(["status", "--db", uri]), run(["tag", "v1", "--db", uri]), run(["tag", "--list", "--db", uri]),
            run(["statistics", "store", "--db", uri]), run(["query", "kayak", "--db", uri, "--rows", "1"]),
            run(["tag", "v1", "--db", uri]), run(["query", "kayak", "--db", uri, "--as-of", "nope"])]
    assert [r.rc for r in runs] == [0, 0, 0, 0, 0, 0, 2, 2], [r.err for r in runs]
    assert "wrote 1 to s3://***@memories/store in" in runs[0].out
    for r in runs:
        assert "s3cr3t" not in r.out + r.err and "AKIAKEY" not in r.out + r.err


@pytest.mark.parametrize("user, extra, match", [
    ("nobody@example.com", [], "no scope you may read holds traces"),  # none of theirs: never "every scope" instead
    ("maya@example.com", ["--all-scopes"], "--all-scopes reads every scope; you may read only user:maya"),
    ("maya@example.com", ["--scope", "user:u1"], "you may not read scope user:u1"),
])
def test_a_limited_visitor_reads_only_their_scopes_from_the_cli(built, env, user, extra, match):
    root, db, _ = built
    as_visitor(env, root, user)
    refused(run(["query", "kayak", "--db", str(db), *extra]), match)
    refused(run(["diff-versions", "kayak", "--from", "1", "--to", "2", "--db", str(db), *extra]),
            match.split(" in ")[0])


def test_an_unreachable_model_server_is_one_error_line_not_a_bug(built, env, tmp_path):
    import socket

    root, base, files = built
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for argv in (["ingest", str(files.traces)], ["query", "hello", "--db", str(base)]):
        out = run(argv + ["--db", str(tmp_path / "db")] * (argv[0] == "ingest")
                  + ["--embedder", f"openai:http://127.0.0.1:{port}/v1#m"])
        refused(out, "cannot connect")
        assert "this is a bug" not in out.err


@pytest.mark.parametrize("rows, why", [("-5", "out of range: give 1 to 1000"), ("0", "out of range"),
                                       ("x", "'x' is not a whole number")])
def test_a_row_count_outside_1_to_1000_is_a_usage_error(built, env, rows, why):
    root, base, files = built
    out = run(["query", "hello", "--db", str(base), "--rows", rows])
    refused(out, "argument --rows")
    assert why in out.err
