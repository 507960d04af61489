"""One process of tests/test_migrate_race.py: the first write of a newer version into a store an older version wrote
(a table missing the columns added since), racing the other processes' first write. Run as
`python tests/migrate_race_worker.py URI TABLE ID`; it opens the store, prints `ready`, waits for a line on stdin (the
start, given to every racer at once), writes one snapshot (TABLE `snapshots`) or one grade (`judgments`) with id ID,
and prints one JSON line: {"ok": true} or {"ok": false, "error": "..."}."""
from __future__ import annotations

import json
import sys

from retrieval.judgments import JudgmentStore, Snapshot, SnapshotQuery
from retrieval.pipeline.config import PipelineConfig
from retrieval.types import Scope

SCOPE = Scope("user", "u1")


def snapshot(sid: str) -> Snapshot:
    q = SnapshotQuery("q0", "query 0", SCOPE, {"final": ("a",)}, {"final": (1.0,)})
    return Snapshot(sid, "case", 1.0, PipelineConfig.for_preset("hybrid"), (q,), {"ndcg@10": 0.5})


def main(uri: str, table: str, ident: str) -> dict:
    js = JudgmentStore(uri)
    js._table(table)  # open at the old version before the race, as a running app or CLI has it
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        if table == "snapshots":
            js.save_snapshot(snapshot(ident))
        else:
            js.set_grade(SCOPE, "query 0", ident, 2, created_at=0.0)
    except Exception as exc:  # the test reports what failed
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
