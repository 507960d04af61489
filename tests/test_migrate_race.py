"""A store written before a column was added (`tables.ADDED_COLUMNS`) gains it on its first write. Several processes
making that first write at the same instant (a deployed store after an upgrade) each add the column; whichever
loses the race reads the table again, finds the column there and writes. Every write is stored, none fails, and
none reports the table as damaged. Separate processes (tests/migrate_race_worker.py), for the snapshots and the
judgments table, a few rounds each."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.judgments import JudgmentStore
from retrieval.judgments.tables import ADDED_COLUMNS

WORKER = Path(__file__).with_name("migrate_race_worker.py")
ROOT = Path(__file__).resolve().parents[1]
RACERS, ROUNDS = 4, 2


def old_store(uri: str, table: str) -> None:
    """A store as the version before the added columns wrote it: one row, the table without them."""
    from migrate_race_worker import SCOPE, snapshot

    js = JudgmentStore(uri)
    if table == "snapshots":
        js.save_snapshot(snapshot("old"))
    else:
        js.set_grade(SCOPE, "query 0", "old", 1, created_at=0.0)
    js._table(table).drop_columns(list(ADDED_COLUMNS[table]))
    assert not any(JudgmentStore(uri).has_column(table, c) for c in ADDED_COLUMNS[table])


def ready(p: subprocess.Popen, timeout: float = 300) -> None:
    """Wait for the racer's "ready" line (a racer that dies or hangs fails the test with its stderr, never hangs it)."""
    def read() -> str:
        while (line := p.stdout.readline()) and line.strip() != "ready":
            pass
        return line

    with ThreadPoolExecutor(1) as pool:
        try:
            line = pool.submit(read).result(timeout)
        except FutureTimeout:
            p.kill()
            line = ""
    assert line, p.communicate(timeout=60)[1][-2000:]


def race(uri: str, table: str, ids: list[str], tmp: Path) -> list[dict]:
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, str(WORKER), uri, table, i], cwd=tmp, env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in ids]
    for p in procs:  # every racer has its table open at the old version before any is let go
        ready(p)
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for i, p in zip(ids, procs):
        stdout, stderr = p.communicate(timeout=300)
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        out.append({"id": i, **(json.loads(lines[-1]) if lines else {"ok": False, "error": stderr[-2000:]})})
    return out


@pytest.mark.parametrize("table", ["snapshots", "judgments"])
def test_processes_making_the_first_write_after_an_upgrade_at_once_all_store_theirs(tmp_path, table):
    for r in range(ROUNDS):
        uri = str(tmp_path / f"db{r}")
        old_store(uri, table)
        ids = [f"r{r}-p{n}" for n in range(RACERS)]
        results = race(uri, table, ids, tmp_path)
        failed = [x for x in results if not x["ok"]]
        assert not failed, f"round {r}: {failed}"
        js = JudgmentStore(uri)
        assert all(js.has_column(table, c) for c in ADDED_COLUMNS[table])
        if table == "snapshots":
            assert sorted(s.id for s in js.snapshots()) == sorted(["old", *ids])  # every run stored and readable
            assert {r["id"]: r["scopes"] for r in js._snapshot_scopes()} == \
                {"old": None, **{i: ["user:u1"] for i in ids}}
        else:
            assert sorted(j.trace_id for j in js.judgments()) == sorted(["old", *ids])
