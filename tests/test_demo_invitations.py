"""In a read-only demo with grading off (`RETRIEVAL_MODE=demo`, no `RETRIEVAL_ALLOW_GRADING`), no page invites a
visitor to do what it then refuses: no sentence and no enabled button says "import a log", "upload", "grade results"
or "start judging". Generated from the page list on disk (`app.py` and `pages/*.py`), so a new page is covered with
no edit. What the page says instead is checked where a newcomer met the invitation: the Log page's empty log, the
Snapshots page's grading note and the Judge page's start button."""
from __future__ import annotations

import re

import pytest

from apphelpers import ROOT, demo_app_env, open_page, page_texts

TIMEOUT = 120
PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
# An imperative (or a button) that asks for a write a demo visitor without grading may not make ("not grade it"
# says it is refused: no invitation).
INVITATION = re.compile(r"(?<!not )\b(import (a|one|it|them|what)\b|upload\b|grade (results|them|it|this)\b"
                        r"|start judging)", re.IGNORECASE)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from ui.cache import get_workspace

    env = demo_app_env(tmp_path_factory, "invite")  # built before demo mode refuses writes
    db = next(env)
    mp = pytest.MonkeyPatch()
    mp.setenv("RETRIEVAL_MODE", "demo")
    mp.delenv("RETRIEVAL_ALLOW_GRADING", raising=False)
    yield db
    mp.undo()
    get_workspace.clear()  # the guard marked the cached workspace read-only
    next(env, None)


def invitations(at) -> list[str]:
    said = [s for s in re.split(r"(?<=[.:;!?])\s+|\n", page_texts(at, headings=True)) if INVITATION.search(s)]
    return said + [f"button {b.label!r}" for b in at.button if not b.disabled and INVITATION.search(b.label)]


def test_the_invitation_check_sees_each_old_wording():
    for old in ("No logged queries yet: import a log above (or `python -m retrieval import-log FILE`).",
                "Grade results on the Inspect page; every snapshot is scored", "Start judging",
                "Import what your agent retrieved"):
        assert INVITATION.search(old), old
    assert not INVITATION.search("Importing cases needs grading access; uploading is off")
    assert not INVITATION.search("You may read this case but not grade it here.")


@pytest.mark.parametrize("path", PAGES)
def test_no_page_invites_a_demo_visitor_to_what_it_refuses(demo, path):
    at = open_page(path, TIMEOUT)
    assert not at.exception, at.exception
    assert invitations(at) == []


def test_the_empty_log_says_how_it_is_filled_without_offering_an_import(demo):
    at = open_page("pages/8_Log.py", TIMEOUT)
    said = [i.value for i in at.info if i.value.startswith("No logged queries yet")]
    assert said and "The operator fills it with `python -m retrieval import-log FILE`" in said[0], said
    assert not [u for u in at.file_uploader]


def test_snapshots_says_grades_are_off_in_the_demo(demo):
    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert "Grades are off in this read-only demo" in page_texts(at)


def test_judge_offers_to_browse_the_queue_when_grading_is_off(demo):
    at = open_page("pages/7_Judge.py", TIMEOUT)
    assert at.button(key="j_start").label == "Browse the queue (grading is off)"
    at.button(key="j_start").click().run()
    assert not at.exception, at.exception
    assert at.button(key="j_stop").label == "Stop browsing (change the pool)"
    assert at.button(key="j_g3").disabled  # what the label promised: reading, not grading
