"""Corpus: load the demo corpus or your own file, see rejected lines, browse, search and delete traces."""
from __future__ import annotations

import streamlit as st

from retrieval.loaders import FieldMap, csv_headers, jsonl_fields, load_file
from retrieval.types import SCOPES
from ui.cache import ensure_model, workspace
from ui.widgets import nav, scope_picker

P = "c_"
PAGE_ROWS = 200
UPLOAD_TYPES = ["jsonl", "ndjson", "csv", "txt", "md", "zip"]

st.set_page_config(page_title="Corpus · Hybrid retrieval inspector", page_icon="📚", layout="wide")
nav()
st.session_state.setdefault(f"{P}report", None)
ws = workspace()
st.title("Corpus")


def progress_bar(label: str):
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{label} {done}/{total}")

    return bar, update


def ingest(traces, label: str) -> None:
    ensure_model()
    bar, update = progress_bar(label)
    try:
        rep = ws.ingest(traces, progress=update)
    except ValueError as exc:  # the store validates the whole batch; nothing was written
        bar.empty()
        st.error(f"Nothing was written: {exc}")
        return
    bar.empty()
    msg = f"Stored {rep.written} trace(s), {rep.facts} new fact(s)."
    if rep.duplicates:
        msg += f" {len(rep.duplicates)} id(s) appeared more than once; the last copy was kept: {', '.join(rep.duplicates[:10])}"
    st.success(msg)
    for w in rep.fact_warnings[:5]:
        st.caption(f"fact extraction: {w}")


tab_load, tab_browse = st.tabs(["Load", "Browse"])
with tab_load:
    st.subheader("Demo corpus")
    st.caption("Three users' memories over 18 months: identifiers, paraphrases, changing facts, emotional "
               "episodes, long notes. Written for this project.")
    if st.button("Load the demo corpus", key=f"{P}demo", type="primary"):
        from retrieval.demo import load_demo_traces

        try:
            ingest(load_demo_traces(), "Embedding the demo corpus…")
        except (FileNotFoundError, ValueError) as exc:
            st.error(str(exc))

    st.subheader("Upload")
    st.caption("JSONL or CSV (one trace per line/row), plain text (one trace per paragraph), or a BEIR folder as .zip.")
    up = st.file_uploader("File", type=UPLOAD_TYPES, key=f"{P}file")
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Default scope", SCOPES, index=1, key=f"{P}kind",
                        help="Used for lines that carry no scope of their own.")
    sid = c2.text_input("Scope id", "default", key=f"{P}sid")
    fields = FieldMap()
    if up is not None and up.name.lower().endswith((".jsonl", ".ndjson", ".csv")):
        with st.expander("Field mapping (leave on auto to use the usual names)"):
            cols = csv_headers(up.getvalue()) if up.name.lower().endswith(".csv") else jsonl_fields(up.getvalue())
            opts = ["(auto)"] + cols
            m = st.columns(4)
            pick = {name: m[i].selectbox(name, opts, key=f"{P}map_{name}")
                    for i, name in enumerate(("id", "content", "title", "created_at"))}
            fields = FieldMap(**{k: (None if v == "(auto)" else v) for k, v in pick.items()})
    if st.button("Ingest file", key=f"{P}ingest", disabled=up is None):
        if not sid.strip():
            st.error("The scope id is empty: type one (e.g. the user's id).")
        else:
            try:
                rep = load_file(up.name, up.getvalue(), scope=kind, scope_id=sid.strip(), fields=fields)
            except ValueError as exc:
                st.error(f"{exc}")
                rep = None
            if rep is not None:
                st.session_state[f"{P}report"] = {"source": rep.source, "ok": len(rep.traces),
                                                  "errors": [e.__dict__ for e in rep.errors]}
                if rep.traces:
                    ingest(rep.traces, f"Embedding {up.name}…")
                else:
                    st.error(f"No valid trace in {up.name}; nothing was written. See the rejected lines below.")
    report = st.session_state[f"{P}report"]
    if report and report["errors"]:
        st.markdown(f"**{len(report['errors'])} rejected line(s)** in {report['source']} "
                    f"({report['ok']} good line(s) kept)")
        st.dataframe(report["errors"], hide_index=True, width="stretch", key=f"{P}errors")

with tab_browse:
    n = ws.store.count()
    st.caption(f"{n} trace(s) in `{ws.uri}`")
    c1, c2 = st.columns([1, 2])
    with c1:
        scope = scope_picker(ws, f"{P}bscope", bind=False)
    needle = c2.text_input("Search text or id", key=f"{P}needle")
    rows = ws.store.browse(scope=scope, contains=needle or None, limit=PAGE_ROWS)
    table = [{"id": t.id, "scope": f"{t.scope}:{t.scope_id}", "created": t.created_at.date().isoformat(),
              "active": t.is_active, "valence": t.valence, "content": t.content} for t in rows]
    sel = st.dataframe(table, hide_index=True, width="stretch", key=f"{P}table", on_select="rerun",
                       selection_mode="multi-row",
                       column_config={"content": st.column_config.TextColumn(width="large")})
    if len(rows) == PAGE_ROWS:
        st.caption(f"Showing the first {PAGE_ROWS}; narrow the search to see others.")
    chosen = [table[i]["id"] for i in (sel.selection.rows if sel else [])]
    if chosen:
        confirm = st.checkbox(f"Yes, delete {len(chosen)} trace(s) and their facts", key=f"{P}confirm")
        if st.button("Delete selected", key=f"{P}delete", disabled=not confirm):
            removed = ws.delete(chosen)
            st.success(f"Deleted {removed} trace(s).")
            st.rerun()
