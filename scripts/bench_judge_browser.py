"""One judging step in a real browser: from a grade's key press on the Judge page to the next item on screen
(its progress counted and no element left from the item before), over every item of a pooled case, for two
raters in two browser contexts. Target: ≤ 300 ms p50.

Builds the demo store with the hashing embedder under a temporary folder (no model load), a case of two
queries and two snapshots of it. Run:
.venv/bin/python scripts/bench_judge_browser.py [--k 5] [--out docs/bench_judge.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ui.serve import CHROMIUM, LAUNCH_ARGS, rerun_after, settled, start_app

QUERIES = ("what is my dentist's name", "washing machine error")
SECRET = "SECRETLABEL"  # in the snapshots' labels: must never be on the page while judging
LONG = 120_000


def team_store(db) -> list[str]:
    """The demo store plus case `team` (two queries of user:maya, with notes) and two snapshots; their ids."""
    from retrieval.ingest.demo import build_demo_index
    from retrieval.judgments import Case, CaseQuery, JudgmentStore
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.types import Scope
    from retrieval.workspace.core import Workspace

    build_demo_index(str(db), log=lambda _: None, embedder=HashingEmbedder(384))
    ws, js = Workspace(str(db), embedder=HashingEmbedder(384)), JudgmentStore(str(db))
    js.save_case(Case("team", tuple(CaseQuery(f"t{n}", q, Scope("user", "maya"), note=f"the need behind {q}")
                                    for n, q in enumerate(QUERIES))))
    return [run_snapshot(ws, "team", PipelineConfig.for_preset(p, dense_weight=w, sparse_weight=1 - w), js,
                         label=f"{SECRET}-{p}", k=10).id for p, w in (("hybrid", 0.9), ("agentos", 0.2))]


def button(page, text: str):
    return page.locator("[data-testid=stButton] button", has_text=text).first


def open_judge(browser, url: str, rater: str, k: int):
    """A fresh browser context (its own session) on the Judge page as `rater`, judging case `team` at pool k."""
    page = browser.new_context(viewport={"width": 1500, "height": 2600}, accept_downloads=True).new_page()
    page.goto(f"{url}/Judge?rater={rater}")
    page.locator("[data-testid=stSelectbox]", has_text="Case").first.wait_for(timeout=LONG)
    settled(page, LONG)  # a pick during the first run is lost
    page.locator("[data-testid=stSelectbox]", has_text="Case").first.click()
    page.get_by_role("option", name="team").first.click()
    page.get_by_text(f"{SECRET}-hybrid").first.wait_for(timeout=LONG)
    box = page.locator('input[aria-label="k (pool depth per snapshot)"]')
    if box.input_value() != str(k):  # a changed k reruns the page; a click during that run is lost
        box.fill(str(k))
        rerun_after(page, lambda: box.press("Enter"), LONG)
    button(page, "Start judging").click()
    page.get_by_text("graded by").first.wait_for(timeout=LONG)
    page.get_by_text("Pool the top results of").first.wait_for(state="detached", timeout=LONG)
    return page


def progress_text(page) -> str:
    return page.locator("[data-testid=stProgress]").first.inner_text()


def judge_all(page, rater: str, key: str) -> list[float]:
    """Press `key` on every item of the queue; the milliseconds from each press to the next item on screen."""
    total = int(progress_text(page).split(" of ")[1].split(" ")[0])
    steps = []
    page.locator("h1").first.click()  # focus on the page, not in a text box
    for _ in range(total):
        before = int(progress_text(page).split(" graded by")[0].rsplit("·", 1)[1])
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.wait_for_function(
            "([want, who]) => [...document.querySelectorAll('[data-testid=stProgress]')].some("
            "e => e.innerText.includes(`${want} graded by ${who}`)) && !document.querySelector('[data-stale=true]')",
            arg=[before + 1, rater], timeout=LONG)  # counted, and no element left over from the previous item
        steps.append((time.perf_counter() - t0) * 1000)
    return steps


def move_all(page, times: int) -> list[float]:
    """Press → `times` times (no write): the milliseconds from each press to the next item on screen. The part
    of a judging step that is Streamlit's round trip and the fragment's rerun, without the grade's write."""
    steps = []
    page.locator("h1").first.click()
    for _ in range(times):
        item = progress_text(page).split(" of ")[0]
        t0 = time.perf_counter()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "was => [...document.querySelectorAll('[data-testid=stProgress]')].some(e => e.innerText.includes(' of ')"
            " && !e.innerText.startsWith(was + ' of ')) && !document.querySelector('[data-stale=true]')",
            arg=item, timeout=LONG)
        steps.append((time.perf_counter() - t0) * 1000)
    return steps


FLOOR_APP = """
import streamlit as st
st.title("floor")
st.session_state.setdefault("n", 0)
def inc():
    st.session_state.n += 1
@st.fragment
def step():
    n = st.session_state.n
    st.progress(min(n, 100) / 100, text=f"Item {n} of 100 · {n} graded by x")
    st.button("next", shortcut="Right", on_click=inc)
step()
"""


def floor_steps(browser, times: int = 15) -> list[float]:
    """The same key press → screen round trip on a one-button fragment app: Streamlit's own floor on this machine
    at this load (what no page can beat)."""
    import subprocess

    from ui.serve import free_port, wait_healthy

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "app.py").write_text(FLOOR_APP)
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false"], cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            if not wait_healthy(url, proc, 60):
                raise RuntimeError("the floor app did not start")
            page = browser.new_page()
            page.goto(url)
            page.get_by_text("graded by").first.wait_for(timeout=LONG)
            return move_all(page, times)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def summary(steps: list[float]) -> dict:
    steps = sorted(steps)
    return {"steps": len(steps), "p50_ms": round(statistics.median(steps), 1),
            "p90_ms": round(steps[int(0.9 * (len(steps) - 1))], 1), "max_ms": round(steps[-1], 1)}


def main() -> int:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5, help="pool depth per snapshot")
    ap.add_argument("--out", default="docs/bench_judge.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        team_store(db)
        proc, url = start_app(db, embedder="hashing")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
                alice = open_judge(browser, url, "alice", args.k)
                moves = move_all(alice, 10)
                steps = judge_all(alice, "alice", "3")
                steps += judge_all(open_judge(browser, url, "bob", args.k), "bob", "1")
                floor = floor_steps(browser)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    out = {**summary(steps), "move_only": summary(moves), "streamlit_floor": summary(floor), "target_ms": 300,
           "k": args.k, "load_avg_1m": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
