"""Run by tests/test_distributed.py with an interpreter that has the `ray` extra, in a private network namespace
when it can: one local Ray (2 CPUs) for every step, each step typed as a user would type it (the CLI)."""
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import lancedb

from retrieval.cli.main import main
from retrieval.distributed import ray_session


def run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


def version(db: Path) -> int:
    return int(lancedb.connect(str(db)).open_table("traces").version)


def job(root: Path) -> dict:
    db = str(root / "ray-store")
    steps: dict = {}
    with ray_session(None, 2) as ray:  # the CLI calls below join this session instead of starting their own
        # a worker's niceness against this driver's: Ray's default renices workers to 15 (starved beside a busy CPU)
        steps["niceness"] = {"driver": os.nice(0), "worker": ray.get(ray.remote(lambda: os.nice(0)).remote())}
        steps["ingest"] = run(["ingest", str(root / "first.jsonl"), "--db", db, "--embedder", "hashing", "--ray"])
        steps["ingest"]["version"] = version(root / "ray-store")
        steps["upsert"] = run(["ingest", str(root / "second.jsonl"), "--db", db, "--ray"])
        steps["upsert"]["version"] = version(root / "ray-store")
        steps["mismatch"] = run(["ingest", str(root / "second.jsonl"), "--db", db, "--embedder", "minilm", "--ray"])
        steps["mismatch"]["version"] = version(root / "ray-store")
        steps["reembed"] = run(["reembed", "--embedder", "minilm", "--db", db, "--ray", "--batch-size", "64"])
        steps["reembed"]["version"] = version(root / "ray-store")
    return steps


if __name__ == "__main__":
    print(json.dumps(job(Path(sys.argv[1]))))
