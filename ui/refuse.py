"""The live tuning panel on Inspect (issue 35): a Custom Components v2 component (`st.components.v2.component`: no
iframe, two-way) that holds the fusion controls, the final list, a rank flow and explanations, and re-fuses in the
browser on every slider step from the record sent once per search (`retrieval.pipeline.browser.refuse_payload`).

The server hears a committed setting (a slider let go, a key pressed, a choice made: trigger `commit`) and an
explained row (trigger `explain`). Their callbacks run before the next script run, so they set the sidebar's widget
state and the explained id: the link, grades, snapshots and the server's table below follow. If the component cannot
be built the page says so, and the server-side table and rank flow still work.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import MutableMapping
from functools import partial
from pathlib import Path
from typing import Any

import streamlit as st

from retrieval.pipeline.browser import refuse_payload
from retrieval.pipeline.settings import check_choice, check_knob

ASSETS = Path(__file__).resolve().parent / "refuse"
NAME = "retrieval_inspector.refuse"
LOADING = ("<div class='rf-loading'>Loading the live tuning panel… If this stays, it could not load in this browser: "
           "the sidebar and the table below are the server's and still work.</div>")
KNOBS = ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight", "recall_top_k")


def script() -> str:
    """fuse.mjs (its `export`s dropped: one module in the page) followed by view.js."""
    fuse = re.sub(r"^export ", "", (ASSETS / "fuse.mjs").read_text(encoding="utf-8"), flags=re.M)
    return fuse + "\n" + (ASSETS / "view.js").read_text(encoding="utf-8")


def _component():
    return st.components.v2.component(NAME, html=LOADING, css=(ASSETS / "refuse.css").read_text(encoding="utf-8"),
                                      js=script())


try:
    _MOUNT: Any = _component()
    _ERROR: str | None = None
except Exception as exc:  # any failure to build it must leave the page working
    _MOUNT, _ERROR = None, f"{type(exc).__name__}: {exc}"


def payload(prefix: str, diag) -> dict[str, Any]:
    """The record as the browser needs it, built once per search and setting (BM25 terms are look-ups)."""
    key = (id(diag.record), json.dumps(diag.settings.as_dict(), sort_keys=True, default=str))
    held = st.session_state.get(f"{prefix}refuse_payload")
    if held is None or held[0] != key:
        data = refuse_payload(diag)
        sig = hashlib.sha1(json.dumps([data["dense"], data["sparse"], data["facts"]]).encode()).hexdigest()[:16]
        held = (key, {**data, "sig": sig})
        st.session_state[f"{prefix}refuse_payload"] = held
    return held[1]


def commit(prefix: str, key: str, state: MutableMapping[str, Any] | None = None) -> None:
    """A setting the browser committed: into the sidebar's widget state (`state`, default the session's), checked by
    the library's own rules."""
    state_: MutableMapping[str, Any] = st.session_state if state is None else state  # type: ignore[assignment]
    value = (state_.get(key) or {}).get("commit")
    if not isinstance(value, dict):
        return
    try:
        new: dict[str, Any] = {n: check_knob(n, value[n]) for n in KNOBS if n in value}
        new.update({n: check_choice(n, value[n]) for n in ("fusion", "normalization") if n in value})
    except ValueError as exc:
        state_[f"{prefix}refuse_note"] = f"The live panel sent a setting the server refused: {exc}"
        return
    for name, v in new.items():
        state_[f"{prefix}{name}"] = int(v) if name == "rrf_k" else v


def explained(key: str, target_key: str) -> None:
    value = (st.session_state.get(key) or {}).get("explain")
    if isinstance(value, str) and value:
        st.session_state[target_key] = value


def refuse_panel(prefix: str, diag, grades: dict[str, int], target: str | None, target_key: str) -> None:
    """The live panel for `diag` (its record and settings), with the query's `grades` for live metrics."""
    note = st.session_state.pop(f"{prefix}refuse_note", None)
    if note:
        st.warning(note)
    if _MOUNT is None:
        st.warning(f"The live tuning panel could not be built ({_ERROR}); the sidebar and the table below still "
                   "work, a round trip each.", icon=":material/warning:")
        return
    key = f"{prefix}refuse"
    data = {**payload(prefix, diag), "grades": {k: int(v) for k, v in grades.items()}, "target": target}
    _MOUNT(key=key, data=data, on_commit_change=partial(commit, prefix, key),
           on_explain_change=partial(explained, key, target_key))
