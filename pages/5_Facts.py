"""Facts: the fact graph by subject and predicate over time, and which facts the last query injected."""
from __future__ import annotations

import streamlit as st

from retrieval.facts import PREDICATES, Fact
from ui.access import page_guard
from ui.cache import workspace
from ui.charts import facts_timeline_figure
from ui.state import last_injected_facts
from ui.text import code, plain
from ui.tables import detail, widths
from ui.widgets import nav, scope_picker, selected_row

P = "f_"
MISSING = "—"
st.set_page_config(page_title="Facts · Hybrid retrieval inspector", page_icon=":material/hub:", layout="wide")
nav()
page_guard()  # sign-in; the scope picker offers only the visitor's scopes
ws = workspace()
st.title("Fact graph")
st.caption("Literal (subject, predicate, object) facts extracted from first-person statements at ingest. "
           "They keep the exact value a summary or an embedding would blur, and their history.")

scope = scope_picker(ws, f"{P}scope", allow_all=False, bind=False)
if scope is None:
    st.info("No scopes yet: load a corpus first.")
    st.stop()
facts = ws.facts.all(scope)
if not facts:
    st.info(f"No facts for {plain(scope)}.")
    st.stop()

subjects = sorted({f.subject for f in facts})
c1, c2 = st.columns(2)
subject = c1.selectbox("Subject", ["(all)"] + subjects, index=1 if "user" in subjects else 0, key=f"{P}subject")
preds = c2.multiselect("Predicates", [p for p in PREDICATES if any(f.predicate == p for f in facts)], key=f"{P}preds")
shown = [f for f in facts if (subject == "(all)" or f.subject == subject) and (not preds or f.predicate in preds)]

last = last_injected_facts()  # Inspect's last query (ui/state.py)
injected = set()
if last and last.get("scope") == str(scope):
    injected = {Fact(**f).key for f in last["facts"]}
rows = [{"key": f.key, "timestamp": f.timestamp, "subject": f.subject or MISSING, "predicate": f.predicate,
         "object": f.object or MISSING, "source": ", ".join(f.source_trace_ids) or MISSING,
         "span": f.source_span or MISSING} for f in shown]
st.plotly_chart(facts_timeline_figure(rows, sorted(injected)), key=f"{P}timeline", config={"displayModeBar": False})
table = [{k: v for k, v in r.items() if k not in ("key", "span")} | {"injected": r["key"] in injected} for r in rows]
# The source sentence is long: it shows, with the rest of the fact, for the row clicked (ui/tables.py).
ev = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                  key=f"{P}table", column_config=widths(
                      {"timestamp": 140, "subject": 80, "predicate": 130, "object": 220, "source": 210, "injected": 76},
                      select=True,
                      config={"timestamp": st.column_config.DatetimeColumn("as of", format="D MMM YYYY HH:mm")}))
n = selected_row(ev)
detail(None if n is None else {**table[n], "span": rows[n]["span"]}, "The fact clicked",
       "Click a row to see the sentence its fact was read from.")

st.subheader("Injected by the last query")
if last and last.get("facts"):
    st.caption(f"“{plain(last['query'])}” in {plain(last['scope'])}")  # the query as typed, never as Markdown
    for f in last["facts"]:
        triple = code(f"{f['subject']} {f['predicate']} {f['object']}")  # one code span, whatever it holds
        st.markdown(f"- {triple} as of {f['timestamp']:%Y-%m-%d} (from {plain(', '.join(f['source_trace_ids']))})")
else:
    st.caption("The last Inspect query injected no facts (or none ran yet).")
