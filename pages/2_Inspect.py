"""Inspect: one query through the pipeline — the five stages in one aligned table, the rank flow, and why each trace
is where it is.

Click a row of the stage table, or a point in the rank flow, to explain that trace (or type any id).
The address holds the whole view — query, scope, every setting (defaults too), the explained id and
the store's version — so a copied link reproduces it, and says so when it cannot.
"""
from __future__ import annotations

import html
import time

import streamlit as st

from retrieval.hybrid import STAGES
from retrieval.ingest.demo import load_examples
from retrieval.judgments.store import JudgmentStoreError
from retrieval.metrics import credited
from retrieval.pipeline.explain import explain
from retrieval.workspace.retrievers import store_lookup
from ui import view
from ui import asof as asof_ui  # As of: picker, banner, Changes (ui/asof.py)
from ui.access import session_access
from ui.cache import ensure_model, get_generator, get_reranker, judgments, workspace
from ui.derive import adaptive_note, final_how, final_rule, normalisations
from ui.stages import legend, remember_final
from ui.charts import TOP_N, rank_flow_figure, timings_figure
from ui.grading import current_rater, query_grades, unrated_ids, unrated_line
from ui.gradepanel import grading_panel, hand_over
from ui.links import DEPTHS, write_link
from ui.state import cache_key, remember_injected_facts, run_config
from ui.access import page_guard
from ui.panel import config_io, config_panel, usable_config
from ui import refusecase
from ui.refuse import refuse_panel
from ui.calibration import caption as calibration_caption, store_defaults
from ui.text import plain
from ui.widgets import (escalation_view, explanation_details, explanation_summary, link_popover, nav, plotly_pick,
                        scope_picker, seed_from_link, share_link, stage_table, write_params)

P = "i_"  # widget key (and URL parameter) prefix for this page
TARGET = f"{P}typed"  # the explained id: typed, or set by a click
ROWS = 10

st.set_page_config(page_title="Inspect · Hybrid retrieval inspector", page_icon=":material/manage_search:",
                   layout="wide")
nav()
page_guard()  # sign-in, allowed scopes, read-only
st.session_state.setdefault(f"{P}result", None)

ws = workspace()
access = session_access()  # a link may name only scopes this visitor may see
version = ws.store.version()
if st.session_state.get(f"{P}scopes_at", (None,))[0] != (ws.uri, version):  # one read per store version, not per rerun
    st.session_state[f"{P}scopes_at"] = ((ws.uri, version), [str(s) for s in ws.store.scope_counts()])
scopes = [s for s in st.session_state[f"{P}scopes_at"][1] if access.sees(s)]
seed_from_link(P, scopes, version, {"q": f"{P}q", "scope": f"{P}scope", "id": TARGET, "depth": f"{P}depth"},
               allow_all=access.sees(None))

as_of = asof_ui.picker(ws, P)  # As of (sidebar): a version, tag or time; `?asof=` carries it
rws = asof_ui.workspace_for(ws, as_of)  # what searches read: the live store, or the store as of then
with st.sidebar:
    st.header("Settings")
    cfg = config_panel(P, store_defaults(ws))  # the store's calibrated defaults, when it records some
    st.divider()
    config_io(P, cfg)

st.title("Inspect")
with st.container():  # the banners that apply: one element of the page whatever they hold (see `explorer`)
    asof_ui.banner(ws, as_of, access)  # which state is shown, when not the newest
    calibration_caption(ws, always=False)  # one line when the store is calibrated (ui/calibration.py)
    if ws.store.count() == 0:
        st.info("The store is empty: load the demo corpus on the Corpus page first.")
        st.page_link("pages/1_Corpus.py", label="Go to Corpus", icon=":material/library_books:")
        st.stop()

c1, c2, c3 = st.columns([5, 2, 1.2], vertical_alignment="bottom")
with c2:  # picked first: the query box's example comes from the selected scope
    scope = scope_picker(ws, f"{P}scope")
query = c1.text_input("Query", key=f"{P}q", placeholder=view.query_placeholder(scope, load_examples()))
target_typed = (st.session_state.get(TARGET) or "").strip()
depth = st.session_state.get(f"{P}depth", TOP_N)
params = write_link(P, cfg, query, st.session_state.get(f"{P}scope"), target_typed or None, depth, version)
params.update(asof_ui.link_params(as_of))
write_params(P, params)
link_slot = c3.empty()  # the link popover: drawn by the explorer below, which also writes the explained id
with st.container():  # this search's notes and status: one element of the page whatever they hold (see `explorer`)
    if st.session_state.get(f"{P}notes_for") is None:
        st.session_state[f"{P}notes_for"] = params
    if st.session_state[f"{P}notes_for"] == params:  # a link's notes stay until the view is changed
        for note in st.session_state.get(f"{P}link_notes", []):
            st.warning(note, icon=":material/link:")

    if not query.strip():
        st.caption("Type a query, or open one of the examples on the Home page.")
        st.stop()

    with st.spinner("Loading the embedding model (all-MiniLM-L6-v2)…"):
        ensure_model()
    run_cfg, backend_notes = usable_config(cfg, get_reranker, get_generator)
    for note in backend_notes:
        st.warning(note)
    cached = st.session_state[f"{P}result"]
    t0 = time.perf_counter()
    try:
        if cached is None or cached[0] != cache_key(query, scope, run_cfg):
            steps = view.run_steps(run_cfg)
            with st.status("Searching: " + " → ".join(steps) + "…", expanded=False) as status:
                result, refusion = run_config(rws, run_cfg, query, scope, get_reranker, get_generator, cached)
                status.update(label=f"Searched in {(time.perf_counter() - t0) * 1000:.0f} ms: " + " → ".join(steps),
                              state="complete")
        else:
            result, refusion = run_config(rws, run_cfg, query, scope, get_reranker, get_generator, cached)
    except (ValueError, ImportError) as exc:
        st.error(plain(exc))  # it may quote the query or an id
        st.stop()
    if not refusion:  # keep the searched result: every slider move re-fuses from it
        st.session_state[f"{P}result"] = (cache_key(query, scope, run_cfg), result)
    remember_injected_facts(scope, query, result.diagnostics.facts)  # for the Facts page
    d = result.diagnostics

    changed, moved = remember_final(st.session_state.setdefault(f"{P}finals", {}), query, scope, run_cfg,
                                    d.stage_ids["final"])
    # Said only when this run re-fused for a new setting; the explorer's own reruns (a click, a grade) drop it.
    st.session_state[f"{P}refused"] = (f"⚡ Re-fused from cached stage lists in {d.timings_ms.get('refusion', 0):.2f} "
                                       "ms — no embedding, search or reranker call." if refusion and changed else None)
    escalation_view(d.escalations)
    if d.hyde:
        st.info(f"**HyDE hypothesis** (searched instead of the query): {plain(d.hyde)}")
    if d.multi_query:
        st.info("**Multi-query variants**: " + " · ".join(f"“{plain(v)}”" for v in d.multi_query))
    split = view.split_summary(d)
    if split:
        st.info(split, icon=":material/content_cut:")


shown = [i for s in STAGES for i in d.stage_ids[s][:ROWS]] + list(moved)
whole = view.whole_texts(d, asof_ui.store_get(ws, as_of), shown)


@st.fragment
def explorer(d, whole: dict, query: str, scope, moved: dict, traces: list, params: dict) -> None:
    """The stage table, the grading panel, the rank flow and the explanation as one fragment: a row or rank-flow
    click (or a typed id, a sort, the flow's depth) reruns this part only — never the search above — and writes
    the explained id into the link. The grading panel inside is its own fragment: a grade reruns the panel alone
    (the table's ○ ungraded marks follow on the next rerun of this part).

    Streamlit names a fragment by its place on the page and drops a click or grade sent to a name it no longer
    holds, so everything above this that one run draws and the next may not (a status, a note) sits in a container
    of its own: the place, and the name, stay (tests/test_fragment_ids.py)."""
    st.caption(st.session_state.pop(f"{P}refused", None) or f"{d.candidates_scanned} candidates in the pool")
    js, rater = judgments(ws.uri), current_rater(access)
    handed = None
    try:  # one read: the table's ○ ungraded marks, and the panel's grades on this run (it reads anew on its own)
        ratings = js.ratings(scope, query)
        handed = hand_over(P, ratings)
        # a fact row is graded as its source trace, as every metric scores it (retrieval.metrics.credited)
        unrated = unrated_ids(credited(d.stage_ids["final"], d.credit), query_grades(js, scope, query, ratings=ratings),
                              k=ROWS)
    except JudgmentStoreError:  # a damaged judgments table: the panel says so; the rest of the page works
        unrated = []
    marked = unrated + [f for f, src in d.credit.items() if src in unrated]  # a fact row of an ungraded source too
    stage_table(d, whole, d.searched_query or query, ROWS, f"{P}stages", TARGET, moved, marked)
    st.caption(legend(bool(moved)) + " " + (final_rule(d) or "")
               + (" " + unrated_line(len(unrated), len(d.stage_ids["final"]), ROWS) if unrated else ""))
    target = (st.session_state.get(TARGET) or "").strip() or (d.stage_ids["final"] or [None])[0]
    grading_panel(js, scope, query, traces, access, rater, key_prefix=P, k=ROWS, handed=handed)
    st.divider()
    left, right = st.columns([3, 2])
    with right:
        ex = explanation(d, query)
    with left:
        depth = st.select_slider("Ranks shown in the rank flow", DEPTHS, value=TOP_N, key=f"{P}depth",
                                 help="Ranks deeper than this sit on one row at the bottom.")
        plotly_pick(rank_flow_figure(d.stage_ids, d.fact_ids, top=depth, highlight=target, moved=moved,
                                     note=adaptive_note(d)),
                    f"{P}flow", TARGET)
    if ex is not None:
        explanation_details(ex, f"{P}x", normalisations(d, ex.trace_id))
    typed = (st.session_state.get(TARGET) or "").strip()
    link = {k: v for k, v in params.items() if k not in (f"{P}id", f"{P}depth")}
    link.update({f"{P}id": typed} if typed else {}, **{f"{P}depth": str(depth)})
    write_params(P, link)  # the address holds the explained id and the depth after a click too
    with link_slot:
        link_popover(share_link(link))


def explanation(d, query: str):
    """Why is it here? — the typed or clicked id (else the final #1): the summary; returns the explanation when
    its details may be shown."""
    st.subheader("Why is it here?")
    st.text_input("Trace id to explain", key=TARGET, placeholder="click a row or a point, or type any id")
    target = (st.session_state.get(TARGET) or "").strip()
    if not target and d.stage_ids["final"]:
        target = d.stage_ids["final"][0]
        st.caption("Showing the final #1. Click any row or rank-flow point, or type an id.")
    if not target:
        return None
    # A limited visitor gets one answer for "in a scope you may not see" and "no such id" (no existence oracle).
    lookup = store_lookup(rws, d.record.scope, access)  # an id the query never touched: its stored row
    ex = explain(d, target, lookup, sees=access.sees if access.limited else None)
    if not explanation_summary(ex, query, f"{P}x", final_how(d, target)):
        return None  # nothing about an id this visitor may not see (or that does not exist)
    st.html(f"<div class='explained' data-id='{html.escape(target, quote=True)}'></div>")  # for tests and benches
    return ex


def live_panel(d, query: str, scope) -> None:
    """Live tuning (ui/refuse.py): drag a weight and the final list, rank flow, metrics and explanation follow in the
    browser; letting go saves the setting (the sidebar, the link and the server's table below follow)."""
    st.subheader("Live tuning", help="Re-fused in your browser on every slider step from this search's lists; "
                 "saved to the sidebar and the link when you let go. The server's five-stage table is below.")
    js = judgments(ws.uri)
    try:
        grades = query_grades(js, scope, query)
    except JudgmentStoreError:  # a damaged judgments table: no live metrics; the grading panel says why
        grades = {}
    with st.columns([2, 3])[0]:  # a case's mean metric as the weight moves (ui/refusecase.py): searched once
        name = refusecase.pick_case(P, js, access)
    case = refusecase.case_data(P, rws, name, run_cfg, js, asof_ui.store_get(ws, as_of), (version, as_of.value))
    refuse_panel(P, d, grades, (st.session_state.get(TARGET) or "").strip() or None, TARGET, case)


with st.container():  # its notes come and go: one element of the page (see `explorer`)
    live_panel(d, query, scope)
explorer(d, whole, query, scope, moved, list(result.traces), params)

asof_ui.changes(ws, as_of, P, query, scope,  # Changes: this query at two versions (ui/asof.py)
                lambda w: run_config(w, run_cfg, query, scope, get_reranker, get_generator)[0], d.facts, access)

with st.expander("Timings and settings"):
    if d.timings_ms:
        st.plotly_chart(timings_figure(d.timings_ms), key=f"{P}timings", config={"displayModeBar": False})
        st.caption("Dense search runs beside BM25 and hydration (fetching BM25-only hits from the store), so the "
                   "bars add up to more than the total. "
                   "After a slider move the search times are the cached search's, plus the re-fusion.")
    st.json(view.clean(d.settings.as_dict()))
