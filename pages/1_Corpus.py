"""Corpus: load the demo corpus or your own file, see rejected lines, browse, search and delete traces,
and the audit log of every write. Read-only visitors (demo mode, or no write grant) only browse."""
from __future__ import annotations


import streamlit as st

from retrieval.access import check_write, may_write
from retrieval.workspace.audit import scopes_of
from retrieval.ingest.loaders import FieldMap, csv_headers, jsonl_fields, load_file
from retrieval.ingest.parse import ID_FIELDS, TEXT_FIELDS
from retrieval.types import SCOPES
from ui.access import audit_rows, page_guard
from ui.cache import ensure_model, workspace
from ui.glossary import caption_text
from ui.tables import detail, widths
from ui.text import plain
from ui.widgets import nav, scope_picker, selected_row

P = "c_"
PAGE_ROWS = 200
AUDIT_ROWS = 200
# Column widths (px) that fit the 904 px main column at 1366 px (ui/tables.py); the rest shows for a clicked row.
BROWSE_PX = {"id": 190, "content": 330, "scope": 100, "created": 92, "active": 56, "valence": 64}
AUDIT_PX = {"when (UTC)": 148, "who": 140, "what": 120, "traces": 60, "scopes": 150, "ids": 210}
UPLOAD_TYPES = ["jsonl", "ndjson", "csv", "txt", "md", "zip"]
MISSING = "—"
ACCEPTED_FIELDS = f"""
**JSONL / CSV** — one trace per line or row; only the text is required, other fields are optional:

| trace field | read from |
|---|---|
| text | `{"` / `".join(TEXT_FIELDS)}` (the first present); a `title` is put in front |
| id | `{"` / `".join(ID_FIELDS)}`; none → made from the scope and a hash of the text (re-uploading replaces) |
| scope | `scope` ({", ".join(SCOPES)}) and `scope_id`; none → the defaults chosen below |
| created | `created_at` / `timestamp` / `date`: ISO 8601 (`2025-03-01T10:00:00Z`) or epoch seconds/ms |
| labels | `type`, `source_type`, `tags` and `entities` (a list, or comma-separated text) |
| numbers | `confidence`, `encoding_strength`, `stability_ms`, `valence`, `arousal`, `dominance`, `retrieval_count` |
| state | `is_active` (true/false), `last_accessed_at` |

**Plain text** (.txt, .md) — one trace per paragraph (blank-line separated). **BEIR** — a .zip holding
`corpus.jsonl` (`_id`, `title`, `text`). The field mapping below overrides the usual names.
"""

st.set_page_config(page_title="Corpus · Hybrid retrieval inspector", page_icon=":material/library_books:",
                   layout="wide")
nav()
access = page_guard()
st.session_state.setdefault(f"{P}report", None)
ws = workspace()
st.title("Corpus")


def progress_bar(label: str):
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{label} {done}/{total}")

    return bar, update


def existing(ids: list[str]) -> set[str]:
    """Which of `ids` the store already holds in scopes this visitor sees (so a re-upload can say it
    replaced them; a trace in a hidden scope is never confirmed to exist)."""
    found: set[str] = set()
    for n in range(0, len(ids), 500):
        found.update(t.id for t in ws.store.get(ids[n:n + 500]) if access.sees(t.scope_key))
    return found


def ingest(traces, label: str) -> None:
    traces = list(traces)
    try:
        check_write(access, scopes_of(traces))
    except PermissionError as exc:
        st.error(plain(str(exc).capitalize()))
        return
    ensure_model()
    replaced = existing(list(dict.fromkeys(t.id for t in traces)))
    bar, update = progress_bar(label)
    try:
        rep = ws.ingest(traces, progress=update, access=access)
    except PermissionError as exc:  # an id held by a trace in a scope this visitor may not write
        bar.empty()
        st.error(plain(str(exc).capitalize()))  # the messages quote ids and scopes from the file
        return
    except ValueError as exc:  # the store validates the whole batch; nothing was written
        bar.empty()
        st.error(f"Nothing was written: {plain(exc)}")
        return
    bar.empty()
    msg = f"Stored {rep.written} trace(s)" + (f" (replaced {len(replaced)} existing)" if replaced else "")
    msg += (f", {rep.facts} new fact(s) extracted" + (" (the facts these traces state were already stored)."
                                                      if replaced and not rep.facts else "."))
    if rep.duplicates:
        msg += (f" {len(rep.duplicates)} id(s) appeared more than once in the file; the last copy was kept: "
                f"{plain(', '.join(rep.duplicates[:10]))}")
    st.success(msg)
    for w in rep.fact_warnings[:5]:
        st.caption(f"fact extraction: {plain(w)}")
    scopes = scopes_of(traces)
    if len(scopes) == 1:  # Browse opens on what was just loaded
        st.session_state[f"{P}bscope"] = scopes[0]


def load_tab() -> None:
    st.subheader("Demo corpus")
    st.caption("Three users' memories over 18 months: identifiers, paraphrases, changing facts, emotional "
               "episodes, long notes. Written for this project.")
    if st.button("Load the demo corpus", key=f"{P}demo", type="primary"):
        from retrieval.ingest.demo import load_demo_traces

        st.session_state[f"{P}report"] = None
        try:
            ingest(load_demo_traces(), "Embedding the demo corpus…")
        except (FileNotFoundError, ValueError) as exc:
            st.error(plain(exc))

    st.subheader("Upload")
    st.caption("JSONL or CSV (one trace per line/row), plain text (one trace per paragraph), or a BEIR folder as .zip. "
               + caption_text("BEIR"))
    with st.expander("Accepted fields"):
        st.markdown(ACCEPTED_FIELDS)
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
    if st.button("Ingest file", key=f"{P}ingest", disabled=up is None) and up is not None:
        st.session_state[f"{P}report"] = None  # a new attempt: the previous file's rejected lines go
        if not sid.strip():
            st.error("The scope id is empty: type one (e.g. the user's id).")
        else:
            try:
                rep = load_file(up.name, up.getvalue(), scope=kind, scope_id=sid.strip(), fields=fields)
            except ValueError as exc:
                st.error(plain(exc))  # it quotes lines of the file
                rep = None
            if rep is not None:
                st.session_state[f"{P}report"] = {"file": up.file_id, "source": rep.source, "ok": len(rep.traces),
                                                  "errors": [e.__dict__ for e in rep.errors]}
                if rep.traces:
                    ingest(rep.traces, f"Embedding {up.name}…")
                else:
                    st.error(f"No valid trace in {plain(up.name)}; nothing was written. See the rejected lines below.")
    report = st.session_state[f"{P}report"]
    if report and report["errors"] and up is not None and report["file"] == up.file_id:
        st.markdown(f"**{len(report['errors'])} rejected line(s)** in {plain(report['source'])} "
                    f"({report['ok']} good line(s) kept)")
        st.dataframe(report["errors"], hide_index=True, width="stretch", key=f"{P}errors")


def browse_tab() -> None:
    visible = [s for s in ws.store.scope_counts() if access.sees(s)]
    if not visible:
        st.info("Nothing to browse yet: load the demo corpus or a file on the **Load** tab."
                if may_write(access) else "There are no traces you may see yet.")
        return
    c1, c2 = st.columns([1, 2])
    with c1:
        scope = scope_picker(ws, f"{P}bscope", bind=False)
    needle = c2.text_input("Search text or id", key=f"{P}needle")
    rows = ws.store.browse(scope=scope, contains=needle or None, limit=PAGE_ROWS)
    where = "all scopes" if scope is None else str(scope)
    if not rows:
        st.info(f"No trace in {plain(where)} contains “{plain(needle)}”: clear the search or pick another scope."
                if needle else f"{plain(where)} has no traces: pick another scope"
                + (", or load a file on the **Load** tab." if may_write(access) else "."))
        return
    st.caption(f"{len(rows)}{'+' if len(rows) == PAGE_ROWS else ''} trace(s) in {plain(where)}")
    table = [{"id": t.id, "scope": f"{t.scope}:{t.scope_id}",
              "created": t.created_at.date().isoformat() if t.created_at else MISSING,
              "active": "yes" if t.is_active else "no", "type": t.type or MISSING,
              "tags": ", ".join(t.tags) or MISSING,
              "valence": f"{t.valence:+.2f}" if t.valence is not None else MISSING,
              "content": t.content or MISSING} for t in rows]
    # 904 px at 1366 px: the text right after the id; type and tags (and the whole text) for the rows clicked.
    # A click on any cell opens that trace; the row boxes at the left select rows (to read several, or delete).
    sel = st.dataframe([{k: r[k] for k in BROWSE_PX} for r in table], hide_index=True, width="stretch",
                       key=f"{P}table", on_select="rerun",
                       selection_mode=["multi-row" if may_write(access) else "single-row", "single-cell"],
                       column_config=widths(BROWSE_PX, select=True))
    ticked = list(sel.selection.rows) if sel else []
    clicked = [row for row, _ in (sel.selection.cells if sel else []) if row not in ticked]
    picked = ticked + clicked
    for i in picked[-3:]:
        detail(table[i], f"Trace {table[i]['id']}")
    if not picked:
        st.caption("Click a trace's text (or any cell of its row) to read the whole trace"
                   + (" · tick the boxes at the left of rows to delete them." if may_write(access) else "."))
    if len(rows) == PAGE_ROWS:
        st.caption(f"Showing the first {PAGE_ROWS}; narrow the search to see others.")
    if not may_write(access):
        return
    chosen = [table[i]["id"] for i in ticked]  # ticked rows only: a clicked cell only reads
    if chosen:
        confirm = st.checkbox(f"Yes, delete {len(chosen)} trace(s) and their facts", key=f"{P}confirm")
        if st.button("Delete selected", key=f"{P}delete", disabled=not confirm):
            try:
                removed = ws.delete(chosen, access=access)
            except PermissionError as exc:
                st.error(plain(str(exc).capitalize()))
            else:
                st.success(f"Deleted {removed} trace(s).")
                st.rerun()


def audit_tab() -> None:
    st.caption("Every write — who, when, what, how many traces — kept in the store's `audit` table"
               + ("." if access.scopes is None else
                  ", each write as far as it touched your scopes (its count, scopes and ids there)."))
    entries = ws.audit.entries(limit=AUDIT_ROWS, scopes=access.scopes)
    if not entries:
        st.info("No writes recorded yet.")
        return
    rows = audit_rows(entries)
    ev = st.dataframe(rows, hide_index=True, width="stretch", key=f"{P}audit", on_select="rerun",
                      selection_mode="single-row", column_config=widths(AUDIT_PX, select=True))
    n = selected_row(ev)
    detail(None if n is None else rows[n], "The write clicked", "Click a row to see all the ids it wrote.")


if may_write(access):
    tab_load, tab_browse, tab_audit = st.tabs(["Load", "Browse", "Audit log"])
    with tab_load:
        load_tab()
else:
    st.info("Read-only: this app runs in demo mode, so loading and deleting are off." if access.read_only else
            f"Read-only: {plain(access.user)} may browse but not change the store.")
    tab_browse, tab_audit = st.tabs(["Browse", "Audit log"])
with tab_browse:
    browse_tab()
with tab_audit:
    audit_tab()
