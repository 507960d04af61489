"""Judge: rate a case's pooled results one at a time, keyboard-first and blind, as one of several named raters;
then read the team's progress and agreement, set how raters combine, and deal with stale grades and holes.

Blind: the pool (the top k of the chosen snapshots) is picked before judging starts; while judging, the setup
is not drawn, and the step sees only (query, note, trace) items in this rater's own random order — no snapshot
label, configuration or rank is anywhere in the page.
"""
from __future__ import annotations

import streamlit as st

from retrieval.access import known_ids
from retrieval.judgments.fresh import current_hashes
from retrieval.judgments.model import content_hash
from retrieval.judgments.agreement import MIN_SHARED, case_agreement
from retrieval.judgments.queue import OVERLAP, judging_queue, next_open
from retrieval.judgments.raters import item_key
from retrieval.judgments.store import JudgmentStoreError, may_grade
from ui.access import page_guard
from ui.cache import judgments, workspace
from ui.grading import rater_picker, visible_case_names
from ui.judging import (P, agreement_ready, agreement_view, clear_view, exchange_view, holes_view, judge_step,
                        policy_form, progress_table, stale_view)
from ui.text import plain
from ui.widgets import nav

st.set_page_config(page_title="Judge · Hybrid retrieval inspector", page_icon="⚖️", layout="wide")
nav()
acc = page_guard()  # sign-in; only cases whose queries all lie in the visitor's scopes are offered
ws = workspace()
js = judgments(ws.uri)
st.title("Judge")
with st.sidebar:
    rater = rater_picker(acc)
can_grade = may_grade(acc)  # the store's own rule (a denied visitor too)


def setup(case) -> None:
    """Pick the pool (snapshots and k) and start. Only drawn while not judging: labels never show during it."""
    rows = js.snapshot_rows(case.name)
    if not rows:
        st.info(f"Case {plain(case.name)} has no snapshot yet: run one or more configurations over it on the "
                "Snapshots page; their top results are what gets judged here.")
        st.stop()
    ids = [r["id"] for r in rows]
    labels = {r["id"]: f"{r['label'] or r['id']} ({r['id']})" for r in rows}
    chosen = st.multiselect("Pool the top results of", ids, default=ids[-2:], key=f"{P}pool_pick_{case.name}",
                            format_func=lambda i: labels[i],
                            help="Each query's results in the top k of any of these snapshots are judged, once each. "
                                 "Once judging starts, which snapshot found what is hidden.")
    k = st.number_input("k (pool depth per snapshot)", 1, 100, js.policy(case.name).k, key=f"{P}pool_k")
    overlap = st.number_input("Shared items first", 0, 1000, OVERLAP, key=f"{P}pool_overlap",
                              help="The same items for every rater, at the start of each queue, so the team's "
                                   f"agreement rests on items graded in common (shown from {MIN_SHARED} on).")
    # Without the grading rule the queue can be read, not graded: the button says so rather than invite judging.
    if st.button("Start judging" if can_grade else "Browse the queue (grading is off)", key=f"{P}start",
                 type="primary", disabled=not chosen):
        st.session_state[f"{P}pool"] = (tuple(chosen), int(k), int(overlap))
        st.session_state[f"{P}active"] = True
        st.session_state.pop(f"{P}spec", None)
        st.rerun()


def build_queue(case) -> bool:
    """The queue, texts and this rater's ratings in the session (rebuilt when case, rater or pool change)."""
    pool_ids, k, overlap = st.session_state[f"{P}pool"]
    spec = (case.name, rater, pool_ids, k, overlap)
    if st.session_state.get(f"{P}spec") == spec:
        return True
    snaps = [js.snapshot(i) for i in pool_ids]
    queue = [i for i in judging_queue(case, snaps, k, rater, overlap) if acc.sees(i.scope)]
    if not queue:
        st.info("These snapshots hold no result for this case's queries.")
        return False
    texts = {t.id: t.content for t in ws.store.get(sorted({i.trace_id for i in queue}))}
    keys = {i.key for i in queue}
    mine = {item_key(j): (j.grade, j.content_hash, j.note, j.created_at) for j in js.case_judgments(case)
            if j.who == rater and item_key(j) in keys}
    start = next_open(queue, {key for key, (_, h, _, _) in mine.items()
                              if not (h and h != content_hash(texts.get(key[2], "")))})
    st.session_state.update({f"{P}queue": queue, f"{P}texts": texts, f"{P}mine": mine,
                             f"{P}pos": start or 0, f"{P}spec": spec})
    return True


def team_sections(case) -> None:
    """Everything a team lead reads beside the queue (none of it names a configuration)."""
    found = js.case_judgments(case)
    hashed = sorted({j.trace_id for j in found if j.content_hash})
    traces = ws.store.get(hashed) if hashed else []
    texts = {t.id: t.content for t in traces}
    hashes = current_hashes(found, lambda _ids: traces)  # the one rule for stale (retrieval.judgments.fresh)
    queue = st.session_state.get(f"{P}queue") if st.session_state.get(f"{P}active") else None
    pol = js.policy(case.name)
    st.caption(f"Metrics of this case use {plain(pol.describe())}, k = {pol.k}; \"can't rate\" and stale grades "
               "never count.")
    agg = case_agreement(found, case.scale, hashes)
    with st.expander("Agreement between raters", expanded=agreement_ready(agg), key=f"{P}x_agree"):
        if queue:
            progress_table(queue, found, hashes)
        agreement_view(agg, case.scale)
    with st.expander("Combination policy, k and the machine rater", key=f"{P}x_policy"):
        policy_form(js, case, found, hashes, acc, not can_grade)
    with st.expander("Stale grades (the text changed after grading)", key=f"{P}x_stale"):
        stale_view(js, case, found, hashes, texts, acc, not can_grade)
    if queue:
        with st.expander("Holes: pooled results nobody has graded", key=f"{P}x_holes"):
            holes_view(queue, found, hashes)
    with st.expander("Bulk clear", key=f"{P}x_clear"):
        clear_view(js, found, hashes, acc, not can_grade)
    with st.expander("Export and import ratings", key=f"{P}x_exchange"):
        exchange_view(js, case, known_ids(ws.store, acc), acc, not can_grade, hashes, rater)


def page() -> None:
    names = visible_case_names(js, acc)
    if not names:
        st.info("No case of yours to judge yet: only cases whose queries all lie in your scopes are listed. Build one "
                "on Inspect (\"Add to case\")." if acc.limited else
                "No case to judge yet: build one on Inspect (\"Add to case\") or import one on the Snapshots page.")
        st.stop()
    case = js.case(st.selectbox("Case", names, key=f"{P}case"))
    if not can_grade:
        st.caption("You may read this case but not grade it here.")
    if st.session_state.get(f"{P}active") and st.session_state.get(f"{P}pool"):
        if st.button("Stop judging (change the pool)" if can_grade else "Stop browsing (change the pool)",
                     key=f"{P}stop"):
            st.session_state[f"{P}active"] = False
            st.rerun()
        if build_queue(case):
            judge_step(js, case, rater, acc, not can_grade)
    else:
        setup(case)
    st.divider()
    judging = bool(st.session_state.get(f"{P}active"))
    if not judging or st.toggle("Show the team view (agreement, policy, stale grades, export)", key=f"{P}team"):
        team_sections(case)  # off while judging unless asked: the step's page stays light (a faster next item)


try:
    page()
except JudgmentStoreError as exc:
    st.warning(f"Grading and cases are off: {plain(exc)}")
