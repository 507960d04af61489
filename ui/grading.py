"""Grading widgets: grade a trace for a query (0–3 or binary) by mouse or keyboard, saved at once;
add a query to a case; the query parameters that open Inspect on a query and a configuration; who the rater
is; which results in a list nobody has graded yet (`unrated_ids`, for Inspect's final list and Compare).

Who grades: with sign-in on, the signed-in identity (a URL parameter never changes it). With sign-in off, a
name chosen once per browser tab: kept in the session and in the page's URL (`?rater=maya`), so a bookmark or
a reload keeps it and nothing is stored on the visitor's machine (no cookie); without a chosen name, grades go
to `human`, the rater of every grade made before raters had names.

The store is the truth: a widget shows the stored human grade (so grades survive restarts and
follow other sessions' edits); a click writes it before the rerun. Machine grades are shown beside
it, labelled, never in the control.
"""
from __future__ import annotations

import hashlib
import re

import streamlit as st

from retrieval.access import LOCAL_USER, Access, AccessDenied
from retrieval.pipeline.config import PipelineConfig
from retrieval.judgments import GRADE_LABELS, SCALES, JudgmentStore
from retrieval.judgments.model import check_rater, query_key, scope_text
from retrieval.judgments.raters import CasePolicy, combined_grades
from retrieval.judgments.store import JudgmentStoreError
from retrieval.types import Scope

from .links import write_link
from .text import plain

UNGRADED = "○ ungraded"
# What a grade or case write may refuse with: a bad value, no permission (ReadOnlyError and AccessDenied are
# PermissionErrors), a damaged judgments table.
REFUSALS = (ValueError, PermissionError, JudgmentStoreError)


def grade_key(prefix: str, scope: Scope | None, query: str, trace_id: str) -> str:
    digest = hashlib.blake2b(f"{scope_text(scope)}\x1f{query_key(query)}\x1f{trace_id}".encode(),
                             digest_size=6).hexdigest()
    return f"{prefix}grade_{digest}"


def grade_text(grade: int | None) -> str:
    return UNGRADED if grade is None else f"● {grade} {GRADE_LABELS.get(grade, '')}".strip()


RATER_KEY = "rater"  # session key and URL parameter of the chosen rater name (sign-in off)
UNRATED = "○ unrated"


def signed_in(access: Access | None) -> bool:
    return access is not None and bool(access.user) and access.user != LOCAL_USER


def current_rater(access: Access | None) -> str:
    """Who grades in this session: the signed-in identity, else the name chosen in this tab (session, then the
    URL's `rater`), else `human`."""
    if signed_in(access):
        return access.user  # type: ignore[union-attr]
    name = st.session_state.get(RATER_KEY) or st.query_params.get(RATER_KEY, "")
    try:
        return check_rater(name) if name else "human"
    except ValueError:
        return "human"  # a bad URL parameter is ignored; the picker says why


def rater_picker(access: Access | None, key: str = "rater_input") -> str:
    """Shows who grades; with sign-in off, lets the visitor choose their rater name once (kept in the session and
    the URL). Returns the rater."""
    if signed_in(access):
        st.caption(f"Grading as **{plain(access.user)}** (your sign-in)")  # type: ignore[union-attr]
        return access.user  # type: ignore[union-attr]
    if key not in st.session_state:
        st.session_state[key] = st.query_params.get(RATER_KEY, "") or st.session_state.get(RATER_KEY, "")
    typed = st.text_input("Your rater name", key=key, placeholder="e.g. maya",
                          help="Sign-in is off: grades are stored under this name. It stays in this tab's URL, "
                               "so a bookmark keeps it. Without a name, grades go to `human`.").strip()
    if typed:
        try:
            check_rater(typed)
        except ValueError as exc:
            st.error(plain(exc))
            return current_rater(access)
        st.session_state[RATER_KEY] = typed
        if st.query_params.get(RATER_KEY) != typed:
            st.query_params[RATER_KEY] = typed
    return current_rater(access)


def query_grades(js: JudgmentStore, scope: Scope | None, query: str, hashes: dict[str, str] | None = None,
                 policy: CasePolicy | None = None, ratings: list | None = None) -> dict[str, int]:
    """{trace id: grade} for one query: every human rater's usable grade, combined (mean unless `policy`);
    `ratings` when the page has already read them (`js.ratings(scope, query)`)."""
    ratings = js.ratings(scope, query) if ratings is None else ratings
    combined = combined_grades(ratings, policy or CasePolicy(), hashes)
    return {tid: g for (_, _, tid), g in combined.items()}


def case_qrels(js: JudgmentStore, get_traces, case) -> tuple[dict[str, dict[str, int]], CasePolicy]:
    """(the case's qrels as its policy combines its raters, stale grades left out; the policy). `get_traces(ids)`
    is the trace store's `get` (the current texts decide what is stale)."""
    from retrieval.judgments.model import content_hash

    pol = js.policy(case.name)
    hashed = sorted({j.trace_id for j in js.case_judgments(case) if j.content_hash})
    hashes = {t.id: content_hash(t.content) for t in get_traces(hashed)} if hashed else {}
    return js.qrels(case, policy=pol, hashes=hashes), pol


def unrated_ids(ranked: list[str], graded: dict[str, int] | set[str], k: int = 10) -> list[str]:
    """The ids in the top `k` of `ranked` that no rater has graded (pure). Inspect's final list and Compare call
    it with `query_grades(...)` and mark those rows `UNRATED`."""
    return [t for t in list(dict.fromkeys(ranked))[:k] if t not in graded]


def _save(js: JudgmentStore, scope, query: str, trace_id: str, key: str, scale: str, value=None,
          access: Access | None = None, rater: str = "human", content_hash: str = "") -> None:
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
        return
    st.session_state[f"{key}_stored"] = grade
    st.session_state.pop(f"{key}_error", None)


def grade_widget(js: JudgmentStore, scope: Scope | None, query: str, trace_id: str, *, key_prefix: str = "g_",
                 scale: str = "graded", grades: dict | None = None, shortcuts: bool = False,
                 label: str | None = None, disabled: bool = False, access: Access | None = None,
                 rater: str = "human", content_hash: str = "") -> int | None:
    """A 0–3 (or 0/1) control for one trace; returns `rater`'s stored grade (None = ungraded).

    Mouse: click a grade (click it again to clear). Keyboard: Tab to the control, Enter or Space.
    `shortcuts=True` (for one trace per page, e.g. the one being explained) adds buttons bound to
    the keys 0–3. Pass `grades=js.grades(scope, query)` when drawing many widgets for one query.
    `disabled=True` (a visitor without the grade permission) shows the grade without changing it.
    `label` (default: the trace id) is plain text — ids and trace content are shown as typed, never as Markdown.
    `access` (the page's `Access`) is checked by the store on every save; a refusal is shown under the control.
    `rater` owns the grade; `content_hash` (of the text shown) lets a later edit mark it stale.
    """
    grades = grades if grades is not None else js.grades(scope, query, rater)
    human = grades.get("human", {}).get(trace_id)
    machine = grades.get("machine", {}).get(trace_id)
    key = grade_key(key_prefix, scope, query, trace_id)
    if key not in st.session_state or st.session_state.get(f"{key}_stored") != human:
        st.session_state[key] = human  # restart or another session: show what is stored
        st.session_state[f"{key}_stored"] = human
    allowed = list(SCALES[scale])
    meaning = "; ".join(f"{g} {GRADE_LABELS[g] if scale == 'graded' else ('relevant' if g else 'not relevant')}"
                        for g in allowed)
    st.segmented_control(
        f"{plain(label or trace_id)} · {grade_text(human)}", allowed, key=key, on_change=_save,
        args=(js, scope, query, trace_id, key, scale, None, access, rater, content_hash), disabled=disabled,
        help=f"Grade ({meaning}). Saved at once; click again to clear.")
    if shortcuts:
        cols = st.columns(len(allowed))
        for col, g in zip(cols, allowed):
            col.button(str(g), key=f"{key}_k{g}", shortcut=None if disabled else str(g), on_click=_save,
                       disabled=disabled,
                       args=(js, scope, query, trace_id, key, scale, g, access, rater, content_hash),
                       help=f"Grade {g} (key {g})")
    if machine is not None:
        st.caption(f"machine grade: {machine} (not used by metrics)")
    if st.session_state.get(f"{key}_error"):
        st.error(plain(st.session_state[f"{key}_error"]))  # the message may quote the id
    return human


def visible_case_names(js: JudgmentStore, access: Access | None) -> list[str]:
    """The case names `access` may see: every query of the case in a scope it sees (all of them when it is not
    limited). How many are left out is not said: other users' cases are not a limited visitor's to count."""
    names = js.case_names()
    if access is None or not access.limited:
        return names
    return [n for n in names if all(access.sees(q.scope) for q in js.case(n).queries)]


def own_case_name(access: Access | None) -> str:
    """A new case name of the visitor's own ("maya-cases" for maya@example.com), never a shared one."""
    user = (access.user if access is not None else "") or ""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", user.split("@")[0]).strip("-_.")[:50]
    return f"{stem}-cases" if stem else "my-cases"


def add_to_case_widget(js: JudgmentStore, scope: Scope | None, query: str, key_prefix: str = "g_",
                       access: Access | None = None):
    """A case name and an "Add to case" button; returns the case after adding, else None. A visitor limited to
    some scopes is offered a case name of their own (from their sign-in), never a shared one such as `demo`; the
    store checks `access` on the write and a refusal is an error message."""
    limited = access is not None and access.limited
    if limited:
        default = own_case_name(access)
    else:
        try:
            names = js.case_names()
        except JudgmentStoreError as exc:
            st.warning(f"Cases are off: {plain(exc)}")
            return None
        default = names[-1] if names else "my-case"
    c1, c2 = st.columns([3, 1])
    name = c1.text_input("Case", value=default, key=f"{key_prefix}case_name",
                         help="An existing case, or a new name (letters, digits, - _ .)")
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
        st.success(f"“{plain(query)}” is in case {plain(case.name)} ({len(case.queries)} queries)")
        return case
    return None


def inspect_query_params(cfg: PipelineConfig, query: str, scope: Scope | None, prefix: str = "i_",
                         target: str | None = None) -> dict[str, str]:
    """The parameters of an Inspect link for this query, scope and configuration (`ui.links.write_link`:
    every knob, never the server URL); `target` opens the explanation of that trace."""
    return write_link(prefix, cfg, query, str(scope) if scope is not None else None, target=target)
