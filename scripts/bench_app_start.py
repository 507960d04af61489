"""Time from `streamlit run` to a usable Home page on a built index, in headless Chromium.

Needs the demo index (make run builds it) and Debian's chromium. Run:
.venv/bin/python scripts/bench_app_start.py [--db data/lancedb] [--runs 3] [--out docs/bench_app.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from ui.serve import LAUNCH_ARGS, ROOT, free_port, wait_healthy


def main() -> int:
    import os
    import subprocess

    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="data/lancedb")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="docs/bench_app.json")
    args = ap.parse_args()
    if not (Path(args.db) / "traces.lance").exists():
        print(f"error: no index at {args.db}; run `make demo` first", file=sys.stderr)
        return 2
    health, home = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
        for _ in range(args.runs):
            port = free_port()
            env = {**os.environ, "RETRIEVAL_DB": str(Path(args.db).resolve()), "HF_HUB_OFFLINE": "1"}
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                     "--server.port", str(port), "--server.address", "127.0.0.1",
                                     "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                if not wait_healthy(f"http://127.0.0.1:{port}", proc, 120):
                    raise RuntimeError("streamlit did not start")
                health.append(time.perf_counter() - t0)
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{port}")
                page.get_by_text("Try an example").first.wait_for(timeout=60_000)
                page.locator("[data-testid=stMetric]").first.wait_for(timeout=60_000)
                home.append(time.perf_counter() - t0)
                page.close()
            finally:
                proc.terminate()
                proc.wait(timeout=20)
        browser.close()
    res = {"runs": args.runs, "server_healthy_s_median": round(statistics.median(health), 2),
           "home_ready_s_median": round(statistics.median(home), 2), "home_ready_s_max": round(max(home), 2)}
    print(json.dumps(res, indent=2))
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
