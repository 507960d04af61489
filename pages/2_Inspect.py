"""Inspect: one query through the pipeline — five stage columns, rank flow, and why each trace is where it is."""
from __future__ import annotations

import time

import streamlit as st

from retrieval.hybrid import STAGES
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.charts import rank_flow_figure, timings_figure
from ui.state import cache_key, run_config
from ui.widgets import config_io, config_panel, explanation_view, nav, scope_picker, stage_column

P = "i_"  # widget key (and URL parameter) prefix for this page
ROWS = 10

st.set_page_config(page_title="Inspect · Hybrid retrieval inspector", page_icon="🔎", layout="wide")
nav()
from ui.access import page_guard; page_guard()  # sign-in, allowed scopes, read-only (issue #17)
st.session_state.setdefault(f"{P}result", None)

ws = workspace()
with st.sidebar:
    st.header("Settings")
    cfg = config_panel(P)
    st.divider()
    config_io(P, cfg)

st.title("Inspect")
if ws.store.count() == 0:
    st.info("The store is empty: load the demo corpus on the Corpus page first.")
    st.page_link("pages/1_Corpus.py", label="Go to Corpus", icon="📚")
    st.stop()

c1, c2 = st.columns([3, 1])
query = c1.text_input("Query", key=f"{P}q", bind="query-params",
                      placeholder="e.g. what happened with invoice INV-20931?")
with c2:
    scope = scope_picker(ws, f"{P}scope")

if not query.strip():
    st.caption("Type a query, or open one of the examples on the Home page.")
    st.stop()

ensure_model()
t0 = time.perf_counter()
try:
    result, refused = run_config(ws, cfg, query, scope, get_reranker, get_generator, st.session_state[f"{P}result"])
except (ValueError, ImportError) as exc:
    st.error(f"{exc}")
    st.stop()
elapsed = (time.perf_counter() - t0) * 1000
if not refused:  # keep the searched result: every slider move re-fuses from it
    st.session_state[f"{P}result"] = (cache_key(query, scope, cfg), result)
st.session_state["last_injected_facts"] = {
    "scope": str(scope), "query": query, "facts": [f.__dict__ for f in result.diagnostics.facts]}
d = result.diagnostics

if refused:
    st.caption(f"⚡ Re-fused from cached stage lists in {d.timings_ms.get('refuse', elapsed):.2f} ms — "
               "no embedding, search or reranker call.")
else:
    st.caption(f"Searched in {d.timings_ms.get('total', elapsed):.0f} ms · {d.candidates_scanned} candidates in the pool")
for e in d.escalations:
    code, _, why = e.partition(": ")
    st.warning(f"`{code}` {why}")
if d.hyde:
    st.info(f"**HyDE hypothesis** (searched instead of the query): {d.hyde}")
if d.multi_query:
    st.info("**Multi-query variants**: " + " · ".join(f"“{v}”" for v in d.multi_query))
if d.split_on_ambiguous:
    s = d.split_on_ambiguous
    st.caption(f"Split-on-ambiguous: threshold {s['threshold']}, {s['candidate_count']} candidates, "
               f"replaced {', '.join(s['replaced_ids']) or 'none'}")

cols = st.columns(5)
pool = d.pool
for col, stage in zip(cols, STAGES):
    with col:
        stage_column(stage, d, pool, d.searched_query or query, ROWS,
                     ws.store.get)

touched = list(dict.fromkeys(i for s in ("final",) + STAGES for i in d.stage_ids[s]))
st.divider()
left, right = st.columns([3, 2])
with right:
    st.subheader("Why is it here?")
    pick = st.selectbox("Trace", ["(type an id below)"] + touched, index=1 if touched else 0, key=f"{P}pick")
    typed = st.text_input("…or any trace id", key=f"{P}typed", placeholder="e.g. an id that did not show up")
    target = typed.strip() or (pick if pick != "(type an id below)" else "")
with left:
    st.plotly_chart(rank_flow_figure(d.stage_ids, d.fact_ids, top=ROWS, highlight=target or None),
                    key=f"{P}flow", config={"displayModeBar": False})
if target:
    explanation_view(d.explain(target), query)

with st.expander("Timings and settings"):
    if d.timings_ms:
        st.plotly_chart(timings_figure(d.timings_ms), key=f"{P}timings", config={"displayModeBar": False})
    st.json(d.settings.as_dict())
