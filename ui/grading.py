"""Grading widgets: grade a trace for a query (0–3 or binary) by mouse or keyboard, saved at once;
add a query to a case; the query parameters that open Inspect on a query and a configuration; who the rater
is and the one line saying so above any grade controls (`who_grades`); which results in a list nobody has graded yet
(`unrated_ids`, marked `UNGRADED`, for Inspect's final list and Compare) — a control says `NOT_YOURS` instead, as it
shows one rater's grade; the one
table of grade words every page writes (`GRADE_WORDS`, `grade_word`); Inspect's grading panel (`grading_panel`, a
fragment: grades, the note on the query, add to a case, and why a read-only visitor cannot).

Who grades: with sign-in on, the signed-in identity (a URL parameter never changes it). With sign-in off, a
name chosen once per browser tab: kept in the session and in the page's URL (`?rater=maya`), so a bookmark or
a reload keeps it and nothing is stored on the visitor's machine (no cookie); without a chosen name, grades go
to `local`, the local operator — the name the audit gives the write too (`retrieval.judgments.identity`).

The store is the truth: a widget shows the stored human grade (so grades survive restarts and
follow other sessions' edits); a click writes it before the rerun. Machine grades are shown beside
it, labelled, never in the control.
"""
from __future__ import annotations

import hashlib
import re
import time

import streamlit as st
from streamlit.errors import StreamlitAPIException

from retrieval.access import Access, AccessDenied
from retrieval.pipeline.config import PipelineConfig
from retrieval.judgments import GRADE_LABELS, SCALES, JudgmentStore
from retrieval.judgments.identity import signed_in
from retrieval.judgments.model import query_key, scope_text
from retrieval.judgments.raters import CasePolicy, combined_grades
from retrieval.judgments.store import JudgmentStoreError, may_grade
from retrieval.judgments.visible import visible_case_names  # noqa: F401 (the one rule; pages import it from here)
from retrieval.types import Scope

from .links import write_link
from .rater import RATER_KEY, RATER_LABEL, current_rater, rater_picker  # noqa: F401 (pages import them from here)
from .text import plain
from .view import UNGRADED

# What a grade or case write may refuse with: a bad value, no permission (ReadOnlyError and AccessDenied are
# PermissionErrors), a damaged judgments table.
REFUSALS = (ValueError, PermissionError, JudgmentStoreError)


def grade_key(prefix: str, scope: Scope | None, query: str, trace_id: str) -> str:
    digest = hashlib.blake2b(f"{scope_text(scope)}\x1f{query_key(query)}\x1f{trace_id}".encode(),
                             digest_size=6).hexdigest()
    return f"{prefix}grade_{digest}"


# The grade words, one table for every page (Inspect, Judge, Snapshots, Compare): the store's own labels.
GRADE_WORDS = {"graded": dict(GRADE_LABELS), "binary": {0: "not relevant", 1: "relevant"}}


def grade_word(grade: int, scale: str = "graded") -> str:
    """"3 · perfect" — a grade as every page writes it."""
    return f"{grade} · {GRADE_WORDS.get(scale, GRADE_WORDS['graded']).get(grade, '')}".strip(" ·")


def scale_words(scale: str = "graded") -> str:
    """"0 · not relevant, 1 · related, 2 · relevant, 3 · perfect" — the whole scale in one line."""
    return ", ".join(grade_word(g, scale) for g in SCALES[scale])


# A per-rater control's word for a result this rater has not graded: "ungraded" (`UNGRADED`) means "by anyone" (the
# stage table, its counts, Compare), so a control never says it of a row another rater graded.
NOT_YOURS = "○ not graded by you"


def grade_text(grade: int | None, scale: str = "graded", others: int = 0) -> str:
    """A control's state for this rater: their grade, else `NOT_YOURS` and how many other raters graded it."""
    if grade is not None:
        return f"● {grade_word(grade, scale)}"
    return NOT_YOURS + (f" ({others} other rater{'s' if others != 1 else ''} did)" if others else "")


def others_graded(ratings, rater: str) -> dict[str, int]:
    """{trace id: how many raters other than `rater` hold a grade that counts (default policy, not "can't rate",
    not stale)} — what turns a result from `UNGRADED` to graded in the stage table, said per control."""
    from retrieval.judgments.raters import usable

    policy = CasePolicy()
    who: dict[str, set[str]] = {}
    for j in usable(ratings):
        if j.who != rater and policy.counts(j):
            who.setdefault(j.trace_id, set()).add(j.who)
    return {tid: len(names) for tid, names in who.items()}


UNRATED = UNGRADED  # a result no rater has graded: the same word, said "by anyone" where it matters


def who_grades(access: Access | None, key: str) -> str:
    """The one line above any grade controls (Inspect's panel, Snapshots, and Judge's sidebar through `rater_picker`):
    why a read-only visitor cannot grade, else whom grades are saved as and, with sign-in off, the rater picker.
    Returns the rater."""
    reason = read_only_reason(access)
    if reason:
        st.caption(reason)
        return current_rater(access)
    return rater_picker(access, key=key)


def query_grades(js: JudgmentStore, scope: Scope | None, query: str, hashes: dict[str, str] | None = None,
                 policy: CasePolicy | None = None, ratings: list | None = None) -> dict[str, int]:
    """{trace id: grade} for one query: every human rater's usable grade, combined (mean unless `policy`);
    `ratings` when the page has already read them (`js.ratings(scope, query)`)."""
    ratings = js.ratings(scope, query) if ratings is None else ratings
    combined = combined_grades(ratings, policy or CasePolicy(), hashes)
    return {tid: g for (_, _, tid), g in combined.items()}


def case_qrels(js: JudgmentStore, get_traces, case) -> tuple[dict[str, dict[str, int]], CasePolicy]:
    """The case's qrels today and its policy: `retrieval.judgments.fresh.case_qrels` (the CLI's `snapshot diff`
    scores with the same)."""
    from retrieval.judgments.fresh import case_qrels as qrels_today

    return qrels_today(js, get_traces, case)


def unrated_ids(ranked: list[str], graded: dict[str, int] | set[str], k: int = 10) -> list[str]:
    """The ids in the top `k` of `ranked` that no rater has graded (pure). Inspect's final list and Compare call
    it with `query_grades(...)` and mark those rows ungraded (`UNRATED`, the one word `UNGRADED`)."""
    return [t for t in list(dict.fromkeys(ranked))[:k] if t not in graded]


def unrated_line(n: int, shown: int, k: int = 10) -> str:
    """"3 of the final top 10 are ○ ungraded by anyone" — or "of the 2 results" when the list is shorter than `k`."""
    of = f"the final top {k}" if shown >= k else f"the {shown} result{'' if shown == 1 else 's'}"
    return f"{n} of {of} {'is' if n == 1 else 'are'} {UNRATED} by anyone."


PANEL = "grading-panel"  # the grading panel's fragment key (`st.rerun(PANEL)` from its controls' callbacks)


def redraw(fragment: str | None) -> None:
    """From a control's callback inside the keyed fragment `fragment`: rerun that fragment, as its own rerun would —
    unless no run has registered it (a full run cut short by a newer request before it reached the fragment; seen
    after quick live-panel commits and a grade): Streamlit then skips the fragment's rerun ("Couldn't find
    fragment"), so the callback would have saved and nothing would show it. The whole page reruns instead."""
    if fragment is None:
        return
    try:
        st.rerun(fragment)
    except StreamlitAPIException:  # no registered fragment has that key
        st.rerun()


def _save(js: JudgmentStore, scope, query: str, trace_id: str, key: str, scale: str, value=None,
          access: Access | None = None, rater: str = "", content_hash: str = "", fragment: str | None = None) -> None:
    grade = st.session_state.get(key) if value is None else value
    if value is not None:
        st.session_state[key] = value
    try:
        if grade is None:
            js.clear_grade(scope, query, trace_id, access=access, rater=rater)
        else:
            js.set_grade(scope, query, trace_id, grade, scale=scale, access=access, rater=rater,
                         content_hash=content_hash)
    except REFUSALS as exc:
        st.session_state[key] = st.session_state.get(f"{key}_stored")  # the control shows what is stored
        st.session_state[f"{key}_error"] = str(exc)
        redraw(fragment)
        return
    st.session_state[f"{key}_stored"] = grade
    st.session_state.pop(f"{key}_error", None)
    redraw(fragment)


def grade_widget(js: JudgmentStore, scope: Scope | None, query: str, trace_id: str, *, key_prefix: str = "g_",
                 scale: str = "graded", grades: dict | None = None,
                 label: str | None = None, disabled: bool = False, access: Access | None = None,
                 rater: str = "", content_hash: str = "", fragment: str | None = None,
                 others: int = 0) -> int | None:
    """A 0–3 (or 0/1) control for one trace; returns `rater`'s stored grade (None = not graded by `rater`).

    Mouse: click a grade (click it again to clear). Keyboard: Tab to the control, Enter or Space.
    This control is the only one that grades a row (a second row of 0–3 buttons under the explained trace
    regraded row #1 unnoticed: issue 32 item 18; the Judge page has its own keyboard grading).
    Pass `grades=js.grades(scope, query)` when drawing many widgets for one query.
    `disabled=True` (a visitor without the grade permission) shows the grade without changing it.
    `label` (default: the trace id) is plain text — ids and trace content are shown as typed, never as Markdown.
    `access` (the page's `Access`) is checked by the store on every save; a refusal is shown under the control.
    `rater` owns the grade; `content_hash` (of the text shown) lets a later edit mark it stale. `fragment`: the key
    of the keyed fragment the control is drawn in, redrawn after a save (`redraw`). `others`: how many other raters
    graded it (`others_graded`), said beside `NOT_YOURS`.
    """
    rater = rater or current_rater(access)
    grades = grades if grades is not None else js.grades(scope, query, rater)
    human = grades.get("human", {}).get(trace_id)
    machine = grades.get("machine", {}).get(trace_id)
    key = grade_key(key_prefix, scope, query, trace_id)
    if key not in st.session_state or st.session_state.get(f"{key}_stored") != human:
        st.session_state[key] = human  # restart or another session: show what is stored
        st.session_state[f"{key}_stored"] = human
    allowed = list(SCALES[scale])
    st.segmented_control(
        f"{plain(label or trace_id)} · {grade_text(human, scale, others)}", allowed, key=key, on_change=_save,
        args=(js, scope, query, trace_id, key, scale, None, access, rater, content_hash, fragment), disabled=disabled,
        help=f"Grade ({scale_words(scale)}). Saved at once; click again to clear.")
    if machine is not None:
        st.caption(f"machine grade: {machine} (not used by metrics)")
    if st.session_state.get(f"{key}_error"):
        st.error(plain(st.session_state[f"{key}_error"]))  # the message may quote the id
    return human


def own_case_name(access: Access | None) -> str:
    """A new case name of the visitor's own ("maya-cases" for maya@example.com), never a shared one."""
    user = (access.user if access is not None else "") or ""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", user.split("@")[0]).strip("-_.")[:50]
    return f"{stem}-cases" if stem else "my-cases"


LAST_CASE = "last_case"  # session key: the case this visitor last added a query to


def add_to_case_widget(js: JudgmentStore, scope: Scope | None, query: str, key_prefix: str = "g_",
                       access: Access | None = None):
    """A case name and an "Add to case" button; returns the case after adding, else None. The name offered is
    the case this visitor last added to, else a new case of their own ("maya-cases", "my-cases") — never a
    shared one such as the shipped `demo` (whose grades metrics read). The store checks `access` on the write and
    a refusal is an error message."""
    limited = access is not None and access.limited
    key = f"{key_prefix}case_name"
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(LAST_CASE) or (own_case_name(access) if signed_in(access)
                                                                          else "my-cases")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    name = c1.text_input("Case", key=key, help="A new name (letters, digits, - _ .), or an existing case to add "
                                               "this query to")
    if c2.button("Add to case", key=f"{key_prefix}add_case"):
        try:
            case = js.add_to_case(name.strip(), query, scope, access=access)
        except AccessDenied as exc:
            # A limited visitor is not told which other scopes a shared case spans.
            st.error(f"Nothing was saved: case {plain(name.strip())} holds queries in scopes you may not grade in; "
                     "use a case name of your own." if limited else plain(exc))
            return None
        except REFUSALS as exc:
            st.error(plain(exc))
            return None
        st.session_state[LAST_CASE] = case.name
        st.success(f"“{plain(query)}” is in case {plain(case.name)} ({len(case.queries)} queries)")
        return case
    return None


def inspect_query_params(cfg: PipelineConfig, query: str, scope: Scope | None, prefix: str = "i_",
                         target: str | None = None) -> dict[str, str]:
    """The parameters of an Inspect link for this query, scope and configuration (`ui.links.write_link`:
    every knob, never the server URL); `target` opens the explanation of that trace."""
    return write_link(prefix, cfg, query, str(scope) if scope is not None else None, target=target)


# ---------------------------------------------------------------- the grading panel (Inspect)
def can_grade(access: Access | None) -> bool:
    """What the store's `check_grading` allows (`judgments.store.may_grade`, the one rule)."""
    return may_grade(access)


def read_only_reason(access: Access | None) -> str | None:
    """Why this visitor's grades, notes and cases are greyed, as one caption ("Read-only: …"); None when they
    may grade."""
    if access is None or can_grade(access):
        return None
    if access.denied:
        return f"Read-only: {plain(access.denied)}"
    if access.read_only:
        return ("Read-only: this app runs as a demo, so grades, notes and cases cannot be changed here (whoever "
                "runs it can allow grading with RETRIEVAL_ALLOW_GRADING=1).")
    return (f"Read-only: the access policy lets {plain(access.user)} read these scopes but not grade or write; "
            "ask whoever runs this app for write access.")


def _save_note(js: JudgmentStore, scope: Scope | None, query: str, key: str, access: Access | None,
               rater: str) -> None:
    """Button callback: store the typed note (before the rerun that shows it); a refusal is kept to show."""
    from retrieval.judgments.notes import set_query_note

    try:
        set_query_note(js, scope, query, st.session_state.get(key, ""), access=access, author=rater)
    except REFUSALS as exc:
        st.session_state[f"{key}_error"] = str(exc)
        return
    st.session_state.pop(f"{key}_error", None)
    st.session_state.pop(f"{key}_stored", None)  # the next draw reads what is stored


def note_widget(js: JudgmentStore, scope: Scope | None, query: str, key_prefix: str, access: Access | None,
                rater: str, disabled: bool) -> None:
    """The note on this query (one per scope and query, beside the grades): shown in a text box (text, never
    Markdown), saved with a button; blank removes it."""
    from retrieval.judgments.notes import NOTE_CHARS, query_note

    key = grade_key(f"{key_prefix}note_", scope, query, "")
    try:
        note = query_note(js, scope, query, access=access)
    except JudgmentStoreError as exc:
        st.warning(f"Notes are off: {plain(exc)}")
        return
    stored = note.text if note else ""
    if st.session_state.get(f"{key}_stored") != stored:  # first draw, or another session changed it
        st.session_state[key] = st.session_state[f"{key}_stored"] = stored
    st.text_area("Note on this query", key=key, height=68, max_chars=NOTE_CHARS, disabled=disabled,
                 placeholder="What a grader should know: the need behind it, an ambiguity, the answer is missing…",
                 help="One note per query and scope, kept beside the grades; every rater sees it.")
    if note:
        when = time.strftime("%d %b %Y %H:%M", time.localtime(note.updated_at))
        st.caption(f"Saved by {plain(note.author)} on {when}")
    if st.session_state.get(f"{key}_error"):
        st.error(f"The note was not saved: {plain(st.session_state[f'{key}_error'])}")
    if not disabled:
        st.button("Save note", key=f"{key}_save", on_click=_save_note, args=(js, scope, query, key, access, rater))
