"""Log: the agent's own logged queries replayed — what it got then, what the current configuration returns now,
and what it returns on the store as of the log's time (overlap@k, rank-biased overlap); one click opens Inspect
as of that time. Feedback in the log becomes implicit grades; the queries shown can become a case.
"""
from __future__ import annotations

import streamlit as st

from retrieval.replay import QueryLog
from ui import replay as rp
from ui.access import page_guard
from ui.cache import ensure_model, get_generator, get_reranker, judgments, workspace
from ui.calibration import store_defaults
from ui.panel import config_panel, usable_config
from ui.state import run_config
from ui.glossary import caption_text
from ui.widgets import nav

P = "l_"  # widget key prefix for this page

st.set_page_config(page_title="Log · Hybrid retrieval inspector", page_icon=":material/history:", layout="wide")
nav()
access = page_guard()  # sign-in; only logged queries in the visitor's scopes are shown
ws = workspace()
with st.sidebar:
    st.header("Settings")
    cfg = config_panel(P, store_defaults(ws))  # "now" is this configuration on the current store

st.title("Query log")
importing = rp.may_import(ws, access)
st.caption(("Import what your agent retrieved (JSONL lines or Phoenix RETRIEVER spans), then see" if importing else
            "What your agent retrieved, replayed: see") + " whether it would get the same today — and whether a "
           "difference comes from the store or from the configuration.")
js = judgments(ws.uri)
rp.import_widget(ws, js, access, P)
log = QueryLog(ws.uri)
if log.count() == 0:
    st.info("No logged queries yet: import a log above (or `python -m retrieval import-log FILE`)." if importing else
            "No logged queries yet: the log is empty. The operator fills it with `python -m retrieval import-log "
            "FILE`; this visitor may not import here (a read-only demo, or no write access).")
    st.stop()

queries, order, n = rp.filters(log, access.sees, P)
if not queries:
    st.info("No logged query matches these filters.")
    st.stop()
with st.spinner("Loading the embedding model…"):
    ensure_model()
picked = rp.pick(queries, order, n, seed=int(st.session_state.get(f"{P}seed", 0)))
if order == "random" and st.button("Draw again", key=f"{P}redraw"):
    st.session_state[f"{P}seed"] = int(st.session_state.get(f"{P}seed", 0)) + 1
    st.rerun()


run_cfg, notes = usable_config(cfg, get_reranker, get_generator)
for note in notes:
    st.warning(note)


def run(source, q):
    return run_config(source, run_cfg, q.query, q.scope, get_reranker, get_generator, None, access)[0]


with st.spinner(f"Replaying {len(picked)} logged quer{'y' if len(picked) == 1 else 'ies'} now and as of then…"):
    rows = rp.replay_all(ws, picked, run, run_cfg.settings.recall_top_k)
if order == "drift":
    rows = rp.most_drifted(rows, n)
st.caption(f"{len(rows)} of {len(queries)} matching logged queries · k = {run_cfg.settings.recall_top_k}, or as many "
           "as the agent logged when it logged fewer (each row names its k) · overlap@k and RBO (p = 0.9) compare each "
           "list with what the agent got. " + caption_text("RBO", "drift"))
rp.show(rows)
st.divider()
rp.make_case(js, rows, access, P)
