"""The CLI on a store whose judgments or snapshots table is damaged: `case list` and `snapshot list` print
`error: …` and exit 2, never a traceback."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from demostore import copy_demo
from retrieval.models import HashingEmbedder

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_damaged")
    copy_demo(str(root / "base"))
    return root


def damaged_copy(built, name: str, table: str, snapshot: bool = False) -> str:
    db = built / name
    shutil.copytree(built / "base", db)
    if snapshot:
        from retrieval.judgments import JudgmentStore
        from retrieval.judgments.snapshots import run_snapshot
        from retrieval.pipeline.config import PipelineConfig
        from retrieval.workspace import Workspace

        run_snapshot(Workspace(str(db), embedder=HashingEmbedder(384)), "demo", PipelineConfig.for_preset("hybrid"),
                     JudgmentStore(str(db)), label="one")
    files = list((db / f"{table}.lance" / "data").glob("*"))
    assert files
    for f in files:
        f.write_bytes(b"garbage, not a lance file" * 3)
    return str(db)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "retrieval", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})


def check(out: subprocess.CompletedProcess, table: str) -> None:
    assert "Traceback" not in out.stderr, out.stderr[-1500:]
    assert out.returncode == 2, (out.returncode, out.stderr[-1500:])
    assert any(line.startswith(f"error: the {table} table of") for line in out.stderr.splitlines()), out.stderr


def test_case_list_on_a_damaged_judgments_table_is_one_error_line(built):
    check(cli("case", "list", "--db", damaged_copy(built, "judgments", "judgments")), "judgments")


def test_snapshot_list_on_a_damaged_snapshots_table_is_one_error_line(built):
    check(cli("snapshot", "list", "--db", damaged_copy(built, "snapshots", "snapshots", snapshot=True)), "snapshots")
