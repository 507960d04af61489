"""Inspect's grading panel (AppTest) and the notes on a query (retrieval.judgments.notes).

The panel is a fragment (a grade reruns it alone) with no "Keep this open" toggle (a keyed expander stays open in the
browser: tests/test_browser_speed.py), writes grades in
one set of words (the same table the Judge page uses), says why a read-only visitor cannot grade, offers a case name
that is never the shipped `demo` case, and keeps a free-text note per query beside the grades — saved, shown to the
next session, rendered as text.
"""
from __future__ import annotations

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.access import Access, AccessDenied, ReadOnlyError
from retrieval.judgments import GRADE_LABELS, JudgmentStore, query_note, set_query_note
from retrieval.judgments.notes import NOTE_CHARS
from retrieval.judgments.tables import JudgmentStoreError
from retrieval.types import Scope

TIMEOUT = 90
PRIYA = Scope("user", "priya")
QUERY = "what is the status of my ticket FX-209847"  # no demo grades for it
HOSTILE = "**bold** <img src=x onerror=alert(1)> [a link](http://example.com) # heading"


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "grading_panel")


def inspect(query: str = QUERY, **params):
    return open_page("pages/2_Inspect.py", TIMEOUT, i_q=query, i_scope="user:priya", **params)


def grade_groups(at):
    return [b for b in at.button_group if b.proto.label.startswith("#")]


def panel_captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_the_panel_draws_one_control_per_result_and_no_keep_open_switch(demo_env):
    at = inspect()
    assert not at.exception
    assert [e.label for e in at.expander if e.label.startswith("Grade the final list")]
    assert len(grade_groups(at)) == len(at.session_state["i_result"][1].traces)
    assert not [t for t in at.toggle if t.label == "Keep this open"]


def test_a_grade_is_saved_and_shown_in_the_judge_pages_words(demo_env):
    from ui.grading import grade_word, scale_words
    from ui.judging import _grade_label

    at = inspect()
    grade_groups(at)[1].set_value(3).run()
    assert not at.exception
    labels = [g.proto.label for g in grade_groups(at)]
    assert labels and "● 3 · perfect" in labels[1] and "○ not graded by you" in labels[0]
    grade_groups(at)[0].set_value(0).run()
    assert "● 0 · not relevant" in grade_groups(at)[0].proto.label
    # One table of words: the panel's caption, each control's help, and the Judge page's buttons.
    assert any(scale_words() in c for c in panel_captions(at))
    assert scale_words() == "0 · not relevant, 1 · related, 2 · relevant, 3 · perfect"
    assert all(_grade_label(g, "graded") == grade_word(g) == f"{g} · {w}" for g, w in GRADE_LABELS.items())
    assert _grade_label(1, "binary") == "1 · relevant"
    assert not any("highly relevant" in c for c in panel_captions(at))
    assert JudgmentStore(demo_env).grades(PRIYA, QUERY)["human"] == {
        at.session_state["i_result"][1].traces[1].id: 3, at.session_state["i_result"][1].traces[0].id: 0}


def test_add_to_case_never_offers_the_shipped_demo_case_and_then_offers_the_last_one(demo_env):
    at = inspect("status of ticket FX-209847")
    assert "demo" in JudgmentStore(demo_env).case_names()
    box = at.text_input(key="i_g_case_name")
    assert box.value == "my-cases"
    box.input("team-review").run()
    at.button(key="i_g_add_case").click().run()
    assert not at.exception
    assert any("is in case team-review" in s.value for s in at.success)
    assert at.session_state["last_case"] == "team-review"
    assert [q.query for q in JudgmentStore(demo_env).case("team-review").queries] == ["status of ticket FX-209847"]


def test_a_note_on_a_query_is_saved_shown_to_the_next_session_and_rendered_as_text(demo_env):
    q = "lens repair ticket"
    at = inspect(q)
    box = [t for t in at.text_area if t.label == "Note on this query"][0]
    assert box.value == ""
    box.input(HOSTILE).run()
    [b for b in at.button if b.label == "Save note"][0].click().run()
    assert not at.exception
    stored = query_note(JudgmentStore(demo_env), PRIYA, "  Lens REPAIR ticket ")  # matched as grades are
    assert stored is not None and stored.text == HOSTILE and stored.author == "local"
    again = inspect(q)  # a new session reads it from the store
    assert [t.value for t in again.text_area if t.label == "Note on this query"] == [HOSTILE]
    assert any(c.startswith("Saved by local on ") for c in panel_captions(again))
    # Text, never Markdown: no element renders the note's markup.
    rendered = [m.value for m in again.markdown] + panel_captions(again) + [h.value for h in again.get("html")]
    assert not any("onerror" in r or "a link" in r for r in rendered)


def test_a_read_only_visitor_is_told_why_grading_is_off(demo_env, monkeypatch):
    from ui.grading import read_only_reason

    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    at = inspect()
    assert not at.exception
    reasons = [c for c in panel_captions(at) if c.startswith("Read-only:")]
    assert len(reasons) == 1 and "demo" in reasons[0]
    assert grade_groups(at) and all(g.proto.disabled for g in grade_groups(at))
    assert [t.proto.disabled for t in at.text_area if t.label == "Note on this query"] == [True]
    assert not [b for b in at.button if b.label in ("Save note", "Add to case")]
    reader = Access("reader@example.com", frozenset({"user:priya"}), write=False, grade=False)
    assert read_only_reason(reader).startswith("Read-only: the access policy lets reader@example.com read")
    assert read_only_reason(Access("w", None, write=True, grade=False)) is None  # writing includes grading
    assert read_only_reason(None) is None


def test_notes_follow_the_grades_rules(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    assert query_note(js, PRIYA, "q") is None  # no table yet: no note, no error
    note = set_query_note(js, PRIYA, "Where is  the lens?", "  ask Priya  ", author="maya")
    assert note is not None and note.text == "ask Priya"
    assert query_note(js, PRIYA, "where is the lens?").text == "ask Priya"
    assert query_note(js, Scope("user", "maya"), "where is the lens?") is None  # per scope
    with pytest.raises(ValueError, match="2000"):
        set_query_note(js, PRIYA, "where is the lens?", "x" * (NOTE_CHARS + 1))
    limited = Access("tom", frozenset({"user:tomas"}), write=True, grade=True)
    with pytest.raises(AccessDenied):
        set_query_note(js, PRIYA, "where is the lens?", "mine now", access=limited)
    with pytest.raises(ReadOnlyError):
        set_query_note(js, PRIYA, "where is the lens?", "x", access=Access("r", None, read_only=True))
    assert query_note(js, PRIYA, "where is the lens?").text == "ask Priya"  # nothing was lost
    assert query_note(js, PRIYA, "where is the lens?", access=limited) is None  # not theirs to read either
    assert set_query_note(js, PRIYA, "where is the lens?", "   ") is None  # blank removes it
    assert query_note(js, PRIYA, "where is the lens?") is None


def test_a_damaged_notes_table_is_one_clear_error(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    set_query_note(js, PRIYA, "q", "a note")
    for f in (tmp_path / "db" / "query_notes.lance").rglob("*.lance"):
        f.write_bytes(b"not a lance file")
    with pytest.raises(JudgmentStoreError, match="query_notes"):
        query_note(JudgmentStore(str(tmp_path / "db")), PRIYA, "q")


def test_the_grading_panel_is_the_only_grading_control(demo_env):
    """Issue 32 item 18: no stray row of 0–3 buttons under the explained row (it regraded row #1)."""
    at = inspect()
    assert not at.exception
    assert [b.label for b in at.button if b.label in ("0", "1", "2", "3")] == []
    assert [b.key for b in at.button if "_k" in (b.key or "") and (b.key or "")[-1] in "0123"] == []
    assert len(grade_groups(at)) == len(at.session_state["i_result"][1].traces)  # the panel itself is there


def test_a_row_another_rater_graded_says_not_graded_by_you_never_ungraded(demo_env):
    """"Ungraded" means by anyone (the stage table, its counts): the panel's per-rater control says "not graded by
    you" and how many others did, so a row the table marks graded never reads "ungraded" here."""
    from ui.grading import NOT_YOURS
    from ui.view import UNGRADED

    query = "status of my ticket FX-209847 for another rater"
    first = inspect(query)
    tid = first.session_state["i_result"][1].traces[0].id
    JudgmentStore(demo_env).set_grade(PRIYA, query, tid, 2, rater="bob")
    at = inspect(query)
    assert not at.exception
    labels = [g.proto.label for g in grade_groups(at)]
    assert labels[0].startswith(f"#1 {tid} — ") and labels[0].endswith(f" · {NOT_YOURS} (1 other rater did)")
    assert all(NOT_YOURS in label for label in labels) and not any(UNGRADED in label for label in labels)
    assert any("Grades are saved as **local**" in c for c in panel_captions(at))  # whom, as on Judge


def test_a_short_list_counts_its_ungraded_results_of_its_own_length_and_no_empty_switch(demo_env):
    """With 2 results the captions say "2 of the 2 results", never "of the final top 10"; with every stage's top 10
    in the final list there is no "Also the 0 traces only in another stage's top 10" switch."""
    from ui.view import UNGRADED

    fresh = "what is the status of my ticket FX-209847, in a short list"  # nobody graded it
    short = inspect(fresh, i_recall_top_k="2")
    assert not short.exception and len(short.session_state["i_result"][1].traces) == 2
    said = [c for c in panel_captions(short) if UNGRADED in c]
    assert len(said) == 2 and all(f"2 of the 2 results are {UNGRADED} by anyone." in c for c in said), said
    assert not any("final top 10" in c for c in said)
    full = inspect(fresh)
    assert any(f"10 of the final top 10 are {UNGRADED} by anyone." in c for c in panel_captions(full))
    assert not [t for t in full.toggle if "Also the" in t.label]
    assert [t for t in short.toggle if t.label.startswith("Also the 4 traces")]  # shown when there are some
