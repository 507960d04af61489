"""Every write command leaves the store healthy by the project's own doctor (SPEC §18), generated from the CLI's
command table: run the command on a fresh copy of a small store, then `doctor.check` (what `doctor --db` runs,
writing nothing) must find no problem — each table version the command created has its audit entry, the BM25
sidecar is saved at the table's version, facts in step — and those entries name the command's own write, not an
unknown writer or maintenance filled in afterwards. A new write command is covered by being classified as one
in `retrieval/cli/gate.py` COMMANDS (probe: `statistics`, `analyzer` and `reembed` left audit gaps and a stale
sidecar)."""
from __future__ import annotations

import pytest

from cligen import build_store, commands, copy_store, run, sample_argv, write_commands
from retrieval.workspace import Workspace, doctor
from retrieval.workspace.audit import UNKNOWN, AuditLog

WRITES = write_commands()
# a write whose sample command line cannot succeed here: it must still leave the store healthy
FAILS_HERE = {"snapshot grade": "its sample names a grading model server on a closed port"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("doctor"))


@pytest.fixture
def env(monkeypatch):
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_USER", "RETRIEVAL_TRACEBACK"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def check(db) -> doctor.Report:
    ws = Workspace(str(db))
    ws.demo_mode = True  # as `doctor` without --repair: the check itself catches nothing up
    return doctor.check(ws)


def test_the_sample_store_is_healthy_before_any_write(built):
    base, _ = built
    rep = check(base)
    assert rep.healthy, rep.problems
    assert {"audit gaps", "bm25 sidecar", "bm25 in step"} <= set(rep.checked)


@pytest.mark.parametrize("command", WRITES)
def test_every_write_command_leaves_the_store_healthy(built, env, tmp_path, command):
    base, files = built
    db = copy_store(base, tmp_path / "db")
    before = check(db).version
    out = run(sample_argv(command, commands()[command], db, files))
    if command in FAILS_HERE:
        assert out.rc != 0, f"{command} succeeded: drop it from FAILS_HERE"
    else:
        assert out.rc == 0, (out.out[-500:], out.err[-1500:])
    rep = check(db)
    assert rep.healthy, (command, rep.problems)
    assert {"audit gaps", "bm25 sidecar"} <= set(rep.checked)
    if command in ("statistics", "analyzer", "reembed"):  # store-wide writes that commit table versions
        assert rep.version > before
    # the versions it created are named by this write, not filled in afterwards as another writer's
    mine = [e for e in AuditLog(str(db)).entries(limit=10_000, maintenance=True)
            if e.version is not None and e.version > before]
    assert not [e for e in mine if e.actor == UNKNOWN], mine
    if rep.version > before:
        assert any(e.action != "commit" for e in mine), mine
