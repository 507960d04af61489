"""The live panel's case mode (issue 35, item 3): pick a case, search its queries once, send them to the browser.

The browser then re-fuses every query of the case on each slider step and shows the case's mean nDCG@10 and
recall@10 (and each query's change) with no message to the server until the slider is let go. The searching, the
payload and the metric are the library's (`retrieval.judgments.live`); this module holds the picker and the
session's copy of the searched queries (searched again only when a search setting, the case or the store changes;
a fusion setting re-fuses what is held).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import streamlit as st

from retrieval.judgments.live import case_payload, search_case
from retrieval.judgments.store import JudgmentStoreError
from ui.cache import get_generator, get_reranker
from ui.grading import case_qrels, visible_case_names
from ui.access import session_access
from ui.glossary import helps
from ui.state import CachedModels

OFF = ""


def pick_case(prefix: str, js, access) -> str | None:
    """The case whose mean metric the panel shows while dragging, or None (the selector says why it costs)."""
    try:
        names = visible_case_names(js, access)
    except JudgmentStoreError:
        return None
    if not names:
        return None
    key = f"{prefix}live_case"
    if st.session_state.get(key) not in (OFF, *names):
        st.session_state[key] = OFF
    st.selectbox("Case-wide metric", [OFF, *names], key=key,
                 format_func=lambda n: "off: this query's metric only" if n == OFF else f"case {n}",
                 help="Search every query of a case once, then watch the case's mean nDCG@10 and recall@10 move "
                      "as you drag (each query re-fused in your browser).\n\n" + helps("nDCG@10", "recall@10"))
    return st.session_state[key] or None


def _searched(prefix: str, ws, case, cfg, version) -> dict[str, Any]:
    """Every query of `case` searched (or re-fused) for `cfg`, kept in the session for the next setting."""
    slot = f"{prefix}live_case_held"
    where = (ws.uri, version, case.name, tuple(case.queries), cfg.search_key())
    held = st.session_state.get(slot)
    before = held[1] if held is not None and held[0] == where else None
    models = CachedModels(get_reranker, get_generator)
    if before is None:
        with st.spinner(f"Searching the {len(case.queries)} queries of case {case.name} once…"):
            searched = search_case(ws, case, cfg, models, session_access())
    else:
        searched = search_case(ws, case, cfg, models, session_access(), held=before)
    st.session_state[slot] = (where, searched)
    return searched


def case_data(prefix: str, ws, name: str | None, cfg, js, get_traces, version) -> dict[str, Any] | None:
    """The case as the panel receives it (`case_payload` with a signature), or None (no case, or it cannot be read:
    then the page says why and the query's own panel still works)."""
    if not name:
        return None
    try:
        case = js.case(name)
        qrels, _ = case_qrels(js, get_traces, case)
    except (ValueError, JudgmentStoreError) as exc:
        st.warning(f"The case-wide metric is off: {exc}")
        return None
    data = case_payload(case, _searched(prefix, ws, case, cfg, version), qrels)
    lists = [[q["qid"], q["grades"], q["credit"], q["record"] and q["record"]["server_final"]] for q in data["queries"]]
    data["sig"] = hashlib.sha1(json.dumps(lists, sort_keys=True).encode()).hexdigest()[:16]
    st.session_state[f"{prefix}live_case_payload"] = data  # what the panel was sent (tests read it)
    return data
