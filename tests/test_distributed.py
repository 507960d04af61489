"""`ingest --ray` and `reembed --ray` (retrieval.distributed) against the normal path, on a local Ray cluster.

The Ray part runs in a subprocess with an interpreter that has the `ray` extra (this one, or `.venv-ray` made
by `make install-ray`), inside a private network namespace when `unshare -n` works (Ray binds about nine ports;
else every Ray service is bound to 127.0.0.1). This process, which may lack the extra, then reads what Ray wrote.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, UTC
from pathlib import Path
from types import SimpleNamespace

import lancedb
import numpy as np
import pytest

from retrieval.cli.main import main
from retrieval.distributed import ray_session
from retrieval.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
CLOCK = datetime(2026, 6, 1, tzinfo=UTC)
CITIES = ["Lisbon", "Porto", "Paris", "Berlin", "Madrid", "Rome", "Vienna"]
JOB_TIMEOUT = 900  # seconds; the job takes under a minute on an idle machine
QUERIES = ["where does the user live", "works at Acme", "coffee in the morning", "Berlin"]


def ray_python() -> str | None:
    if importlib.util.find_spec("lance_ray") and importlib.util.find_spec("ray"):
        return sys.executable
    venv = ROOT / ".venv-ray" / "bin" / "python"
    return str(venv) if venv.exists() else None


def _line(i: int, text: str) -> str:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i)
    return json.dumps({"id": f"t{i:03d}", "content": text, "scope": "user", "scope_id": f"u{i % 3}",
                       "created_at": at.isoformat()})


def _text(i: int) -> str:
    # every text unique (its number): equal scores would rank by storage order, which two stores need not share
    kinds = [f"Note {i}: I live in {CITIES[i % 7]}.", f"Entry {i}. I work at Company{i % 11}.",
             f"Coffee number {i} in the morning.", f"Day {i}. My name is Person{i % 13}.",
             f"Notes {i}: a walk by the river in {CITIES[(i * 3) % 7]}."]
    return kinds[i % 5]


def _write_files(root: Path) -> None:
    (root / "first.jsonl").write_text("\n".join(_line(i, _text(i)) for i in range(200)) + "\n")
    # 20 stored ids with new text (an upsert) and 10 new ids
    second = [_line(i, f"Day {i}. I moved to {CITIES[(i + 2) % 7]} this year.") for i in range(0, 200, 10)]
    second += [_line(i, _text(i)) for i in range(200, 210)]
    (root / "second.jsonl").write_text("\n".join(second) + "\n")


def _in_private_network(cmd: list[str]) -> list[str]:
    if shutil.which("unshare") and shutil.which("ip"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]
    return cmd


def _last_lines(text: str | bytes | None, lines: int) -> str:
    """The last `lines` distinct lines (a repeated warning once, with its count), skipping Ray's stats dumps."""
    text = text.decode(errors="replace") if isinstance(text, bytes) else (text or "")  # TimeoutExpired: bytes
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith(("[state-dump]", "\t")):  # not the periodic stats dumps
            counts[line] = counts.pop(line, 0) + 1  # re-inserted: ordered by last occurrence
    return "\n".join((f"(x{n}) " if n > 1 else "") + line[:400] for line, n in list(counts.items())[-lines:])


def _job_report(stderr: str | bytes | None, ray_tmp: Path) -> str:
    """The job's stderr so far and the end of Ray's logs (raylet, GCS, Ray Data, each worker's errors), so a
    failure or a timeout says which step it was in and what Ray was doing (worker starts, deaths, retries)."""
    parts = [f"--- the job's stderr (last lines) ---\n{_last_lines(stderr, 30)}"]
    logs = ray_tmp / "ray" / "session_latest" / "logs"
    for log in [logs / "raylet.out", logs / "gcs_server.out", logs / "ray-data" / "ray-data.log",
                *sorted(logs.glob("worker-*.err")), *sorted(logs.glob("python-core-worker-*.log"))]:
        tail = _last_lines(log.read_text(errors="replace"), 6) if log.is_file() else ""
        if tail:
            parts.append(f"--- {log.relative_to(logs)} ---\n{tail}")
    return "\n".join(parts)[-20000:] + f"\n(Ray's whole session: {logs})"


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    py = ray_python()
    if py is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the ray extra is missing under CI: `make test` must run `make install-ray` first")
        pytest.skip("the ray extra is not installed: run `make install-ray` (makes .venv-ray) to run this test")
    root = tmp_path_factory.mktemp("ray")
    _write_files(root)
    ray_tmp = Path(tempfile.mkdtemp(prefix="ray-"))  # Ray's session dir (logs) where a failure can read it;
    # short: Ray's unix sockets live under it (a path over 107 bytes fails)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": str(ray_tmp)}
    try:
        out = subprocess.run(_in_private_network([py, str(ROOT / "tests" / "ray_job.py"), str(root)]),
                             capture_output=True, text=True, timeout=JOB_TIMEOUT, env=env, cwd=root)
    except subprocess.TimeoutExpired as exc:
        out = subprocess.CompletedProcess(exc.cmd, None, stderr=exc.stderr)  # the output so far
    if out.returncode is None:
        pytest.fail(f"the Ray job did not finish in {JOB_TIMEOUT} s; what it and Ray had logged by then:\n"
                    + _job_report(out.stderr, ray_tmp), pytrace=False)
    assert out.returncode == 0, _job_report(out.stderr, ray_tmp)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    steps = json.loads(out.stdout.strip().splitlines()[-1])
    normal = str(root / "normal-store")
    versions = {}
    for step, argv in (("ingest", ["ingest", str(root / "first.jsonl"), "--db", normal, "--embedder", "hashing"]),
                       ("upsert", ["ingest", str(root / "second.jsonl"), "--db", normal]),
                       ("reembed", ["reembed", "--embedder", "minilm", "--db", normal])):
        assert main(argv) == 0
        versions[step] = int(lancedb.connect(normal).open_table("traces").version)
    return root, steps, versions


def _rows(db: Path, version: int):
    tbl = lancedb.connect(str(db)).open_table("traces")
    tbl.checkout(version)
    return tbl.to_arrow().sort_by("id")


def _same_rows(ray, normal, exact: bool) -> None:
    assert ray.schema.equals(normal.schema)  # the traces table's schema
    vec_meta = lambda t: dict(t.schema.field("vector").metadata)  # the store's identity
    assert vec_meta(ray) == vec_meta(normal)
    for name in ray.schema.names:
        if name == "vector":
            a, b = np.stack(ray.column(name).to_numpy(zero_copy_only=False)), np.stack(
                normal.column(name).to_numpy(zero_copy_only=False))
            assert np.array_equal(a, b) if exact else np.allclose(a, b, atol=1e-5)
        else:
            assert ray.column(name).to_pylist() == normal.column(name).to_pylist(), name


def test_ray_ingest_upsert_and_reembed_write_what_the_normal_path_writes(ray_run):
    root, steps, versions = ray_run
    assert steps["niceness"]["worker"] == steps["niceness"]["driver"]  # not reniced below the command: see cluster.py
    assert steps["ingest"]["code"] == 0, steps["ingest"]["err"]
    assert "wrote 200 trace(s) (0 replaced)" in steps["ingest"]["out"]
    assert "2 new fragment(s)" in steps["ingest"]["out"]  # N / workers rows per fragment
    _same_rows(_rows(root / "ray-store", steps["ingest"]["version"]), _rows(root / "normal-store", versions["ingest"]),
               exact=True)
    assert steps["upsert"]["code"] == 0, steps["upsert"]["err"]
    assert "wrote 30 trace(s) (20 replaced)" in steps["upsert"]["out"]
    _same_rows(_rows(root / "ray-store", steps["upsert"]["version"]), _rows(root / "normal-store", versions["upsert"]),
               exact=True)
    # a mismatched embedder is refused before anything is written, as the normal ingest refuses it
    assert steps["mismatch"]["code"] == 2
    assert "was built with embedder hashing" in steps["mismatch"]["err"]
    assert steps["mismatch"]["version"] == steps["upsert"]["version"]
    assert steps["reembed"]["code"] == 0, steps["reembed"]["err"]
    assert "re-embedded 210 trace(s)" in steps["reembed"]["out"]
    _same_rows(_rows(root / "ray-store", steps["reembed"]["version"]),
               _rows(root / "normal-store", versions["reembed"]), exact=False)


def test_a_store_ray_wrote_opens_with_bm25_caught_up_and_answers_as_the_normal_one(ray_run):
    root = ray_run[0]
    ray_ws, normal_ws = Workspace(str(root / "ray-store"), clock=lambda: CLOCK), Workspace(
        str(root / "normal-store"), clock=lambda: CLOCK)
    status = ray_ws.status()
    assert (status["traces"], status["bm25_documents"], status["embedder"], status["in_step"]) == (
        210, 210, "minilm", True)
    _same_answers(ray_ws, normal_ws, fact_store=None)  # facts: the test below
    # the commits' own entries (the CLI gate's `command` rows say who ran each command, besides)
    actors = [(e.actor, e.action, e.traces) for e in ray_ws.audit.entries() if e.action != "command"]
    assert actors[:3] == [("ray", "reembed", 210), ("ray", "ingest", 30), ("ray", "ingest", 200)]


def _same_answers(ray_ws: Workspace, normal_ws: Workspace, **kw) -> None:
    for q in QUERIES:
        got = ray_ws.retriever(**kw).retrieve(q, scope=None, recall_top_k=10)
        want = normal_ws.retriever(**kw).retrieve(q, scope=None, recall_top_k=10)
        assert [t.id for t in got.traces] == [t.id for t in want.traces], q
        for stage in ("dense", "sparse"):  # BM25 built from the rows Ray wrote scores as the normal one
            assert got.diagnostics.stage_ids[stage] == want.diagnostics.stage_ids[stage], (q, stage)
        assert [t.retrieval_score for t in got.traces] == pytest.approx([t.retrieval_score for t in want.traces],
                                                                         abs=1e-5)


def _facts(ws: Workspace) -> set:
    return {(f.subject, f.predicate, f.object, f.source_trace_ids) for f in ws.facts.all()}


def test_a_store_ray_wrote_opens_with_its_facts_extracted(ray_run):
    root = ray_run[0]
    ray_ws, normal_ws = Workspace(str(root / "ray-store"), clock=lambda: CLOCK), Workspace(
        str(root / "normal-store"), clock=lambda: CLOCK)
    ray_ws.refresh()
    want = _facts(normal_ws)
    assert len(want) > 100
    assert _facts(ray_ws) == want
    _same_answers(ray_ws, normal_ws)  # with the fact graph


def test_ray_flags_refuse_before_anything_is_written(tmp_path, capsys):
    (tmp_path / "one.jsonl").write_text(_line(1, "I live in Lisbon.") + "\n")
    db = tmp_path / "store"
    assert main(["ingest", str(tmp_path / "one.jsonl"), "--db", str(db), "--ray", "--workers", "0"]) == 2
    assert capsys.readouterr().err == "error: --workers must be at least 1, got 0\n"
    assert main(["reembed", "--embedder", "hashing", "--db", str(db), "--ray", "--workers", "0"]) == 2
    assert capsys.readouterr().err == "error: --workers must be at least 1, got 0\n"
    assert not db.exists()


@pytest.mark.skipif(importlib.util.find_spec("lance_ray") is not None, reason="the ray extra is installed here")
def test_ray_without_the_extra_names_the_install_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "one.jsonl").write_text(_line(1, "I live in Lisbon.") + "\n")
    db = tmp_path / "store"
    assert main(["ingest", str(tmp_path / "one.jsonl"), "--db", str(db), "--ray"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --ray needs the optional extra: pip install '.[ray]'") and "make install-ray" in err
    assert not db.exists()


def test_a_local_ray_runs_its_workers_at_the_commands_niceness(monkeypatch):
    """What `ray_session` asks of ray.init, without the extra too (the module fixture checks a real worker's)."""
    inits: list[dict] = []
    context = SimpleNamespace(enable_progress_bars=True)
    fake = SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: inits.append(kw), shutdown=lambda: None,
                           data=SimpleNamespace(DataContext=SimpleNamespace(get_current=lambda: context)))
    monkeypatch.setattr("retrieval.distributed.cluster.require_ray", lambda workers=1: (fake, None))
    with ray_session(None, 2):
        pass
    assert inits[0]["_system_config"]["worker_niceness"] == 0  # Ray's default 15 starves them beside a busy CPU
    inits[0]["_system_config"]["object_spilling_config"] = "…"  # ray.init adds its keys to the dict it is given
    with ray_session("ray://head:10001", 2):
        pass
    assert "_system_config" not in inits[1]  # a cluster someone else started keeps its own settings
    with ray_session(None, 2):
        pass
    assert inits[2]["_system_config"] == {"worker_niceness": 0}
