"""kill -9 mid-ingest, then reopen: what LanceDB committed is there, BM25 and facts catch up (SPEC §12)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

from test_concurrency import assert_bm25_equals_a_rebuild

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import sys, time
from datetime import datetime, timezone
from retrieval.facts import RuleFactExtractor
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace
from retrieval.workspace.core import Workspace
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
mode, uri = sys.argv[1], sys.argv[2]

class SlowExtractor(RuleFactExtractor):
    # Stalls inside fact extraction of the third batch, after its traces were committed.
    def __init__(self):
        super().__init__()
        self.calls = 0
    def extract(self, text, trace_id=None, timestamp=None):
        if mode == "facts" and trace_id == "t2-0":
            print("extracting", flush=True)
            time.sleep(60)  # sleep-ok: holds the child inside fact extraction until the kill -9
        return super().extract(text, trace_id=trace_id, timestamp=timestamp)

ws = Workspace(uri, embedder=HashingEmbedder(64), fact_extractor=SlowExtractor())
for b in range(400):
    batch = [MemoryTrace(id=f"t{{b}}-{{i}}", content=f"batch {{b}} note {{i}}. I live in City{{b}}x{{i}}.",
                         scope="user", scope_id=f"u{{b % 3}}", created_at=NOW) for i in range(8)]
    ws.ingest(batch)
    print(f"committed {{b}}", flush=True)
"""


def run_and_kill(uri: str, mode: str) -> list[int]:
    """Start the child, kill -9 it (inside fact extraction, or after a few batches); return committed batches."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT)), mode, uri],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    committed: list[int] = []
    deadline = time.monotonic() + 60
    try:
        for line in proc.stdout:
            if line.startswith("committed"):
                committed.append(int(line.split()[1]))
            if (mode == "facts" and line.startswith("extracting")) or (mode == "anywhere" and len(committed) >= 4):
                if mode == "anywhere":
                    time.sleep(0.15)  # sleep-ok: the kill -9 lands somewhere inside the next ingest
                break
            assert time.monotonic() < deadline, "the child never reached the kill point"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    committed += [int(line.split()[1]) for line in proc.stdout if line.startswith("committed")]  # still in the pipe
    assert proc.returncode == -signal.SIGKILL
    return committed


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["facts", "anywhere"])
def test_kill_9_mid_ingest_then_reopen_is_in_step(tmp_path, mode):
    uri = str(tmp_path / "db")
    committed = run_and_kill(uri, mode)
    assert committed and committed == list(range(len(committed)))
    ws = Workspace(uri, embedder=HashingEmbedder(64))
    ids = {t.id for t in ws.store.all_traces()}
    assert {f"t{b}-{i}" for b in committed for i in range(8)} <= ids  # every reported commit survived
    assert len(ids) in (8 * len(committed), 8 * len(committed) + 8)  # plus at most the batch in flight
    st = ws.status()
    assert st["in_step"] and st["facts_pending"] == 0 and st["traces"] == len(ids)
    assert_bm25_equals_a_rebuild(ws)
    fresh = Workspace(str(tmp_path / "fresh"), embedder=HashingEmbedder(64))
    fresh.ingest(ws.store.all_traces())
    assert ws.facts.count() == fresh.facts.count() == len(ids)  # one "lives in" fact per trace
