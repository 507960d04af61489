"""Driving the app from outside: start `streamlit run app.py` on a free port and wait until it is
healthy, and the flags Debian's headless Chromium needs here. Shared by the browser tests, the
browser benchmarks and the screenshot script (no Streamlit import: this runs in the driver process).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling hosts this closed network refuses.
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(db: Path, embedder: str = "minilm", *, env: dict[str, str] | None = None, log: Path | None = None,
              timeout_s: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Serve the app on the store `db`; returns the process and its URL once `/_stcore/health` says ok.

    `env` adds to (and a value of None removes from) this process's environment; the log goes to
    `log` (default: beside the store). Raises RuntimeError with the log's tail if it does not start.
    """
    port = free_port()
    full = {**os.environ, "RETRIEVAL_DB": str(db), "RETRIEVAL_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    log = log or Path(db).parent / f"streamlit-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false"], cwd=ROOT, env=full, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    if wait_healthy(url, proc, timeout_s):
        return proc, url
    proc.terminate()
    raise RuntimeError(f"streamlit did not start: {log.read_text()[-2000:]}")


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.05)
    return False
