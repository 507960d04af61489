"""Many writers on one store (SPEC §18), as separate processes that share no local files (own cwd, HOME, TMPDIR):
three writers upserting the same ids at once, a delete racing an upsert, a writer killed -9 right after its
commit and one killed mid-batch, an agent's plain LanceDB calls (no Workspace, a duplicate id by plain add), and a
read-only server querying throughout. Then fresh processes find: every duplicate id resolved the same way by every
reader, no query failing, BM25 equal to a rebuild from the table, facts equal to extraction from it, one audit
entry per version that changed rows (the killed writer's commit as an unknown writer's), and `doctor --repair`
leaves the store healthy. On S3 (moto, started here) and, as the control, on a local path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOW
from many_writers_worker import SHARED, agent, check
from s3server import CREDENTIALS
from s3server import moto_s3 as start_moto
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace

WORKER = Path(__file__).with_name("many_writers_worker.py")
ROOT = Path(__file__).resolve().parents[1]
ROLES = ("w1", "w2", "w3", "reader")


@pytest.fixture(scope="module")
def moto_s3():
    with start_moto("fleet") as url:
        yield {"AWS_ENDPOINT_URL": url, **CREDENTIALS}


def _env(tmp: Path, extra: dict) -> dict:
    """A process of its own: cwd, HOME and TMPDIR private to it; the repository first on the path."""
    for d in ("home", "tmp"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RETRIEVAL_"))}
    return {**env, **extra, "HOME": str(tmp / "home"), "TMPDIR": str(tmp / "tmp"), "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1"}


def _run(role: str, uri: str, tmp: Path, extra: dict) -> subprocess.Popen:
    tmp.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, str(WORKER), role, uri], cwd=tmp, env=_env(tmp, extra),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _opened(role: str, proc: subprocess.Popen) -> None:
    """Wait for the racer's `ready` line (its store open). Nothing else is written to its stdout until it is given
    the start, so no output is left in this pipe's buffer for `communicate` to miss."""
    while (line := proc.stdout.readline()) and line.strip() != "ready":
        pass
    if not line:
        raise AssertionError(f"{role} exited before its store was open: {proc.communicate(timeout=60)[1][-2000:]}")


def _out(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, dict | None, str]:
    out, err = proc.communicate(timeout=timeout)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    return proc.returncode, json.loads(lines[-1]) if lines else None, err[-2000:]


def _race(uri: str, tmp_path: Path, extra: dict) -> dict:
    from retrieval.workspace import Workspace

    # the store exists before the race (creating a table is not what is raced here)
    _in_env(extra, lambda: Workspace(uri, embedder=HashingEmbedder(32)).ingest([MemoryTrace(
        id="seed", content="I live in Lisbon.", scope="user", scope_id="u1", created_at=NOW)], actor="setup"))
    procs = {r: _run(r, uri, tmp_path / r, extra) for r in ROLES}
    for role, proc in procs.items():
        _opened(role, proc)
    start = time.time() + 0.5  # every racer is open: they all start from this instant
    for proc in procs.values():
        proc.stdin.write(f"{start}\n")
        proc.stdin.flush()
    _in_env(extra, lambda: agent(uri, start))  # an agent's plain LanceDB calls, from this process
    return {r: _out(p) for r, p in procs.items()}


def _in_env(extra: dict, fn):
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        return fn()
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def _check(uri: str, tmp: Path, extra: dict) -> dict:
    rc, out, err = _out(_run("check", uri, tmp, extra))
    assert rc == 0 and out is not None, err
    return out


def _doctor(uri: str, tmp: Path, extra: dict, *flags: str) -> tuple[int, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "retrieval", "doctor", "--db", uri, "--json", *flags], cwd=tmp,
                       env=_env(tmp, extra), capture_output=True, text=True, timeout=180)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return p.returncode, json.loads(p.stdout)


def _many_writers(uri: str, tmp_path: Path, extra: dict) -> None:
    got = _race(uri, tmp_path, extra)
    for role in ("w1", "reader"):
        assert got[role][0] == 0, (role, got[role][2])
    assert (got["w2"][0], got["w3"][0]) == (-9, -9), (got["w2"][2], got["w3"][2])  # killed as planned
    # a survivor's own BM25, refreshed, follows the table and equals a rebuild from it
    assert got["w1"][1]["in_step"] is True, got["w1"][1]["in_step"]
    assert got["reader"][1]["failures"] == 0 and got["reader"][1]["queries"] > 0, got["reader"][1]

    first = _check(uri, tmp_path / "check1", extra)  # a fresh process: opens (catching up), queries, checks
    assert first["failures"] == []
    assert first["dups"]["g5"] == 2 and first["resolved"]["g5"] == "agent rewrote memory 5: I live in Oslo."
    if "://" not in uri:  # locally the file lock serialises this app's writers: only the agent's plain add
        assert first["dups"] == {"g5": 2}
    assert set(first["resolved"]) == set(first["dups"])
    here = _in_env(extra, lambda: check(uri))  # another process (this one) resolves them the same way
    assert (here["resolved"], here["failures"], here["problems"]) == (first["resolved"], [], first["problems"])
    # w2's round-1 rows (committed, then killed) are there; w3's mid-batch ingest committed nothing
    assert {f"s1-{i}" for i in range(SHARED)} <= set(first["traces"])
    assert not any(t.startswith("m") for t in first["traces"]) and "seed" not in first["traces"]
    assert {f"g{i}" for i in range(30)} <= set(first["traces"])
    # one audit entry per committed version: w2's killed commit and the agent's as an unknown writer's
    assert first["audit_versions"] == first["changed_versions"]
    assert {"w1", "w3", "unknown writer"} <= set(first["actors"])
    # BM25 equal to a rebuild, facts equal to extraction, no audit gap: only the duplicate is left to repair
    assert set(first["problems"]) == {"duplicate ids"}, first["problems"]

    rc, repaired = _doctor(uri, tmp_path / "doctor", extra, "--repair")
    assert rc == 0 and repaired["healthy"], repaired
    after = _in_env(extra, lambda: check(uri))
    assert after["dups"] == {} and after["problems"] == {} and after["failures"] == []
    assert after["traces"] == first["traces"] and after["resolved"] == {}
    assert after["audit_versions"] == after["changed_versions"] and "doctor" in after["actors"]


def test_many_writers_on_s3(moto_s3, tmp_path):
    _many_writers("s3://fleet/store", tmp_path, moto_s3)


def test_many_writers_on_a_local_path(tmp_path):
    _many_writers(str(tmp_path / "store"), tmp_path, {})
