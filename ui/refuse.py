"""The live tuning panel on Inspect (issue 35): a Custom Components v2 component (`st.components.v2.component`: no
iframe, two-way) that holds the fusion controls, the final list, a rank flow and explanations, and re-fuses in the
browser on every slider step from the record sent once per search (`retrieval.pipeline.browser.refuse_payload`).

The server hears a committed setting (a slider let go, a key pressed, a choice made: state `commit`, each one a new
value, so a row click right after it cannot replace it as a newer trigger would) and an explained row (trigger
`explain`). Their callbacks run before the next script run, so they set the sidebar's widget
state and the explained id: the link, grades, snapshots and the server's table below follow. If the component cannot
be built the page says so, and the server-side table and rank flow still work.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, MutableMapping
from functools import partial
from pathlib import Path
from typing import Any

import streamlit as st

from retrieval.pipeline.browser import committed, refuse_payload

ASSETS = Path(__file__).resolve().parent / "refuse"
NAME = "retrieval_inspector.refuse"
LOADING = ("<div class='rf-loading'>Loading the live part of this page… If this stays, it could not load in this "
           "browser: the rest of the page (the sidebar, the server's tables) is the server's and still works.</div>")


def _inline(name: str) -> str:
    """An ES module of ours as part of the one script: its imports of each other and its `export`s dropped."""
    text = (ASSETS / name).read_text(encoding="utf-8")
    return re.sub(r"^export ", "", re.sub(r'^import .* from "\./[a-z]+\.mjs";$', "", text, flags=re.M), flags=re.M)


def script() -> str:
    """fuse.mjs and case.mjs (the re-fusion and the case metric), then the views: the case mode (caseview.js), the
    presenter's live step (present.js), Home's traces per scope (scopes.js) and the panel (view.js, whose default
    export mounts them)."""
    parts = [_inline("fuse.mjs"), _inline("case.mjs")]
    parts += [(ASSETS / n).read_text(encoding="utf-8") for n in ("caseview.js", "present.js", "scopes.js", "view.js")]
    return "\n".join(parts)


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
        new = committed(value)  # every knob the payload's setting declares, as the sidebar's widgets hold it
    except ValueError as exc:
        state_[f"{prefix}refuse_note"] = f"The live panel sent a setting the server refused: {exc}"
        return
    for name, v in new.items():
        state_[f"{prefix}{name}"] = v
    state_[f"{prefix}refuse_applied"] = value.get("at")  # sent back with the record: the browser knows it landed


def explained(prefix: str, key: str, target_key: str, state: MutableMapping[str, Any] | None = None) -> None:
    """A row the browser explained: `{"id": …, "at": …}`, with `pending` when the browser has not yet seen its last
    commit land. Then this request also carries the sidebar's widget values as the browser last drew them, from
    before the commit, and Streamlit takes them as the person's own change: the commit is applied again after them.
    `at` is sent back with the record (`explained`): until it names its latest click, the browser knows a run's
    explained id is from before that click and keeps the row it shows."""
    state_: MutableMapping[str, Any] = st.session_state if state is None else state  # type: ignore[assignment]
    value = (state_.get(key) or {}).get("explain")
    if isinstance(value, dict):
        state_[f"{prefix}refuse_explained"] = value.get("at")
        if value.get("pending") is not None and value.get("pending") == ((state_.get(key) or {}).get("commit")
                                                                          or {}).get("at"):
            commit(prefix, key, state_)
        value = value.get("id")
    if isinstance(value, str) and value:
        state_[target_key] = value


def opened(prefix: str, key: str, target_key: str, state: MutableMapping[str, Any] | None = None) -> None:
    """A case query the browser asked to open (trigger `open`, from case mode's win and loss lists): it becomes
    the page's query and scope (the case stays chosen; its queries are not searched again)."""
    from ui.links import ALL_SCOPES

    state_: MutableMapping[str, Any] = st.session_state if state is None else state  # type: ignore[assignment]
    value = (state_.get(key) or {}).get("open")
    if not isinstance(value, dict) or not isinstance(value.get("query"), str) or not value["query"].strip():
        return
    state_[f"{prefix}q"] = value["query"]
    state_[f"{prefix}scope"] = str(value.get("scope") or "") or ALL_SCOPES
    state_[target_key] = ""


def panel_grades(grades: Mapping[str, float]) -> dict[str, float]:
    """The query's grades as the panel scores with them: as read (a mean of raters stays a mean, as Compare scores
    it); the panel credits fact rows to their source with the payload's `credit` (`retrieval.metrics.credited`)."""
    return {str(k): float(v) for k, v in grades.items()}


def refuse_panel(prefix: str, diag, grades: Mapping[str, float], target: str | None, target_key: str,
                 case: dict[str, Any] | None = None) -> None:
    """The live panel for `diag` (its record and settings), with the query's `grades` for live metrics, and `case`
    (`ui.refusecase.case_data`) for the case-wide mode."""
    note = st.session_state.pop(f"{prefix}refuse_note", None)
    if note:
        st.warning(note)
    if _MOUNT is None:
        st.warning(f"The live tuning panel could not be built ({_ERROR}); the sidebar and the table below still "
                   "work, a round trip each.", icon=":material/warning:")
        return
    key = f"{prefix}refuse"
    data = {**payload(prefix, diag), "grades": panel_grades(grades), "target": target,
            "case": case, "prefix": prefix, "committed": st.session_state.get(f"{prefix}refuse_applied"),
            "explained": st.session_state.get(f"{prefix}refuse_explained")}
    _MOUNT(key=key, data=data, on_commit_change=partial(commit, prefix, key),
           on_explain_change=partial(explained, prefix, key, target_key),
           on_open_change=partial(opened, prefix, key, target_key))


def scope_rows(counts: dict[str, int], top: int = 12) -> list[tuple[str, int]]:
    """The largest `top` scopes by traces (ties by name), the rest summed on one row."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [(str(k), int(v)) for k, v in ranked[:top]]
    rest = ranked[top:]
    if rest:
        rows.append((f"{len(rest)} more scope{'s' if len(rest) > 1 else ''}", sum(int(v) for _, v in rest)))
    return rows


def scopes_table(key: str, counts: dict[str, int]) -> None:
    """Home's traces per scope, drawn by this component (ui/refuse/scopes.js) so that the browser has loaded the
    component, and run our script, before an example opens Inspect: the live panel's rows then draw as soon as the
    search's result arrives, ahead of the page's heavier elements (measured: docs/BENCHMARKS.md, live tuning)."""
    rows = scope_rows(counts)
    if _MOUNT is None:
        st.table([{"scope": k, "traces": v} for k, v in rows], hide_index=True)
        return
    _MOUNT(key=key, data={"mode": "scopes", "rows": rows})


def live_step(key: str, data: dict[str, Any]) -> None:
    """Presenter mode's live step on this component (`ui.present.live_payload`): re-fused in the browser as the
    balance moves; it sends nothing back (presenter mode changes no setting)."""
    if _MOUNT is None:
        st.info("This part cannot be tried live in this browser; the results above are the step's own.")
        return
    _MOUNT(key=key, data=data)
