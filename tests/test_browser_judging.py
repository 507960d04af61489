"""Real browser, Judge page: two raters in two browser contexts judge the same case with the keyboard (0–3,
arrows); nothing names a configuration while judging; agreement appears; the JSONL export holds both raters.
The steps are timed as scripts/bench_judge_browser.py times them (its helpers). Hashing embedder: no model."""
from __future__ import annotations

import json

import pytest
from apphelpers import load_script
from ui.serve import start_app, stop_app
from waits import painted

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]
bench = load_script("bench_judge_browser")
LONG = 120_000


def test_two_raters_judge_the_same_case_agreement_and_export(browser, tmp_path, artifacts):
    db = tmp_path / "db"
    ids = bench.team_store(db)
    proc, url = start_app(db, embedder="hashing")
    try:
        alice = bench.open_judge(browser, url, "alice", k=2)
        html = alice.content()
        assert bench.SECRET not in html and [s for s in ["agentos", *ids] if s in html] == []  # blind
        first = alice.locator("[data-testid=stCode], code").filter(has_text="-").first.inner_text()
        alice.locator("h1").first.click()
        alice.keyboard.press("ArrowRight")  # arrows move without grading
        alice.wait_for_function("t => ![...document.querySelectorAll('code')].some(e => e.innerText === t)", arg=first,
                                timeout=LONG)
        assert "0 graded by alice" in bench.progress_text(alice)
        steps = bench.judge_all(alice, "alice", "3")
        bob = bench.open_judge(browser, url, "bob", k=2)
        steps += bench.judge_all(bob, "bob", "1")
        bob.screenshot(path=str(artifacts / "judge-page.png"), full_page=True)
        bench.button(bob, "Stop judging").click()  # the whole page reruns: agreement now counts bob's grades
        bob.get_by_text("alice × bob").first.wait_for(state="attached", timeout=LONG)  # in the collapsed panel
        painted(bob, LONG)  # that run has ended (a click during it is lost) and its charts are drawn
        # Too few shared items for agreement: the panel stays closed until opened, and says why once.
        bob.locator("[data-testid=stExpander] summary", has_text="Agreement between raters").first.click()
        bob.get_by_text("alice × bob").first.wait_for(timeout=LONG)
        bob.screenshot(path=str(artifacts / "judge-team-view.png"), full_page=True)
        text = bob.locator("[data-testid=stMain]").inner_text()
        assert "Agreement is not computed yet: it would rest on" in text and "Cohen's kappa" not in text
        bob.locator("[data-testid=stExpander] summary", has_text="Export and import ratings").first.click()
        with bob.expect_download(timeout=LONG) as dl:
            bob.locator("[data-testid=stDownloadButton] button", has_text="JSONL").first.click()
        rows = [json.loads(line) for line in open(dl.value.path()).read().splitlines()]
        assert {r["rater"] for r in rows} == {"alice", "bob"}
        assert {r["grade"] for r in rows if r["rater"] == "alice"} == {3}
        (artifacts / "judge-steps-ms.json").write_text(json.dumps(sorted(round(s) for s in steps)))
    finally:
        stop_app(proc)
