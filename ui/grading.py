"""Grading widgets: grade a trace for a query (0–3 or binary) by mouse or keyboard, saved at once;
add a query to a case; the query parameters that open Inspect on a query and a configuration.

The store is the truth: a widget shows the stored human grade (so grades survive restarts and
follow other sessions' edits); a click writes it before the rerun. Machine grades are shown beside
it, labelled, never in the control.
"""
from __future__ import annotations

import hashlib

import streamlit as st

from retrieval.pipeline.config import PipelineConfig
from retrieval.judgments import GRADE_LABELS, SCALES, JudgmentStore
from retrieval.judgments.model import query_key, scope_text
from retrieval.types import Scope

from .links import write_link
from .text import plain

UNGRADED = "○ ungraded"


def grade_key(prefix: str, scope: Scope | None, query: str, trace_id: str) -> str:
    digest = hashlib.blake2b(f"{scope_text(scope)}\x1f{query_key(query)}\x1f{trace_id}".encode(),
                             digest_size=6).hexdigest()
    return f"{prefix}grade_{digest}"


def grade_text(grade: int | None) -> str:
    return UNGRADED if grade is None else f"● {grade} {GRADE_LABELS.get(grade, '')}".strip()


def _save(js: JudgmentStore, scope, query: str, trace_id: str, key: str, scale: str, value=None) -> None:
    grade = st.session_state.get(key) if value is None else value
    if value is not None:
        st.session_state[key] = value
    try:
        if grade is None:
            js.clear_grade(scope, query, trace_id)
        else:
            js.set_grade(scope, query, trace_id, grade, scale=scale)
    except ValueError as exc:
        st.session_state[f"{key}_error"] = str(exc)
        return
    st.session_state[f"{key}_stored"] = grade
    st.session_state.pop(f"{key}_error", None)


def grade_widget(js: JudgmentStore, scope: Scope | None, query: str, trace_id: str, *, key_prefix: str = "g_",
                 scale: str = "graded", grades: dict | None = None, shortcuts: bool = False,
                 label: str | None = None, disabled: bool = False) -> int | None:
    """A 0–3 (or 0/1) control for one trace; returns the stored human grade (None = ungraded).

    Mouse: click a grade (click it again to clear). Keyboard: Tab to the control, Enter or Space.
    `shortcuts=True` (for one trace per page, e.g. the one being explained) adds buttons bound to
    the keys 0–3. Pass `grades=js.grades(scope, query)` when drawing many widgets for one query.
    `disabled=True` (a visitor without the grade permission) shows the grade without changing it.
    `label` (default: the trace id) is plain text — ids and trace content are shown as typed, never as Markdown.
    """
    grades = grades if grades is not None else js.grades(scope, query)
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
        args=(js, scope, query, trace_id, key, scale), disabled=disabled,
        help=f"Grade ({meaning}). Saved at once; click again to clear.")
    if shortcuts:
        cols = st.columns(len(allowed))
        for col, g in zip(cols, allowed):
            col.button(str(g), key=f"{key}_k{g}", shortcut=None if disabled else str(g), on_click=_save,
                       disabled=disabled,
                       args=(js, scope, query, trace_id, key, scale, g), help=f"Grade {g} (key {g})")
    if machine is not None:
        st.caption(f"machine grade: {machine} (not used by metrics)")
    if st.session_state.get(f"{key}_error"):
        st.error(plain(st.session_state[f"{key}_error"]))  # the message may quote the id
    return human


def add_to_case_widget(js: JudgmentStore, scope: Scope | None, query: str, key_prefix: str = "g_"):
    """A case name and an "Add to case" button; returns the case after adding, else None."""
    names = js.case_names()
    c1, c2 = st.columns([3, 1])
    name = c1.text_input("Case", value=names[-1] if names else "my-case", key=f"{key_prefix}case_name",
                         help="An existing case, or a new name (letters, digits, - _ .)")
    if c2.button("Add to case", key=f"{key_prefix}add_case"):
        try:
            case = js.add_to_case(name.strip(), query, scope)
        except ValueError as exc:
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
