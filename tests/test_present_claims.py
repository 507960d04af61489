"""Issue 32 item 14, "Claims are checked": presenter mode's ✓ follows the result it shows, when the store changes
under an open session too (the claim is checked against the list on screen, every time)."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.ingest.demo import load_examples
from retrieval.types import MemoryTrace
from ui import present

TIMEOUT = 120
STEPS = present.steps(load_examples())
MOOD = next(s for s in STEPS if s.id == "mood")


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "present_claims")


def claim_and_evidence(at) -> tuple[str, str, str]:
    """(how the claim is shown: success | warning | info, its text, the sentence of what the lists show)."""
    shown = [("success", s.value) for s in at.success] + [("warning", w.value) for w in at.warning]
    shown += [("info", i.value) for i in at.info if MOOD.story.claim[:30] in i.value]
    ((kind, text),) = [(k, t) for k, t in shown if MOOD.story.claim[:30] in t]
    evidence = [m.value for m in at.markdown if "In the final list it is" in m.value]
    return kind, text, evidence[0] if evidence else ""


def test_the_tick_follows_the_list_when_the_store_changes(demo_env):
    from ui.cache import get_workspace

    at = open_page("pages/9_Present.py", TIMEOUT)
    at.session_state["present_step"] = MOOD.number
    at.run()
    assert not at.exception
    kind, text, evidence = claim_and_evidence(at)
    assert kind == "success" and text == MOOD.story.claim
    assert evidence.startswith("In the final list it is #3;")  # "comes up in the top three": it does
    assert [h.value for h in at.get("html") if h.value.startswith("<div class='pr-target'>")] == [
        "<div class='pr-target'><div class='pr-rank'>3</div></div>"]  # the ★ row the sentence speaks of
    ws = get_workspace(demo_env, "hashing")
    ws.ingest([MemoryTrace(id=f"maya-berlin-life-{n}", scope="user", scope_id="maya",
                           created_at=datetime(2025, 8, 30, tzinfo=UTC),
                           content="How has life in Berlin been? Life in Berlin has been good, Berlin life is fine.")
               for n in range(3)])
    at.run()  # the same session: its remembered result was of the older version
    assert not at.exception
    kind, text, evidence = claim_and_evidence(at)
    assert kind == "warning" and text.startswith("Not this time: ")
    rank = int(evidence.split("#", 1)[1].split(";", 1)[0])
    assert rank > 3 and evidence.startswith(f"What happened: In the final list it is #{rank};")
    stars = [h.value for h in at.get("html") if h.value.startswith("<div class='pr-target'>")]
    assert stars == ([f"<div class='pr-target'><div class='pr-rank'>{rank}</div></div>"] if rank <= 5 else [])
