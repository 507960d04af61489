"""Home: what the inspector is, the state of the store, and example queries that open Inspect."""
from __future__ import annotations

import streamlit as st

from retrieval.ingest.demo import load_examples
from retrieval.access import for_visitor
from retrieval.fusion import STRATEGIES
from retrieval.store.remote import StoreLocationError
from ui.cache import db_uri, workspace
from ui.access import page_guard
from ui.text import code, plain
from ui.calibration import caption as calibration_caption
from ui.glossary import caption_text, explain, terms_in
from ui.refuse import scopes_table
from ui.widgets import nav

if st.query_params.get("present") == "1":  # presenter mode: the Home examples as a guided story
    st.switch_page("pages/9_Present.py")
st.set_page_config(page_title="Hybrid retrieval inspector", page_icon=":material/manage_search:", layout="wide")
nav()
access = page_guard(home=True)  # sign-in, scopes, read-only

st.title("Hybrid retrieval inspector")
st.markdown(
    "Dense (embedding) and sparse (BM25) search over memory traces, fused by "
    + "; ".join(s.in_words for s in STRATEGIES[:-1]) + f"; or {STRATEGIES[-1].in_words} — and optionally reranked. "
    "On the **Inspect** page, type a query in its "
    "**Query** box and see the **dense, sparse, merged, reranked and final** lists side by side — click any row "
    "to see *why* that trace landed where it did, with every number of its score."
)
st.page_link("pages/2_Inspect.py", label="Go to Inspect to type a query", icon=":material/search:")

try:
    ws = workspace()
    status = ws.status()
except Exception as exc:  # a broken store must still render a page that says what to do
    fix = ("" if isinstance(exc, StoreLocationError) else  # its message already says what to point where
           " Point RETRIEVAL_DB at a valid LanceDB folder or delete the folder and rebuild it with `make run`.")
    st.error(f"Could not read the store at {code(db_uri())}: {plain(exc)}.{fix}")
    st.stop()


# a visitor limited to some scopes sees only their scopes' names and counts, no store-wide number (as the CLI)
status = for_visitor(status, access, ws.store, ws.facts)

st.subheader("Store")
c = st.columns(4)
c[0].metric("Traces", status["traces"])
c[1].metric("BM25 documents", status["bm25_documents"], help="Active traces only; inactive ones are never searched."
            + (" Counted in your scopes." if access.limited else "") + "\n\n" + explain("BM25"))
c[2].metric("Facts", status["facts"])
c[3].metric("Scopes", len(status["scopes"]))
kind = (status.get("ann_type") or "IVF").upper().replace("IVF_", "IVF").replace("IVF", "IVF-", 1).rstrip("-")
index = f"ANN ({kind})" if status["ann_index"] else "exact (flat) vector search"
if status["ann_index"] and status["unindexed_rows"]:
    index += f", {status['unindexed_rows']} unindexed rows"
st.caption(f"URI {code(status['uri'])} · vector index: {index} · BM25 "
           + ("in step with the store" if status["bm25_in_step"] else
              "**out of step** — it catches up on the next rerun")
           + (f" · facts of {status['facts_pending']} trace(s) not extracted yet (a writing process extracts them "
              "when it opens the store)" if status.get("facts_pending") else "")
           + (" · scopes: " + plain(", ".join(f"{k} ({v})" for k, v in status["scopes"].items()))
              if status["scopes"] else "")
           + (" · " + caption_text(*terms_in(index)) if status["ann_index"] else ""))  # ANN, IVF
if status.get("dim"):
    sparse = "LanceDB full-text index" if status.get("sparse") == "fts" else "in-memory BM25"
    st.caption(f"Built with embedder **{plain(status.get('embedder') or 'unrecorded')}** ({status['dim']}-d) · BM25 "
               f"analyzer **{plain(status.get('analyzer', 'plain'))}** · sparse search: {sparse} · context: "
               f"{plain(status.get('context') or 'off')}"
               + (f" · table `{status['table']}` inspected in place (read-only)" if status.get("in_place") else ""))
    calibration_caption(ws)  # "calibrated: <settings> (date)", or that the preset's fixed defaults apply

if status["traces"] == 0:
    st.info("The store is empty. Load the bundled demo corpus (or your own file) on the **Corpus** page.")
    st.page_link("pages/1_Corpus.py", label="Go to Corpus", icon=":material/library_books:")

st.subheader("Try an example")
examples = load_examples()
if not examples:
    st.caption("No examples found (data/demo/examples.json).")
cols = st.columns(3)
examples = [ex for ex in examples if access.sees(ex["params"].get("i_scope"))]  # examples in the visitor's scopes
for n, ex in enumerate(examples):
    with cols[n % 3].container(border=True):
        st.markdown(f"**{ex['title']}**")
        st.markdown(f"“{ex['query']}”")
        st.caption(ex["look_for"])
        st.page_link("pages/2_Inspect.py", label="Open in Inspect", icon=":material/play_arrow:",
                     query_params={k: str(v) for k, v in ex["params"].items()})

if status["scopes"]:
    # Last on the page, under the examples: the corpus at a glance. It is drawn by the live panel's own component
    # (ui/refuse.py), which is also what makes Inspect open fast from here: the browser loads the component and runs
    # its script while the visitor reads this page, so Inspect's live rows draw when the search's result arrives,
    # before the charts and grids below them (a plotly chart here instead made Inspect wait for its rank-flow chart).
    st.subheader("Traces per scope")
    scopes_table("home_scopes", status["scopes"])
