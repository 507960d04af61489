"""Real browser, hostile corpus (item 1): traces whose content, ids, scope, case query and facts hold Markdown images
pointing at a tiny HTTP server this test runs on 127.0.0.1, links, backticks and raw HTML. Every page is loaded
(Home, Corpus, Inspect with a query returning them and one explained via `i_id=`, Compare on that query, Tune,
Facts, Snapshots with a diff and "Grade B's top 10"): the image server must receive no request, and no <img> or
<a> in any page may point at the hosts the trace content names. Screenshots go to tests/artifacts/."""
from __future__ import annotations

import http.server
import threading
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

import pytest

from ui.serve import start_app, stop_app
from waits import painted, settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
SHOTS = Path(__file__).resolve().parent / "artifacts"
QUERY = "zanzibarquux"


class ImageServer:
    """Answers every GET with a 1×1 PNG and remembers the path: any request means markup rendered."""

    PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # the name http.server calls
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()
                self.wfile.write(ImageServer.PNG)

            def log_message(self, *args):  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hostile_corpus(port: int):
    """(traces, case query): markup in content, ids, one scope id and the case query, all aimed at `port`."""
    from retrieval.types import MemoryTrace

    def img(name: str) -> str:
        return f"![{name}](http://127.0.0.1:{port}/{name}.png)"

    link = "[l](http://example.invalid/x)"

    def trace(tid: str, content: str, scope_id: str = "maya") -> MemoryTrace:
        return MemoryTrace(id=tid, content=content, scope="user", scope_id=scope_id)

    traces = [
        trace(f"{img('id1')} zz-one", f"{QUERY} one {img('c1')} {link} `tick` <b>html</b>\n\n{img('after-blank')}"),
        trace(f"zz`two`{img('id2')}", f"{QUERY} two <img src=http://127.0.0.1:{port}/raw.png> {link}\n\n# heading"),
        trace("zz-three <b>bold</b>", f"{QUERY} three __strong__ *em* {link} {img('c3')}"),
        trace(f"[zz-four]({'http://example.invalid/id'})", f"I live in Lisbon {img('fact')} now. {QUERY} four."),
        trace("zz-plain", f"{QUERY} plain words about nothing in particular."),
        trace("zz-other-scope", f"{QUERY} in a hostile scope {img('c6')}", scope_id=f"x{img('scope')}"),
    ]
    return traces, f"{QUERY} {img('query')} {link}"


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory):
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.types import Scope
    from retrieval.workspace import Workspace

    images = ImageServer()
    root = tmp_path_factory.mktemp("browser-hostile")
    db = root / "db"
    ws = Workspace(str(db), embedder=HashingEmbedder(384))
    traces, case_query = hostile_corpus(images.port)
    ws.ingest(traces)
    maya = Scope("user", "maya")
    js = JudgmentStore(str(db))
    case = js.add_to_case("hostile", case_query, maya)
    for t, g in zip(traces[:4], (3, 2, 1, 2)):
        js.set_grade(maya, case_query, t.id, g)
    for weight in (0.6, 0.9):
        run_snapshot(ws, case, PipelineConfig.for_preset("hybrid", dense_weight=weight,
                                                         sparse_weight=round(1 - weight, 2)), js, label=f"w{weight}")
    proc, url = start_app(db, embedder="hashing", log=root / "streamlit.log", env={"RETRIEVAL_MODE": None,
                                                                                  "RETRIEVAL_AUTH": None})
    yield url, images, traces
    stop_app(proc)
    images.close()


def wait_text(page, text: str, timeout: int = 90_000):
    page.get_by_text(text).locator("visible=true").first.wait_for(timeout=timeout)


def pointing_at_content(page, port: int) -> list[str]:
    """Every <img src>, <a href>, srcset and <source> in the page that points at a host the trace content names."""
    urls = page.evaluate("""() => [
        ...[...document.querySelectorAll('img[src], source[src], image[href]')].map(e => e.getAttribute('src')
            || e.getAttribute('href')),
        ...[...document.querySelectorAll('img[srcset], source[srcset]')].map(e => e.getAttribute('srcset')),
        ...[...document.querySelectorAll('a[href]')].map(e => e.getAttribute('href'))]""")
    bad = []
    for u in urls:
        parts = urlsplit(urljoin(page.url, u or ""))
        if parts.hostname == "example.invalid" or (parts.hostname == "127.0.0.1" and parts.port == port):
            bad.append(u)
    return bad


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"hostile-{name}.png"), full_page=True, timeout=120_000)


def test_no_page_renders_trace_markup_as_an_image_or_a_link(browser, hostile_app):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    url, images, traces = hostile_app
    page = browser.new_page(viewport={"width": 1600, "height": 2200})
    page.set_default_timeout(90_000)
    explained = traces[0].id  # its content has an image after a blank line: highlight() must keep it in its <div>
    inspect = "/Inspect?" + urlencode({"i_q": QUERY, "i_scope": "user:maya", "i_id": explained})
    visits = [("home", "/", "Try an example"), ("corpus", "/Corpus", "Demo corpus"),
              ("inspect", inspect, "Why is it here?"), ("compare", "/Compare", "Compare two configurations"),
              ("tune", "/Tune", "labelled queries"), ("facts", "/Facts", "Fact graph"),
              ("snapshots", "/Snapshots", "Snapshots of this case")]
    seen = {}
    for name, path, marker in visits:
        page.goto(url + path)
        wait_text(page, marker)
        if name == "corpus":
            page.get_by_role("tab", name="Browse").click()
            wait_text(page, "trace(s) in")
            # the table's toolbar (drawn on hover): no unneutralised CSV download
            csv = page.locator("[data-testid=stElementToolbar] button[aria-label='Download as CSV']")
            settled(page)  # the Browse tab's table (another tab's is hidden) is drawn once the rerun ends
            for _ in range(10):  # a hover before the grid is interactive draws no toolbar: hover again
                page.mouse.move(0, 0)
                try:
                    page.locator("[data-testid=stDataFrame] >> visible=true").first.hover(timeout=5_000)
                    csv.first.wait_for(state="attached", timeout=5_000)
                    break
                except PlaywrightTimeout:
                    continue
            assert csv.count() >= 1 and not any(csv.nth(i).is_visible() for i in range(csv.count()))
        if name == "inspect":
            page.get_by_text("Grade the final list").first.click()  # the grade labels quote ids and content
            wait_text(page, QUERY)
            wait_text(page, "Rank and score per stage")
        if name == "compare":
            page.get_by_label("Query", exact=True).fill(QUERY)
            page.keyboard.press("Enter")
            wait_text(page, "Entered B's top-k")
        if name == "snapshots":
            page.get_by_text("Grade B's top 10 for this query").first.click()
            wait_text(page, "graded. A grade counts")
        painted(page)  # the run has ended and every <img> has loaded or failed: any fetch has reached the server
        shot(page, name)
        seen[name] = pointing_at_content(page, images.port)
        if name in ("inspect", "snapshots"):  # elsewhere it sits in canvas tables, charts and inputs
            assert QUERY in page.inner_text("body"), name  # the hostile text is on the page, as text
    painted(page)
    assert images.hits == [], images.hits  # no page made the browser fetch an image named by trace content
    assert {k: v for k, v in seen.items() if v} == {}
    page.close()
