"""Inspect's grading panel: one fragment (keyed `PANEL`) holding a grade control per result of the final list, the
note on the query, add to a case, and why a read-only visitor cannot; a grade reruns the panel alone."""
from __future__ import annotations

import uuid

import streamlit as st

from retrieval.access import Access
from retrieval.judgments import JudgmentStore
from retrieval.judgments.store import JudgmentStoreError
from retrieval.types import Scope
from .grading import (PANEL, add_to_case_widget, can_grade, grade_widget, note_widget, others_graded,
                      query_grades, scale_words, unrated_ids, unrated_line,
                      who_grades)
from .text import plain
from .view import snippet


def hand_over(key_prefix: str, ratings: list) -> str:
    """Keep the ratings a page's run read for the grading panel it draws later in the same run, and return the
    run's token for the panel's `handed`. The panel rerun on its own (a grade) is called again with the token of
    the run that last drew it, so it reads anew — and ratings left by a run a newer request cut short before it
    reached the panel (read before a grade that run never saw) are never taken for a later run's."""
    token = uuid.uuid4().hex
    st.session_state[f"{key_prefix}ratings_now"] = (token, ratings)
    return token


def handed_ratings(js: JudgmentStore, scope: Scope | None, query: str, key_prefix: str, handed: str | None) -> list:
    """The ratings `hand_over` kept for this very run (token `handed`), else read anew; what was kept is dropped
    either way."""
    held = st.session_state.pop(f"{key_prefix}ratings_now", None)
    if held is not None and handed is not None and held[0] == handed:
        return held[1]
    return js.ratings(scope, query)


def grading_body(js: JudgmentStore, scope: Scope | None, query: str, traces, access: Access | None, rater: str,
                 key_prefix: str, k: int, handed: str | None = None) -> None:
    """The panel's contents: the read-only reason, the note, one grade control per result, add to a case."""
    from retrieval.judgments.model import content_hash
    from retrieval.judgments.store import grades_of

    allowed = can_grade(access)
    rater = who_grades(access, key=f"{key_prefix}rater_input")  # who grades, chosen here as on Judge (one per tab)
    try:  # the ratings the page read on this very run (`hand_over`), else (the panel's own rerun) anew
        ratings = handed_ratings(js, scope, query, key_prefix, handed)
    except JudgmentStoreError as exc:  # a damaged judgments table: grading is off, the rest of the page works
        st.warning(f"Grading is off: {plain(exc)}")
        return
    grades = grades_of(ratings, rater)
    others = others_graded(ratings, rater)
    unrated = unrated_ids([t.id for t in traces], query_grades(js, scope, query, ratings=ratings), k=k)
    n_graded = sum(1 for t in traces if t.id in grades["human"])
    st.caption(f"{n_graded} of {len(traces)} graded by {plain(rater)} · {unrated_line(len(unrated), len(traces), k)} "
               f"Grades: {scale_words()}; click a grade again to clear it. They save at once; Compare, Tune "
               "and Snapshots score against them, and Live tuning's metrics and the table's marks count them from "
               "the page's next run (a setting change or a new search).")
    note_widget(js, scope, query, key_prefix, access, rater, not allowed)
    for rank, t in enumerate(traces, 1):
        grade_widget(js, scope, query, t.id, key_prefix=f"{key_prefix}g_", grades=grades, disabled=not allowed,
                     label=f"#{rank} {t.id} — {snippet(t.content, query, 90)}", access=access,
                     rater=rater, content_hash=content_hash(t.content), fragment=PANEL,
                     others=others.get(t.id, 0))
    if allowed:  # the store's add_to_case asks the grading rule too (a demo visitor allowed to grade)
        add_to_case_widget(js, scope, query, key_prefix=f"{key_prefix}g_", access=access)


@st.fragment(key=PANEL)
def grading_panel(js: JudgmentStore, scope: Scope | None, query: str, traces, access: Access | None, rater: str,
                  *, key_prefix: str, k: int = 10, handed: str | None = None) -> None:
    """Grade a final list, note the query, add it to a case — as its own fragment: a grade, a note or an add
    reruns this panel only, never the search page. The expander is keyed (`key_prefix + "grading"`), so the
    browser keeps it open across this panel's reruns and the page's (a slider move): no "keep open" switch."""
    with st.expander(f"Grade the final list ({len(traces)} results) as {plain(rater)} · note · add to a case",
                     key=f"{key_prefix}grading", icon=":material/grading:"):
        grading_body(js, scope, query, traces, access, rater, key_prefix, k, handed)
