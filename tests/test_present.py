"""Presenter mode: the story helpers (ui/present.py) on real search results, and the page on the demo store."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from retrieval.ingest.demo import load_examples
from retrieval.pipeline.config import PipelineConfig
from retrieval.workspace.retrievers import run_config
from retrieval.types import Scope
from tests.apphelpers import demo_app_env, open_page
from tests.waits import painted, wait_until
from ui import present

TIMEOUT = 120
EXAMPLES = load_examples()
STEPS = present.steps(EXAMPLES)
BY_ID = {s.id: s for s in STEPS}
JARGON = ("bm25", "rrf", "dense", "sparse", "normalis", "rerank", "hyde", "fusion", "threshold", "valence")


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "present")


@pytest.fixture(scope="module")
def ws(demo_env):
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    return Workspace(demo_env, embedder=HashingEmbedder(384))


def search(ws, step):
    cfg = present.step_config(step, [step.scope])
    return run_config(ws, cfg, step.query, Scope.parse(step.scope))[0]


# ---------------------------------------------------------------- pure helpers
def test_one_step_per_example_in_order_each_with_a_story():
    assert [s.id for s in STEPS] == [e["id"] for e in EXAMPLES] and len(STEPS) >= 5
    assert [s.number for s in STEPS] == list(range(1, len(STEPS) + 1))
    assert {s.total for s in STEPS} == {len(STEPS)}
    assert all(s.story is present.STORIES[s.id] for s in STEPS)  # every shipped example has plain words


def test_the_stories_and_setup_words_use_no_jargon():
    for step in STEPS:
        words = " ".join([step.story.headline, step.story.ask, step.story.claim, step.story.why,
                          *present.setup_words(present.step_config(step, [step.scope]))]).lower()
        assert not [j for j in JARGON if j in words], step.id


def test_an_example_without_a_story_uses_its_own_title():
    ex = {"id": "new", "title": "A new one", "query": "q", "scope": "user:x", "look_for": "look", "params": {}}
    (step,) = present.steps([ex])
    assert step.story.headline == "A new one" and step.story.claim == "look" and step.target is None


def test_step_config_reads_the_example_link_like_inspect():
    assert present.step_config(BY_ID["identifier"], ["user:priya"]) == PipelineConfig()
    split = present.step_config(BY_ID["split"], ["user:maya"])
    assert (split.reranker, split.settings.split_threshold, split.settings.rerank_weight) == ("embedding", 1.0, 0.6)
    assert present.step_config(BY_ID["hyde"], ["user:maya"]).hyde is True
    base = PipelineConfig().with_(recall_top_k=7)
    # on top of the page's start
    assert present.step_config(BY_ID["mood"], ["user:maya"], base).settings.recall_top_k == 7
    assert present.step_config(BY_ID["mood"], ["user:maya"]).valence == 0.9
    words = present.setup_words(present.step_config(BY_ID["split"], ["user:maya"]))
    assert any("second look" in w for w in words) and any("splits long notes" in w for w in words)


def test_plain_words_for_facts_and_jargon():
    assert present.fact_words("user livesIn Berlin (as of 2025-08-20).") == "Lives in Berlin (as of 2025-08-20)."
    assert present.fact_words("user worksAt Northwind") == "Works at Northwind"
    out = present.plainer("convex with theoretical normalisation; BM25 and dense; BM25s stays")
    assert "scores put on the same 0–1 scale" in out and "keyword search and meaning search" in out
    assert "BM25s" in out  # only whole terms are replaced
    assert present.rank_in(["a", "b"], "b") == 2 and present.rank_in(["a"], "z") is None
    assert present.rank_in(["a"], None) is None


def fake_result(final, dense, sparse, merged=(), **diag):
    d = SimpleNamespace(stage_ids={"final": final, "dense": dense, "sparse": sparse, "merged": list(merged)},
                        splits=diag.pop("splits", {}), hyde=None, facts=[], fact_ids=[], **diag)
    traces = [SimpleNamespace(id=t, content=f"text of {t}") for t in final]
    return SimpleNamespace(traces=traces, diagnostics=d)


def test_the_identifier_claim_needs_keyword_search_alone_and_the_first_place():
    """Issue 32 item 14: "…and it comes out on top" was ticked with "In the final list it is #2" under it."""
    step = BY_ID["identifier"]
    assert "comes out on top" in step.story.claim and step.story.top == 1
    second = present.check(step, fake_result(["x", "priya-lens-repair"], ["x"], ["priya-lens-repair"]))
    assert not second.holds and second.checked and (second.final_rank, second.sparse_rank) == (2, 1)
    assert second.evidence.startswith("In the final list it is #2;")
    assert second.dense_rank is None and "does not have it in its top 1" in second.evidence
    first = present.check(step, fake_result(["priya-lens-repair", "x"], ["x"], ["priya-lens-repair"]))
    assert first.holds and first.final_rank == 1
    both = present.check(step, fake_result(["priya-lens-repair"], ["priya-lens-repair"], ["priya-lens-repair"]))
    assert not both.holds and "meaning search ranks it #1" in both.evidence
    low = present.check(step, fake_result(["a", "b", "c", "priya-lens-repair"], [], ["priya-lens-repair"]))
    assert not low.holds and low.final_rank == 4


def test_the_split_claim_needs_a_replaced_note_that_moved_up():
    from retrieval.pipeline.records import SplitOutcome

    step, t = BY_ID["split"], BY_ID["split"].target
    half = SplitOutcome(("a", "b"), (0.2, 0.6), 0.3, True, "b")
    up = present.check(step, fake_result(["a", "b", "c", t], [], [], merged=["a", "b", "c", "d", t],
                                         splits={t: half}))
    assert up.holds and "#4, up from #5" in up.evidence and "2.0 times the whole note" in up.evidence
    kept = SplitOutcome(("a", "b"), (0.2, 0.3), 0.4, False)
    assert not present.check(step, fake_result([t], [], [], merged=["a", t], splits={t: kept})).holds
    assert not present.check(step, fake_result(["a", t], [], [], merged=[t, "a"], splits={t: half})).holds


# ---------------------------------------------------------------- on real results (hashing embedder)
@pytest.mark.parametrize("step_id", ["identifier", "split", "mood"])
def test_check_reports_the_ranks_of_the_real_result(ws, step_id):
    step = BY_ID[step_id]
    result = search(ws, step)
    v = present.check(step, result)
    ids = result.diagnostics.stage_ids
    for stage, got in (("final", v.final_rank), ("dense", v.dense_rank), ("sparse", v.sparse_rank)):
        want = list(ids[stage]).index(step.target) + 1 if step.target in ids[stage] else None
        assert got == want, stage
    if step_id == "mood":
        assert v.holds == (v.final_rank is not None and v.final_rank <= 3)
    if step_id == "identifier":  # the hashing embedder also finds the ticket note by meaning: said, not claimed
        assert v.holds == (v.dense_rank is None and v.final_rank == 1)


def test_fact_and_history_claims_hold_on_the_demo_store(ws):
    fact = present.check(BY_ID["fact"], search(ws, BY_ID["fact"]))
    assert fact.holds and fact.final_rank == 1
    history = present.check(BY_ID["temporal"], search(ws, BY_ID["temporal"]))
    assert history.holds and "Lisbon, then Porto, then Berlin" in history.evidence


def test_final_items_say_how_each_result_was_found(ws):
    step = BY_ID["fact"]
    result = search(ws, step)
    items = present.final_items(result, step.query, step.target)
    assert [i.rank for i in items] == list(range(1, min(present.SHOWN, len(result.traces)) + 1))
    assert [i.id for i in items] == result.ids[:len(items)]
    assert {i.found_by for i in items} <= set(present.FOUND_BY.values())
    first = items[0]
    assert first.found_by == "fact graph" and first.is_target and first.text.startswith("Lives in Berlin")
    assert not any(i.is_target for i in items[1:])
    result = search(ws, BY_ID["split"])
    split = present.final_items(result, BY_ID["split"].query, BY_ID["split"].target)
    assert any(i.split for i in split)  # a half of a longer note is marked
    # ... and its text says where the note was cut: "…" before a second half, after a first
    chosen = {i.id: result.diagnostics.splits[i.id].chosen for i in split if i.split}
    assert "b" in chosen.values()  # the check below can fail
    for i in split:
        if i.split:
            assert i.text.startswith("…") if chosen[i.id] == "b" else i.text.endswith("…"), (i.id, i.text)


def test_half_snippet_marks_the_cut_once():
    from ui.view import half_snippet

    assert half_snippet("components; reported.", "b") == "…components; reported."
    assert half_snippet("…components; reported.", "b") == "…components; reported."
    assert half_snippet("Rode along with", "a") == "Rode along with…"
    assert half_snippet("whole note", None) == "whole note"


# ---------------------------------------------------------------- the page
def everything(at) -> str:
    """Every rendered element's content (markdown, captions, html, titles, alerts, labels)."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


@pytest.fixture
def no_llm(monkeypatch):
    """The local language model is unavailable: the HyDE step must say so in a sentence."""
    import ui.cache

    def unavailable(spec):
        raise RuntimeError("no local model here")

    monkeypatch.setattr(ui.cache, "get_generator", unavailable)


def test_present_walks_every_step_next_and_back_read_only_without_ids(demo_env, no_llm):
    at = open_page("pages/9_Present.py", TIMEOUT)
    seen = []
    for step in STEPS:
        assert not at.exception, step.id
        assert [t.value for t in at.title] == [step.story.headline]
        page = everything(at)
        assert f"Step {step.number} of {step.total}" in page and step.query in page
        assert not at.slider and not at.number_input and not at.selectbox and not at.text_input
        assert not at.get("file_uploader") and not at.get("download_button")
        assert not [t for t in STEPS if t.target and t.target in page], "an id is shown without Show ids"
        seen.append(page)
        at = at.button(key="present_next").click().run()
    assert not at.exception and [t.value for t in at.title] == [STEPS[0].story.headline]  # "Start again"
    assert any(step.story.claim in page for step, page in zip(STEPS, seen))
    hyde = seen[[s.id for s in STEPS].index("hyde")]
    assert "not available on this computer" in hyde and "Traceback" not in hyde
    at.session_state["present_step"] = len(STEPS)
    at.run()
    # Streamlit draws a shortcut's key beside the label, so a label with its own arrow read "Next → →"
    shortcuts = [b.proto for b in at.button if b.proto.shortcut]
    assert shortcuts and all(not set(p.label) & set("←→") for p in shortcuts), [p.label for p in shortcuts]
    for step in reversed(STEPS[:-1]):
        at = at.button(key="present_back").click().run()
        assert not at.exception and [t.value for t in at.title] == [step.story.headline]
    assert at.button(key="present_back").disabled


def test_show_ids_reveals_the_ids(demo_env, no_llm):
    at = open_page("pages/9_Present.py", TIMEOUT)
    assert "priya-lens-repair" not in everything(at)
    at = at.toggle(key="present_ids").set_value(True).run()
    assert not at.exception and "priya-lens-repair" in everything(at)
    assert "found by" in everything(at)


def test_home_with_present_1_switches_to_presenter_mode(demo_env, no_llm):
    at = open_page(None, TIMEOUT, present="1")
    assert not at.exception
    assert [t.value for t in at.title] == [STEPS[0].story.headline]
    home = open_page(None, TIMEOUT)  # Home without it stays Home
    assert not home.exception and [t.value for t in home.title] == ["Hybrid retrieval inspector"]


# ---------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on the demo store built with the real MiniLM embedder."""
    from demostore import copy_demo
    from ui.serve import start_app, stop_app

    db = tmp_path_factory.mktemp("present-browser") / "db"
    copy_demo(db, "minilm")
    log = db.parent / "streamlit.log"
    stackdump = str(Path(__file__).with_name("stackdump"))  # SIGUSR1 prints the server's threads (a hang's cause)
    proc, url = start_app(db, env={"PYTHONPATH": os.pathsep.join(filter(None, [stackdump, os.environ.get(
        "PYTHONPATH")]))}, log=log)
    SERVER.update(proc=proc, log=log)
    yield url
    stop_app(proc)


SERVER: dict = {}  # the module's app server and its log, for `server_stacks`


def server_stacks() -> str:
    """Every thread's stack in the app server now (tests/stackdump), from its log: what a stuck page waits on."""
    import signal

    proc, log = SERVER["proc"], SERVER["log"]
    size, sizes = log.stat().st_size, []

    def dumped() -> str:  # the dump is in and has stopped growing (it is written in pieces)
        text = log.read_text(errors="replace")[size:]
        sizes.append(len(text))
        return text if "most recent call first" in text and sizes[-4:] == [len(text)] * 4 else ""

    os.kill(proc.pid, signal.SIGUSR1)
    try:
        return wait_until(dumped, 30, "the app server's thread dump", interval=0.25)[-12_000:]
    except AssertionError as exc:
        return f"({exc}) {log.read_text(errors='replace')[size:][-12_000:]}"


@pytest.mark.browser
@pytest.mark.slow
def test_step_one_at_a_laptop_width(browser, artifacts, served):
    """Step 1 on the real MiniLM store: the claim, the question and the list read at 1366 × 768."""
    import re
    import shutil

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(120_000)
    page.goto(served + "/?present=1")
    page.get_by_text(STEPS[0].story.claim).wait_for()
    page.get_by_text("found by").first.wait_for()
    shot = artifacts / "present-1366.png"
    painted(page)
    page.screenshot(path=str(shot))
    assert page.locator("[data-testid=stException]").count() == 0
    assert not page.locator("[data-testid=stSidebar]").is_visible()
    nxt = page.get_by_role("button", name=re.compile("Next"))
    box = nxt.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 768  # next is on screen without scrolling
    shots = os.environ.get("RETRIEVAL_SHOTS_DIR")  # `make screenshots` points it at docs/screenshots
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(shots) / "present-1366.png")


# Looks at every painted frame (requestAnimationFrame) while the step named in `R.step` is on screen: which other
# steps' claims are visible (innerText holds only rendered text; a faded element still counts), whether it says
# "Searching", and whether its answer is in with nothing left over from the run before.
WATCH_FRAMES = """claims => {
  const norm = t => (t || '').replace(/\\s+/g, ' ').toLowerCase();
  const R = window.__rtPresent = {step: 0, id: '', frames: 0, searching: 0, busy: false, done: false, bad: []};
  const tick = () => {
    const all = norm(document.body.textContent);
    if (R.step && all.includes(`step ${R.step} of`)) {
      R.frames++;
      const shown = norm(document.body.innerText);
      const left = claims.filter(([id, c]) => id !== R.id && shown.includes(norm(c))).map(([id]) => id);
      if (left.length) R.bad.push([R.step, left, R.frames]);
      const busy = all.includes('searching for this step');
      R.searching += busy;
      R.busy = R.busy || busy;
      R.done = (all.includes('found by') || all.includes('is skipped')) && !document.querySelector('[data-stale=true]');
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


@pytest.mark.browser
@pytest.mark.slow
def test_a_step_change_never_shows_the_previous_step(browser, artifacts, served):
    """Clicking Next as soon as a step's question is up (its search, or the search ahead, still running): from the
    moment the new question shows until its answer does, the previous step's claim is never on screen — the slow
    step (HyDE) shows "Searching" in its place. Every painted frame is checked in the page; screenshots are taken
    mid-run."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(120_000)
    page.goto(served + "/?present=1")
    page.get_by_text("Step 1 of").wait_for()
    page.evaluate(WATCH_FRAMES, [[s.id, s.story.claim] for s in STEPS])
    leftovers = []
    for step in STEPS[1:]:
        before = STEPS[step.number - 2]
        page.evaluate("([n, id]) => Object.assign(window.__rtPresent, {step: n, id, busy: false, done: false})",
                      [step.number, step.id])
        page.locator("[data-testid=stButton] button", has_text="Next").click()
        try:
            page.wait_for_function("() => window.__rtPresent.done || window.__rtPresent.busy", timeout=240_000)
            if not page.evaluate("() => window.__rtPresent.done"):  # one mid-run screenshot per step that searched
                page.screenshot(path=str(artifacts / f"present-change-{step.number}.png"))
            page.wait_for_function("() => window.__rtPresent.done", timeout=240_000)
        except PlaywrightTimeout:
            state = page.evaluate("() => document.querySelector('[data-testid=stApp]')"
                                  "?.getAttribute('data-test-script-state')")
            page.screenshot(path=str(artifacts / f"present-change-{step.number}-stuck.png"))
            pytest.fail(f"step {step.number} never finished (script state {state}); the server's threads:\n"
                        f"{server_stacks()}")
        flashes = page.evaluate("() => window.__rtPresent.bad.splice(0)")
        if flashes:
            page.screenshot(path=str(artifacts / f"present-change-{step.number}.png"))
            leftovers.append(f"step {step.number} shows step {before.number}'s claim in {len(flashes)} frame(s)")
    seen = page.evaluate("() => window.__rtPresent")
    assert page.locator("[data-testid=stException]").count() == 0
    # it did look mid-run, and saw at least one search under way
    assert seen["frames"] > len(STEPS) and seen["searching"] > 0
    assert not leftovers, "; ".join(leftovers)  # stale until the run reached the step's body (docs/RELIABILITY.md)


def test_a_claim_without_a_story_is_shown_unchecked_never_ticked():
    ex = {"id": "new", "title": "A new one", "query": "q", "scope": "user:x", "look_for": "it comes first",
          "target": "t", "params": {}}
    (step,) = present.steps([ex])
    v = present.check(step, fake_result(["t"], ["t"], []))
    assert not v.checked and not v.holds and v.evidence.startswith("In the final list it is #1;")


# ---------------------------------------------------------------- the optional live step (issue 35, item 5)
def test_the_live_step_payload_reproduces_the_step_and_speaks_plainly(ws):
    from retrieval.pipeline.assemble import reweight

    step = BY_ID["identifier"]
    result = search(ws, step)
    data = present.live_payload(result, step.query, step.target)
    assert data["mode"] == "present" and data["target"] == "priya-lens-repair" and data["balance"] == 50
    assert [i for i, _ in data["server_final"]] == [t.id for t in result.traces]
    items = present.final_items(result, step.query, step.target)
    assert items and all(data["found_by"][i.id] == i.found_by for i in items)  # the words the step's list uses
    assert set(data["found_by"].values()) <= set(present.FOUND_BY.values())
    assert all(data["texts"][i.id] == i.text for i in items)  # the same snippets
    words = " ".join(data["words"].values()).lower()
    assert not [j for j in JARGON if j in words]
    # Keyword search alone puts the note first (the flip to meaning search needs the real embedder: the browser
    # test, tests/test_browser_present_live.py; the hashing embedder finds the code by its letters too).
    assert reweight(result, dense_weight=0.0, sparse_weight=1.0).ids[0] == "priya-lens-repair"


def test_the_present_page_offers_the_live_step_on_the_identifier_step_only(demo_env):
    at = open_page("pages/9_Present.py", TIMEOUT)
    assert not at.exception
    number = next(s.number for s in STEPS if s.id == "identifier")
    assert number == 1 and [t.label for t in at.toggle if t.key == "present_live"] == [
        "Try it yourself: slide the balance"]
    assert any(c.value.startswith("found by:") for c in at.caption)  # the step's own list
    at.toggle(key="present_live").set_value(True).run()
    assert not at.exception  # the live list (the component, re-fused in the browser) takes the list's place
    assert not any(c.value.startswith("found by:") for c in at.caption)
    assert "What the search returns" in [s.value for s in at.subheader]
    at.button(key="present_next").click().run()  # the next step has no live part
    assert not at.exception and not [t for t in at.toggle if t.key == "present_live"]
