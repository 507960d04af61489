"""Who grades in this tab: the rater name with sign-in off (kept in the session and the URL), the signed-in
identity otherwise, and the line that says, before any grade is saved, whom grades are saved as."""
from __future__ import annotations

import streamlit as st

from retrieval.access import Access
from retrieval.judgments.identity import LOCAL, person, signed_in, writer

from .text import plain

RATER_KEY = "rater"  # session key and URL parameter of the chosen rater name (sign-in off)
RATER_LABEL = "Your rater name"


def current_rater(access: Access | None) -> str:
    """Who grades in this session (`identity.writer`, the one rule): the signed-in identity, else the name chosen
    in this tab (session, then the URL's `rater`), else the local operator `local`."""
    name = "" if signed_in(access) else st.session_state.get(RATER_KEY) or st.query_params.get(RATER_KEY, "")
    try:
        return writer(access, name)
    except ValueError:
        return writer(access)  # a bad or reserved URL parameter is ignored; the picker says why


def rater_picker(access: Access | None, key: str = "rater_input") -> str:
    """Shows who grades; with sign-in off, lets the visitor choose their rater name once (kept in the session and
    the URL). Returns the rater."""
    if signed_in(access):
        st.caption(f"Grading as **{plain(access.user)}** (your sign-in)")  # type: ignore[union-attr]
        return access.user  # type: ignore[union-attr]
    if key not in st.session_state:
        st.session_state[key] = st.query_params.get(RATER_KEY, "") or st.session_state.get(RATER_KEY, "")
    typed = st.text_input(RATER_LABEL, key=key, placeholder="e.g. maya",
                          help="Sign-in is off: grades are stored under this name. It stays in this tab's URL, "
                               f"so a bookmark keeps it. Without a name, grades go to `{LOCAL}` (the local "
                               "operator).").strip()
    if typed:
        try:
            person(typed)  # the naming rule; `machine` and `implicit` are reserved
        except ValueError as exc:
            st.error(plain(exc))
            return _saved_as(current_rater(access), refused=True)
        st.session_state[RATER_KEY] = typed
        if st.query_params.get(RATER_KEY) != typed:
            st.query_params[RATER_KEY] = typed
    else:  # emptied: the name is dropped from the session and the URL too, so grades go where the caption says
        st.session_state.pop(RATER_KEY, None)
        if RATER_KEY in st.query_params:
            del st.query_params[RATER_KEY]
    return _saved_as(current_rater(access))


def _saved_as(rater: str, refused: bool = False) -> str:
    """Say, before any grade is saved, whom grades are saved as (sign-in off): the name typed, or the local
    operator when the field is empty — never silently. `refused`: the name typed is not valid, so grades stay with
    `rater` (the last valid name, else the local operator) and the line says so."""
    who = f"**{plain(rater)}**" + (" (the local operator)" if rater == LOCAL else "")
    if refused:
        st.caption(f"Grades are still saved as {who}: the name typed in **{RATER_LABEL}** is not valid (see the error "
                   "above), so it is not used until it is.")
    elif rater == LOCAL:
        st.caption(f"Grades are saved as **{LOCAL}** (the local operator): type a name in **{RATER_LABEL}** "
                   "to save them under it.")
    else:
        st.caption(f"Grades are saved as **{plain(rater)}** (from **{RATER_LABEL}**).")
    return rater
