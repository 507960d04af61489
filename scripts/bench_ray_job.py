"""Time the test suite's Ray job (tests/ray_job.py, as tests/test_distributed.py's fixture runs it: ingest 200 +
upsert 30 with hashing, re-embed 210 with MiniLM, one local Ray with 2 CPUs) beside N CPU-bound processes.

    python scripts/bench_ray_job.py --burners 6 --until-load 6

Prints one JSON line: wall seconds, the job's exit code, the 1-minute load at its start and end and the worker
niceness the job reports. The burners are started here and always stopped. Needs `.venv-ray` (`make install-ray`).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_distributed import _in_private_network, _write_files, ray_python  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burners", type=int, default=0, help="CPU-bound processes to run beside the job")
    ap.add_argument("--until-load", type=float, default=0.0,
                    help="start the job once the 1-minute load has reached this (the burners warm it up)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    args = ap.parse_args()
    py = ray_python()
    if py is None:
        raise SystemExit("the ray extra is missing: run `make install-ray`")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    try:
        deadline = time.monotonic() + 600
        while os.getloadavg()[0] < args.until_load and time.monotonic() < deadline:
            time.sleep(5)
        load_at_start = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _write_files(root)
            env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                   "RAY_USAGE_STATS_ENABLED": "0"}
            start = time.monotonic()
            out = subprocess.run(_in_private_network([py, str(ROOT / "tests" / "ray_job.py"), str(root)]),
                                 capture_output=True, text=True, timeout=args.timeout, env=env, cwd=root)
            wall = time.monotonic() - start
    finally:
        for b in burners:
            b.kill()
    steps = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {}
    print(json.dumps({"burners": args.burners, "seconds": round(wall, 1), "rc": out.returncode,
                      "load_1m": [round(load_at_start, 2), round(os.getloadavg()[0], 2)],
                      "worker_niceness": steps.get("niceness", {}).get("worker") if steps else None}))
    return out.returncode


if __name__ == "__main__":
    raise SystemExit(main())
