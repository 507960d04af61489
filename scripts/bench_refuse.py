"""Live tuning in the browser (issue 35) against the server-side path, in one run: Playwright + headless Debian
Chromium at 1366 × 768 on the demo store, median and p90 of 20 after one warm-up each, the 1-minute load beside each.

Live panel (ui/refuse.py):
(a) a Dense weight input event (the value a drag step sets, alternating 0 and 0.5 so the list changes) → the Final
    table and the rank flow repainted: timed inside the page from the event to the frame after the repaint
    (requestAnimationFrame, then a task); the rows must have changed and the rank flow's Final labels must be the new
    top 10 (target ≤ 50 ms p90); and the same in case mode
    (the demo case's 45 queries re-fused, its mean nDCG@10 repainted and changed: `live_case_slider`);
(b) a click on a row → the panel's explanation names that row, timed inside the page like (a) (≤ 100 ms p90); and
    the same click as a real input (`live_row_click_playwright`, ≤ 100 ms p90): the row's centre read first, then
    `page.mouse.click` (CDP Input.dispatchMouseEvent, press and release), timed from Python's wall clock just
    before it is sent to the page's stamp of the frame after the explanation is drawn (requestAnimationFrame, then
    a task), the two clocks aligned by a round trip before each click (error ≤ ~1 ms). Its parts per click go beside
    it (`parts`, `samples`): to the input event's timestamp, event → explanation drawn, drawn → painted, the click
    call returning, the driver's wait seeing the painted stamp, and the server's script run starting (the click's
    own rerun). `live_row_click_locator` is the measure this replaced, kept for comparison: `locator.click()`
    (scroll, visible/stable/hit-test actionability) and a wait scanning every element on each frame, timed until
    that wait returns in Python (with the same parts);
(c) Home's first example → the panel's rows drawn (they take clicks from the moment they are drawn; ≤ 2 s);
(d) one real mouse drag across the slider (20 moves): websocket messages sent between press and release (expect 0).
Server-side path, the same run (scripts/bench_browser.py's steps): the sidebar's Dense weight moved one step → the
stage table's Final column repainted; a stage-table row click → the server's explanation; Home → the page ready.

Run: .venv/bin/python scripts/bench_refuse.py [--embedder minilm] [--n 20] [--out docs/bench_refuse.json]
Loaded (the issue's second measurement): `--burn 5 --min-load 4 --out docs/bench_refuse-loaded.json` starts 5 CPU
burners (busy Python loops) and measures once the 1-minute load average reaches 4 (two burners cannot lift an
otherwise idle 2-core machine's average to 4: each holds at most one run-queue slot); the load is recorded beside
every step and the burners are stopped at the end.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_browser as server  # the server-side steps, measured beside the live ones

from ui.serve import CHROMIUM, LAUNCH_ARGS, settled, start_app

ROWS = "table.rf-final tr[data-id]"
TARGETS = {"live_slider": 50, "live_case_slider": 50, "live_row_click": 100, "live_row_click_playwright": 100,
           "live_home_example": 2000, "ws_messages_during_drag": 0}
# In the page: set the live Dense weight, fire `input`, wait for the frame after the repaint; the ms and the rows.
INPUT_JS = """async (value) => {
  const host = [...document.querySelectorAll('*')].find(e => e.shadowRoot && e.shadowRoot.querySelector('.rf'));
  const root = host.shadowRoot, input = root.querySelector('input[data-knob=dense_weight]');
  const ids = (sel) => [...root.querySelectorAll(sel)].map(r => r.dataset.id);
  const rows = () => ids('table.rf-final tr[data-id]').join('|');
  const flow = () => ids('svg.rf-flow text.rf-label[data-id]:not([display=none])').join('|');
  const before = rows();
  const t0 = performance.now();
  input.value = value;
  input.dispatchEvent(new Event('input', { bubbles: true }));
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const ms = performance.now() - t0;
  const top = rows().split('|').slice(0, 10).join('|');  // the rank flow's Final column shows the top 10
  return { ms, changed: rows() !== before && flow() === top, rows: rows() };
}"""


def live_page(browser, url: str):
    page = browser.new_page(viewport=server.VIEWPORT)
    page.set_default_timeout(server.LONG)
    page.goto(url + server.LINK)
    page.locator(ROWS).first.wait_for()
    page.locator(".rf-status", has_text="The saved setting.").wait_for()
    page.locator(server.EXPLAINED).wait_for()
    page.wait_for_timeout(1500)
    return page


def live_slider(page):
    def step(i: int) -> float:
        out = page.evaluate(INPUT_JS, "0" if i % 2 else "0.5")  # the warm-up (i = -1) moves off 0.5 first
        if not out["changed"]:
            raise RuntimeError(f"the live Final table did not change on step {i}: {out['rows']}")
        return out["ms"]
    return step


# The same in case mode: every query of the case re-fused, the case's mean repainted (it must change).
CASE_INPUT_JS = """async (value) => {
  const host = [...document.querySelectorAll('*')].find(e => e.shadowRoot && e.shadowRoot.querySelector('.rf'));
  const root = host.shadowRoot, input = root.querySelector('input[data-knob=dense_weight]');
  const mean = () => root.querySelector('.rf-case-metrics [data-ndcg]').dataset.ndcg;
  const before = mean();
  const t0 = performance.now();
  input.value = value;
  input.dispatchEvent(new Event('input', { bubbles: true }));
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return { ms: performance.now() - t0, changed: mean() !== before, mean: mean() };
}"""


def live_case_slider(page):
    """(a) in case mode: the demo case chosen, each Dense weight input re-fuses all its queries (timed in the page)."""
    for attempt in range(3):  # a rerun still landing (the row clicks' explained ids) can close the list again
        page.locator("[data-testid=stSelectbox]", has_text="Case-wide metric").click()
        try:
            page.get_by_role("option", name="case demo").click(timeout=10_000)
            break
        except server.PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
    page.locator(".rf[data-mode=case] .rf-case-metrics").wait_for()
    page.locator(".rf-status", has_text="The saved setting.").wait_for()

    def step(i: int) -> float:
        out = page.evaluate(CASE_INPUT_JS, "0" if i % 2 else "0.5")
        if not out["changed"]:
            raise RuntimeError(f"the case's mean did not change on step {i}: {out['mean']}")
        return out["ms"]
    return step


CLICK_JS = """async (id) => {
  const host = [...document.querySelectorAll('*')].find(e => e.shadowRoot && e.shadowRoot.querySelector('.rf'));
  const root = host.shadowRoot, row = root.querySelector(`tr[data-id="${CSS.escape(id)}"] .rf-text`);
  const t0 = performance.now();
  row.click();
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return { ms: performance.now() - t0, ok: root.querySelector('.rf-explain').dataset.explained === id };
}"""


def server_caught_up(page, tid: str) -> None:
    """The server's rerun for the explained id has drawn it (its "Trace id to explain" box names it) and the page is
    idle: the next click starts from a settled page, as a person's would."""
    page.wait_for_function("id => [...document.querySelectorAll(\"input[aria-label='Trace id to explain']\")]"
                           ".some(e => e.value === id)", arg=tid, polling="raf")
    settled(page)


def live_row_click_in_page(page):
    """A click event on a row's text → the frame after the explanation is drawn, timed inside the page."""
    def step(i: int) -> float:
        tid = next_row(page, i)
        out = page.evaluate(CLICK_JS, tid)
        if not out["ok"]:
            raise RuntimeError(f"the live panel did not explain {tid}")
        server_caught_up(page, tid)
        return out["ms"]
    return step


# Installed once on the live page: the panel's host held (no page scan per poll), and stamps on the page's clock for
# one armed click: the input events' own timestamps, the explanation drawn (a MutationObserver on its
# `data-explained`, a microtask after the click handler) and painted (the frame after it: requestAnimationFrame,
# then a task, as CLICK_JS), and the script runs starting and ending around it.
WATCH_JS = """() => {
  const host = [...document.querySelectorAll('*')].find(e => e.shadowRoot && e.shadowRoot.querySelector('.rf'));
  const ex = host.shadowRoot.querySelector('.rf-explain'), app = document.querySelector('[data-testid=stApp]');
  const W = window.__rfClick = { host, id: null, stamps: {} };
  const stamp = (k, t) => { if (W.id !== null && W.stamps[k] === undefined) W.stamps[k] = t; };
  for (const t of ['pointerdown', 'click']) window.addEventListener(t, e => stamp(t, e.timeStamp), true);
  new MutationObserver(() => {
    if (ex.dataset.explained !== W.id) return;
    stamp('drawn', performance.now());
    requestAnimationFrame(() => setTimeout(() => stamp('painted', performance.now()), 0));
  }).observe(ex, { attributes: true, attributeFilter: ['data-explained'] });
  new MutationObserver(() => stamp(app.getAttribute('data-test-script-state') === 'running' ? 'run' : 'run_end',
                                   performance.now()))
    .observe(app, { attributes: true, attributeFilter: ['data-test-script-state'] });
}"""
ARM_JS = "id => { window.__rfClick.id = id; window.__rfClick.stamps = {}; }"
PAINTED_JS = "id => window.__rfClick.id === id && window.__rfClick.stamps.painted !== undefined"
# The page's wall clock (ms since the epoch): the time origin plus the monotonic clock.
NOW_JS = "() => performance.timeOrigin + performance.now()"
PARTS = ("to_event", "event_to_drawn", "drawn_to_painted", "painted", "call_returned", "driver_saw", "run_started")


def clock_offset(page) -> float:
    """The page's wall clock minus Python's (ms), from one evaluate round trip (its error is at most half of it,
    ~1 ms here)."""
    a = time.time() * 1000
    there = page.evaluate(NOW_JS)
    return there - (a + time.time() * 1000) / 2


def click_parts(page, w0: float, offset: float, t0: float, t1: float, t2: float) -> dict:
    """One armed click's parts, in ms from `w0` (Python's wall clock just before the click was sent): the input
    event's timestamp, the explanation drawn and painted, the click call returning, the driver seeing the painted
    stamp, and the script run (the server's explanation) starting."""
    origin, stamps = page.evaluate("() => [performance.timeOrigin, window.__rfClick.stamps]")
    at = {k: round(origin + v - offset - w0, 1) for k, v in stamps.items()}
    return {"to_event": at.get("pointerdown"), "event_to_drawn": round(at["drawn"] - at["pointerdown"], 1),
            "drawn_to_painted": round(at["painted"] - at["drawn"], 1), "painted": at["painted"],
            "call_returned": round((t1 - t0) * 1000, 1), "driver_saw": round((t2 - t0) * 1000, 1),
            "run_started": at.get("run")}


def next_row(page, i: int) -> str:
    """Step `i`'s row: of the rows not explained now, the 2nd to 5th in turn."""
    ids = page.locator(ROWS).evaluate_all("rows => rows.map(r => r.dataset.id)")
    current = page.locator(".rf-explain").get_attribute("data-explained")
    return [t for t in ids if t != current][i % 4 + 1]


def live_row_click(page, parts: list[dict], how: str = "mouse"):
    """A person's click on a row → the explanation painted. `how="mouse"` (the benchmark, `live_row_click_playwright`):
    the row's centre read first, then one real input event pair (`page.mouse.click`: CDP Input.dispatchMouseEvent
    press and release) timed from Python's wall clock just before it is sent to the page's stamp of the frame after
    the explanation is drawn (the two clocks aligned by a round trip before each click). `how="locator"` (the old
    measure, `live_row_click_locator`): Playwright's `locator.click()` (scroll, visible/stable/hit-test
    actionability, then the same events) and a wait scanning every element for the explanation on each animation
    frame, timed by Python until that wait returns. Each click's parts go to `parts` (`click_parts`)."""
    page.evaluate(WATCH_JS)

    def step(i: int) -> float:
        tid = next_row(page, i)
        cell = page.locator(f"table.rf-final tr[data-id='{tid}'] .rf-text")
        cell.scroll_into_view_if_needed()
        box = cell.bounding_box()
        offset = clock_offset(page)
        page.evaluate(ARM_JS, tid)
        w0, t0 = time.time() * 1000, time.perf_counter()
        if how == "mouse":
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            t1 = time.perf_counter()
            page.wait_for_function(PAINTED_JS, arg=tid, polling="raf")
        else:
            cell.click()
            t1 = time.perf_counter()
            page.wait_for_function("id => [...document.querySelectorAll('*')].some(e => e.shadowRoot && "
                                   "e.shadowRoot.querySelector(`.rf-explain[data-explained=\"${id}\"]`))", arg=tid,
                                   polling="raf")
        t2 = time.perf_counter()
        page.wait_for_function(PAINTED_JS, arg=tid, polling="raf")
        got = click_parts(page, w0, offset, t0, t1, t2)
        if i >= 0:
            parts.append(got)
        server_caught_up(page, tid)
        return got["painted"] if how == "mouse" else got["driver_saw"]
    return step


def click_summary(parts: list[dict]) -> dict:
    """Median and p90 of each part over the timed clicks (a part that did not happen, e.g. no run started before
    the stamps were read, is left out of its own numbers), and the samples in the order taken."""
    out: dict = {}
    for k in PARTS:
        xs = sorted(p[k] for p in parts if p.get(k) is not None)
        if xs:
            out[k] = {"median_ms": round(statistics.median(xs), 1), "p90_ms": round(xs[int(0.9 * (len(xs) - 1))], 1),
                      "max_ms": xs[-1], "n": len(xs)}
    return {"parts": out, "samples": parts}


def live_home_example(browser, url: str):
    def step(_: int) -> float:
        for _attempt in range(3):
            page = browser.new_page(viewport=server.VIEWPORT)
            page.set_default_timeout(server.LONG)
            page.goto(url)
            link = page.locator("[data-testid=stPageLink] a", has_text="Open in Inspect").first
            link.wait_for()
            page.wait_for_timeout(1500)
            t0 = time.perf_counter()
            link.click()
            try:
                page.wait_for_url("**/Inspect?**", timeout=20_000)
            except server.PlaywrightTimeout:
                page.close()
                continue
            page.locator(ROWS).first.wait_for()
            ms = (time.perf_counter() - t0) * 1000
            page.close()
            return ms
        raise RuntimeError("three clicks on Home's example started no navigation")
    return step


def drag_messages(browser, url: str) -> dict:
    """A real drag of the live Dense weight (20 mouse moves): websocket frames sent while the button is down."""
    page = browser.new_page(viewport=server.VIEWPORT)
    page.set_default_timeout(server.LONG)
    frames: list[float] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda _f: frames.append(time.perf_counter())))
    page.goto(url + server.LINK)
    page.locator(ROWS).first.wait_for()
    page.locator(".rf-status", has_text="The saved setting.").wait_for()
    page.wait_for_timeout(2000)
    box = page.locator("input[aria-label='Live dense weight']").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.45, y)
    page.mouse.down()
    at_press = len(frames)
    page.mouse.move(box["x"] + 1, y, steps=10)
    page.mouse.move(box["x"] + box["width"] * 0.9, y, steps=10)
    renders = int(page.locator(".rf").get_attribute("data-renders"))
    during = len(frames) - at_press
    value = float(page.locator("input[data-knob=dense_weight]").input_value())
    page.mouse.up()
    page.wait_for_function("v => Number(((new URLSearchParams(location.search).get('i_settings') || '')"
                           ".match(/dense_weight=([^,)]+)/) || [])[1]) === v", arg=value)
    out = {"moves": 20, "renders_while_down": renders, "ws_messages_during_drag": during,
           "ws_messages_after_release": len(frames) - at_press - during}
    page.close()
    return out


def measure(db: Path, embedder: str, n: int, n_home: int) -> dict:
    from playwright.sync_api import sync_playwright

    proc, url = start_app(db, embedder=embedder, timeout_s=120)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = live_page(browser, url)
            live = {"live_slider": server.timed(n, live_slider(page)),
                    "live_row_click": server.timed(n, live_row_click_in_page(page))}
            for name, how in (("live_row_click_playwright", "mouse"), ("live_row_click_locator", "locator")):
                parts: list[dict] = []
                live[name] = {**server.timed(n, live_row_click(page, parts, how)), **click_summary(parts)}
            live["live_case_slider"] = server.timed(n, live_case_slider(page))
            page.close()
            live["live_home_example"] = server.timed(n_home, live_home_example(browser, url))
            drag = drag_messages(browser, url)
            page = server.open_inspect(browser, url)
            before = {"slider": server.timed(n, server.slider(page)),
                      "row_click": server.timed(n, server.row_click(page))}
            page.close()
            before["home_example"] = server.timed(n_home, server.home_example(browser, url))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"live": live, "drag": drag, "server_side": before}


@contextlib.contextmanager
def burners(n: int, min_load: float, wait_s: float = 600):
    """`n` busy processes for the length of the block, entered once the 1-minute load average reaches `min_load`;
    yields what to record (the burners, the load when measuring began)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        deadline = time.monotonic() + wait_s
        while n and os.getloadavg()[0] < min_load:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the load average stayed below {min_load} with {n} burners for {wait_s:.0f} s; "
                                   "start more (--burn)")
            time.sleep(5)  # the kernel's load average moves every 5 s
        yield {"burners": n, "min_load": min_load, "load_at_start": round(os.getloadavg()[0], 2)}
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", help="a built store (default: data/lancedb when it exists, else the demo corpus)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--n-home", type=int, default=None, help="runs of the two Home steps (default --n; each is a "
                    "fresh session, the slowest step by far on a loaded machine)")
    ap.add_argument("--out", default="docs/bench_refuse.json")
    ap.add_argument("--burn", type=int, default=0, help="CPU burners to run while measuring (the loaded run)")
    ap.add_argument("--min-load", type=float, default=0.0, help="with --burn: measure once the 1-minute load "
                    "average reaches this")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path("data/lancedb")
        if args.db is None and not (db / "traces.lance").exists():
            db = server.demo_store(tmp, args.embedder)
        with burners(args.burn, args.min_load) as load:
            out = measure(db, args.embedder, args.n, args.n_home or args.n)
        out["load"] = {**load, "load_at_end": round(os.getloadavg()[0], 2)}
    out.update(targets_ms=TARGETS, viewport=server.VIEWPORT, embedder=args.embedder, cores=os.cpu_count(),
               load_avg_1m=round(os.getloadavg()[0], 2), when=time.strftime("%Y-%m-%d %H:%M"))
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    summary = {k: {m: v[m] for m in ("median_ms", "p90_ms", "load_avg_1m")} for part in ("live", "server_side")
               for k, v in out[part].items()}
    print(json.dumps({**summary, "drag": out["drag"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
