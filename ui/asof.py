"""The As-of picker, its banner and the Changes view (SPEC §16), called from Inspect in one separate spot.

The picker (sidebar: latest · version · tag · date-time) yields an `AsOfChoice`; the address carries it as
`?asof=` (a version, a tag or an ISO time: untrusted, parsed by `retrieval.store.versions.parse_as_of`, and a
bad or unknown value falls back to the newest state with a warning naming it). Searches then read through
`retrieval.history.WorkspaceAsOf`, so explanations use that version's BM25 statistics. Changes runs the query
at two versions and shows the five stage lists side by side, what entered and left, and who displaced whom.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import streamlit as st

from retrieval.history import WorkspaceAsOf, diff_results, fact_changes, pin
from retrieval.hybrid import STAGES
from retrieval.pipeline.factory import visitor_statistics
from retrieval.store.versions import parse_as_of
from ui.text import plain

PARAM = "asof"  # not page-prefixed: the page's own link reader never sees it
MODES = ("latest", "version", "tag", "date-time")


@dataclass(frozen=True)
class AsOfChoice:
    value: int | str | datetime | None  # None: the newest state
    text: str  # what the address carries ('' for latest)
    error: str | None = None  # a bad or unknown value (the newest state is shown instead)


def _seed(ws: Any, prefix: str) -> None:
    """Set the picker from `?asof=` when the address changed it (a shared link), before widgets draw."""
    raw = str(st.query_params.get(PARAM, "") or "")[:120]
    if st.session_state.get(f"{prefix}asof_seen") == raw:
        return
    st.session_state[f"{prefix}asof_seen"] = raw
    try:
        value = parse_as_of(raw)
        if value is not None:
            pin(ws.store, value)
    except ValueError as exc:
        st.session_state[f"{prefix}asof_bad"] = f"Ignored as-of {raw!r} in the link: {exc}"
        st.session_state[f"{prefix}asof_mode"] = "latest"
        return
    mode = ("latest" if value is None else "version" if isinstance(value, int) else
            "date-time" if isinstance(value, datetime) else "tag")
    st.session_state[f"{prefix}asof_mode"] = mode
    key = {"version": "asof_version", "tag": "asof_tag", "date-time": "asof_time"}.get(mode)
    if key:
        st.session_state[f"{prefix}{key}"] = value if mode != "date-time" else raw


def picker(ws: Any, prefix: str) -> AsOfChoice:
    """The As-of picker in the sidebar; a changed choice forgets the page's cached search."""
    _seed(ws, prefix)
    versions = ws.store.stored_versions()
    with st.sidebar:
        st.subheader("As of")
        mode = st.radio("Read the store", MODES, key=f"{prefix}asof_mode", horizontal=True,
                        help="Every LanceDB commit is a version; inspect a query as the store was then.")
        choice = _value(ws, prefix, mode, versions)
        if versions:
            st.caption(f"{len(versions)} version{'' if len(versions) == 1 else 's'} stored, the oldest "
                       f"(version {versions[0][0]}) from "
                       f"{versions[0][1]:%Y-%m-%d %H:%M} UTC. Optimizing prunes untagged versions older than 7 days; "
                       "tagged ones are kept (an operator can tag a version: `python -m retrieval tag NAME`).")
    bad = st.session_state.pop(f"{prefix}asof_bad", None)
    if choice.value is not None:
        try:
            pin(ws.store, choice.value)
        except ValueError as exc:
            choice = AsOfChoice(None, "", str(exc))
    if bad and choice.error is None:
        choice = AsOfChoice(choice.value, choice.text, bad)
    st.session_state[f"{prefix}asof_seen"] = choice.text  # the address this page writes is not a new link
    if st.session_state.get(f"{prefix}asof_last") != choice.text:
        st.session_state[f"{prefix}asof_last"] = choice.text
        st.session_state[f"{prefix}result"] = None  # the cached search was of another state
    return choice


def version_labels(ws: Any, versions: list[tuple[int, datetime]]) -> dict[int, str]:
    """Each version as a picker shows it: "v12 · release-1 · 2026-12-01 14:03 UTC" (its tags, when it has any)."""
    tags: dict[int, list[str]] = {}
    for name, v in ws.store.tags().items():
        tags.setdefault(v, []).append(name)
    return {v: " · ".join([f"v{v}", *([", ".join(sorted(tags[v]))] if v in tags else []), f"{t:%Y-%m-%d %H:%M} UTC"])
            for v, t in versions}


def _value(ws: Any, prefix: str, mode: str, versions: list[tuple[int, datetime]]) -> AsOfChoice:
    if mode == "version":
        options = [v for v, _ in reversed(versions)]
        labels = version_labels(ws, versions)
        if st.session_state.get(f"{prefix}asof_version") not in options:
            st.session_state.pop(f"{prefix}asof_version", None)
        v = st.selectbox("Version", options, key=f"{prefix}asof_version", format_func=lambda x: labels.get(x, str(x)))
        return AsOfChoice(v, str(v)) if v is not None else AsOfChoice(None, "")
    if mode == "tag":
        tags = list(ws.store.tags())
        if not tags:
            st.caption("No tags yet (an operator can tag the current version: `python -m retrieval tag NAME`).")
            return AsOfChoice(None, "")
        if st.session_state.get(f"{prefix}asof_tag") not in tags:
            st.session_state.pop(f"{prefix}asof_tag", None)
        t = st.selectbox("Tag", tags, key=f"{prefix}asof_tag")  # options show as typed
        return AsOfChoice(t, t)
    if mode == "date-time":
        text = st.text_input("Date-time (ISO, with a zone)", key=f"{prefix}asof_time",
                             placeholder="2026-03-01T12:00:00Z").strip()
        if not text:
            return AsOfChoice(None, "")
        try:
            value = parse_as_of(text)
        except ValueError as exc:
            return AsOfChoice(None, "", str(exc))
        return AsOfChoice(value, text) if isinstance(value, datetime) else AsOfChoice(
            None, "", f"{text!r} is not a date-time; e.g. 2026-03-01T12:00:00Z")
    return AsOfChoice(None, "")


def link_params(choice: AsOfChoice) -> dict[str, str]:
    """The address parameter that carries the choice (none for the newest state)."""
    return {PARAM: choice.text} if choice.value is not None else {}


def workspace_for(ws: Any, choice: AsOfChoice) -> Any:
    """What the page's search runs on: the live workspace, or the same one read as of the choice."""
    return ws if choice.value is None else WorkspaceAsOf(ws, choice.value)


def store_get(ws: Any, choice: AsOfChoice) -> Any:
    """`get(ids)` on the store as of the choice (the texts shown are the texts of that version)."""
    return ws.store.get if choice.value is None else ws.retriever(as_of=choice.value).memory_store.get


def _scopes(access: Any) -> Any:
    """The scope labels a visitor's counts are made over (None: every scope)."""
    return access.scopes if access is not None and access.limited else None


def banner(ws: Any, choice: AsOfChoice, access: Any = None) -> None:
    """Which state the page shows (always, when it is not the newest); a limited visitor's counts are of their
    scopes only."""
    if choice.error:
        st.warning(plain(f"{choice.error} — showing the newest state instead."), icon=":material/history:")
    if choice.value is None:
        return
    state = ws.retriever(as_of=choice.value).as_of_state
    st.info(plain(state.banner_for(_scopes(access))) + " Writes and grades still go to the newest state.",
            icon=":material/history:")


def superseded(ws: Any, choice: AsOfChoice, scope: Any, facts: Any) -> None:
    """Facts injected as of an earlier state that were superseded or removed since: shown, and said so."""
    if choice.value is None or not facts:
        return
    for c in fact_changes(facts, ws.facts, scope):
        if c["state"] != "current":
            st.caption(":material/update: " + plain(c["sentence"]))


def changes(ws: Any, choice: AsOfChoice, prefix: str, query: str, scope: Any, run: Any, facts: Any = (),
            access: Any = None) -> None:
    """The Changes view: `run(workspace)` searches with the page's configuration; A and B are versions.
    `facts` (those the page's search injected) are checked against the newest facts first. The idf explanations
    read each version with the statistics the visitor's searches use (`visitor_statistics(access)`)."""
    superseded(ws, choice, scope, facts)
    stored = ws.store.stored_versions()
    versions, labels = [v for v, _ in stored], version_labels(ws, stored)
    if len(versions) < 2:
        return
    latest = versions[-1]
    a0 = pin(ws.store, choice.value).version if choice.value is not None else versions[-2]
    b0 = latest if a0 != latest else versions[-2]
    with st.expander("Changes: this query at two versions of the store", expanded=True):
        ca, cb, cc = st.columns([2, 2, 1.4], vertical_alignment="bottom")
        opts = list(reversed(versions))
        label = lambda x: labels.get(x, str(x))
        a = ca.selectbox("From (A)", opts, index=opts.index(a0), key=f"{prefix}chg_a", format_func=label)
        b = cb.selectbox("To (B)", opts, index=opts.index(b0), key=f"{prefix}chg_b", format_func=label)
        if not cc.toggle("Show changes", key=f"{prefix}chg_on"):
            st.caption("Runs the query at both versions with these settings and says what moved and why.")
            return
        stats = visitor_statistics(access)
        then, now = ws.retriever(as_of=a, bm25_statistics=stats), ws.retriever(as_of=b, bm25_statistics=stats)
        res_a, res_b = run(WorkspaceAsOf(ws, a)), run(WorkspaceAsOf(ws, b))
        show_diff(diff_results(then, now, res_a, res_b, query, scope))


def show_diff(out: dict) -> None:
    """A diff (retrieval.history.diff) as DOM text: every id and reason is user data, shown plain."""
    st.markdown(f"**A** · {plain(out['from']['label'])}  \n**B** · {plain(out['to']['label'])}")
    if not out["displaced"]:
        st.success(f"The final top {out['k']} is the same set at both versions.")
    for d in out["displaced"]:
        st.markdown(f"**{plain(d['id'])}** left the final top {out['k']} (was #{d['rank_a']}): {plain(d['why'])}")
        for y in d["displaced_by"]:
            st.markdown(f"- displaced by **{plain(y['id'])}** (#{y['rank_b']}): {plain('; '.join(y['reasons']))}")
    for m in out["idf"]:
        st.caption(plain(m["sentence"]))
    for c in out.get("facts", []):
        if c["state"] != "current":
            st.caption(plain(c["sentence"]))
    cols = st.columns(len(STAGES))
    n = out["shown"]
    for col, stage in zip(cols, STAGES):
        s = out["stages"][stage]
        with col:
            st.markdown(f"**{stage}**")
            st.caption("A: " + plain(", ".join(s["a"][:n]) or "—"))
            st.caption("B: " + plain(", ".join(s["b"][:n]) or "—"))
            if s["entered"]:  # over the two lists printed just above (retrieval.history.diff._stage)
                st.caption(f"entered the top {n}: " + plain(", ".join(s["entered"])))
            if s["left"]:
                st.caption(f"left the top {n}: " + plain(", ".join(s["left"])))
