"""Shared Streamlit widgets: stage columns, scope picker, links, escalations, the explanation view, navigation
(the settings panel is `ui.panel`)."""
from __future__ import annotations

import functools
import html
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from retrieval.bm25.index import default_tokenizer
from retrieval.pipeline.escalations import describe
from retrieval.types import Scope

from . import derive, stages, view
from .charts import bm25_figure, dense_terms_figure
from .links import ALL_SCOPES, ignored_sentence, read_link, store_changed, write_link
from .state import PipelineConfig
from .text import code, plain

SNIPPET_CHARS = 180
DROPPED_AT = {"dense": "search", "hydrate": "hydration", "rerank": "rerank", "truncate": "top-k cut"}


def highlight(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """HTML-escaped snippet with query terms in <mark>; centred on the first hit when long. One line: every
    line break is a <br>, since a blank line would end the HTML block around it and the rest would be read as
    Markdown (an image or a link in the text would render)."""
    terms = set(default_tokenizer(query or ""))
    snippet = text
    if len(text) > limit:
        first = min((m.start() for t in terms for m in [re.search(rf"(?i)\b{re.escape(t)}\b", text)] if m),
                    default=0)
        start = max(0, min(first - limit // 3, len(text) - limit))
        snippet = ("…" if start else "") + text[start:start + limit] + ("…" if start + limit < len(text) else "")
    out = []
    for piece in re.split(r"([^\W_]+)", snippet):
        esc = html.escape(piece)
        out.append(f"<mark>{esc}</mark>" if piece.lower() in terms else esc)
    return re.sub(r"\r\n|[\r\n]", "<br>", "".join(out))  # CommonMark's line endings


# ---------------------------------------------------------------- click to explain
def _pick(key: str, target_key: str) -> None:
    """Selection callback: the clicked row's (or point's) id becomes the explained id."""
    tid = view.picked_id(st.session_state.get(key), st.session_state.get(f"{key}_ids", []))
    if tid:
        st.session_state[target_key] = tid


# A click on a row of the stage table (or Enter on a focused row) names its id; a click on a stage heading sorts
# by that stage. One listener on the document: the table is our own escaped HTML (ui.stages), drawn by st.html.
_TABLE_JS = """
export default function(component) {
  const { setTriggerValue } = component;
  const row = (e) => e.target.closest && e.target.closest('table.rt-stages tr[data-pick]');
  const onClick = (e) => {
    const head = e.target.closest && e.target.closest('table.rt-stages th[data-sort-stage]');
    if (head) { setTriggerValue('sort', head.getAttribute('data-sort-stage')); return; }
    const r = row(e);
    if (r) { setTriggerValue('pick', r.getAttribute('data-pick')); }
  };
  const onKey = (e) => {
    const r = (e.key === 'Enter' || e.key === ' ') ? row(e) : null;
    if (r) { e.preventDefault(); setTriggerValue('pick', r.getAttribute('data-pick')); }
  };
  document.addEventListener('click', onClick);
  document.addEventListener('keydown', onKey);
  const marks = document.documentElement.dataset;  // for tests: how many of these listeners are live
  marks.rtTableEvents = String(Number(marks.rtTableEvents || 0) + 1);
  return () => {
    document.removeEventListener('click', onClick); document.removeEventListener('keydown', onKey);
    marks.rtTableEvents = String(Number(marks.rtTableEvents || 1) - 1);
  };
}
"""


@functools.cache  # declared once per process (a constant, not a cache of data)
def _table_events():
    return st.components.v2.component("inspect_stage_table", js=_TABLE_JS)


def _table_event(key: str, event: str, target_key: str) -> None:
    value = (st.session_state.get(key) or {}).get(event)
    if isinstance(value, str) and value:
        st.session_state[target_key] = value


def stage_table(diag, whole: dict, query: str, depth: int, key: str, target_key: str,
                moved: dict[str, str] | None = None, unrated: Collection[str] = ()) -> None:
    """The five stages as one aligned table (`ui.stages`): a row per trace, its rank and score in each stage,
    sorted by any stage; clicking a row explains it. `moved` marks what moved against the previous setting."""
    sort_key, all_key = f"{key}_sort", f"{key}_all"
    sortable = [s for s in stages.STAGE_ORDER if diag.stage_ids.get(s)]
    if st.session_state.get(sort_key) not in sortable:
        st.session_state[sort_key] = "final" if "final" in sortable else (sortable or ["final"])[0]
    rows = stages.aligned_rows(diag, whole, depth, moved)
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    sort = c1.segmented_control("Sort by the rank in", sortable, format_func=lambda s: stages.STAGE_HEADS.get(s, s),
                                key=sort_key, help="Or click a stage heading in the table.") or "final"
    extra = sum(1 for r in rows if (r.ranks.get(sort) or depth + 1) > depth and r.move != "left")
    show_all = extra > 0 and c2.toggle(  # none to add: no switch ("Also the 0 traces…" promised nothing)
        f"Also the {extra} trace{'' if extra == 1 else 's'} only in another stage's top {depth}", key=all_key)
    ordered = stages.sort_rows(rows, sort)
    if not show_all:
        ordered = [r for r in ordered if (r.ranks.get(sort) or depth + 1) <= depth or r.move == "left"]
    notes = {s: derive.final_note(diag, s) for s in stages.STAGE_ORDER}
    target = st.session_state.get(target_key) or (diag.stage_ids["final"][0] if diag.stage_ids.get("final") else None)
    st.html(stages.table_html(ordered, query, sort, depth, target, notes, unrated))
    _table_events()(key=key, on_pick_change=lambda: _table_event(key, "pick", target_key),
                    on_sort_change=lambda: _table_event(key, "sort", sort_key))
    # For tests and screen readers: each stage's ids (its top `depth`), in order.
    blocks = []
    for stage in stages.STAGE_ORDER:
        ids = list(diag.stage_ids.get(stage, ()))[:depth]
        attr = html.escape(",".join(ids), quote=True).replace("\n", "&#10;").replace("\r", "&#13;")
        blocks.append(f"<div class='stage-ids' data-stage='{stage}' data-ids='{attr}'></div>")
    st.html("<div style='display:none'>" + "".join(blocks) + "</div>")
    split = [r for r in rows if r.split]
    if split:
        with st.expander(f"✂ whole text of the {len(split)} split trace(s) in the final list"):
            for r in split:
                st.markdown(f"**{plain(r.id)}** — {r.split}")
                st.caption(plain(whole.get(r.id, "")))


def plotly_pick(fig, key: str, target_key: str) -> None:
    """A chart whose points carry ids (`customdata`): clicking one explains it."""
    st.session_state[f"{key}_ids"] = []
    st.plotly_chart(fig, key=key, on_select=lambda: _pick(key, target_key), selection_mode="points",
                    config={"displayModeBar": False})


# ---------------------------------------------------------------- scope and settings
def scope_picker(ws, key: str, label: str = "Scope", allow_all: bool = True, bind: bool = False) -> Scope | None:
    """Pick one scope (default: the one with most traces) or, optionally, all of them. Only the scopes
    this visitor may see are offered (`ui.access`); a visitor limited to some cannot pick all of them."""
    from .access import session_access

    acc = session_access()  # the check itself is retrieval.access
    counts = {s: n for s, n in ws.store.scope_counts().items() if acc.sees(s)}
    allow_all = allow_all and acc.sees(None)
    scopes = [str(s) for s in counts]
    options = ([ALL_SCOPES] if allow_all else []) + scopes
    if not options or not scopes:
        st.caption("No scope you may see has traces yet." if acc.limited else "No scopes yet.")
        if acc.limited:
            st.stop()  # None would mean "every scope" to the pipeline
        return None
    biggest = str(max(counts, key=lambda s: (counts[s], str(s))))
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = biggest
    kw: dict[str, Any] = {"bind": "query-params"} if bind else {}
    choice = st.selectbox(label, options, index=options.index(biggest), key=key, **kw)
    return None if choice == ALL_SCOPES else Scope.parse(choice)


# ---------------------------------------------------------------- links
LINKS_KEPT = 5  # addresses this page wrote last that a rerun may still carry


def seed_from_link(prefix: str, scopes: list[str], version: int, extra: dict[str, str],
                   allow_all: bool = True) -> None:
    """Before any widget is drawn: when the URL is not the link this page wrote last, set the widgets
    from it (valid values only) and remember what was ignored and whether the store changed.

    `extra` maps view fields to widget keys (`{"q": "i_q", "scope": "i_scope", "id": "i_typed"}`).
    Arriving without parameters (the sidebar link) restores this session's last view.
    """
    raw = {k: v for k, v in st.query_params.to_dict().items() if k.startswith(prefix)}
    last = st.session_state.get(f"{prefix}link")
    # A rerun may still carry an address this page wrote a moment ago (quick slider presses overtake the browser's
    # address update): one of the last few written is this session's own view, not a link to seed from.
    written = st.session_state.get(f"{prefix}links_written", [])
    if any(raw == {k: v for k, v in w.items() if k.startswith(prefix)} for w in written):  # ?asof= is ui/asof.py's
        return
    link = read_link(raw or last or {}, prefix, scopes, allow_all)
    for name, value in link.config.items():
        st.session_state[f"{prefix}{name}"] = value
    for name, value in (("q", link.query), ("scope", link.scope), ("id", link.target), ("depth", link.depth)):
        if value is not None and name in extra:
            st.session_state[extra[name]] = value
    notes = [n for n in (ignored_sentence(link.ignored), store_changed(link.version, version)) if n]
    st.session_state[f"{prefix}link_notes"] = notes if raw else []


def write_params(prefix: str, params: dict[str, str]) -> None:
    """Put the whole view into the URL (only when it changed: each write is a message to the browser)."""
    current = st.query_params.to_dict()
    params = {**params, **{k: v for k, v in current.items() if k == "rater"}}  # the tab's rater name (ui.grading)
    if current != params:
        st.query_params.from_dict(params)
    st.session_state[f"{prefix}link"] = dict(params)
    written = [w for w in st.session_state.get(f"{prefix}links_written", []) if w != params]
    st.session_state[f"{prefix}links_written"] = (written + [dict(params)])[-LINKS_KEPT:]


def share_link(params: dict[str, str], page: str = "Inspect") -> str:
    """The URL of this view; `st.context.url` is the page's address (without its query)."""
    base = None
    try:
        base = st.context.url
    except Exception:  # no browser (AppTest): a relative link still reproduces the view
        base = None
    return f"{base or '/' + page}?{urlencode(params)}"


def open_in_inspect(cfg: PipelineConfig, query: str, scope: Scope | None, target: str | None = None,
                    version: int | None = None) -> None:
    """Switch to Inspect showing `query` in `scope` under `cfg` (and explaining `target`)."""
    params = write_link("i_", cfg, query, str(scope) if scope is not None else None, target, None, version)
    st.switch_page("pages/2_Inspect.py", query_params=params)


def selected_row(event) -> int | None:
    """The selected row of a `st.dataframe(on_select="rerun")` event, or None."""
    rows = ((event or {}).get("selection") or {}).get("rows") or []
    return rows[0] if rows else None


def link_popover(url: str) -> None:
    with st.popover("Copy link", icon=":material/link:",
                    help="A link to exactly this view: query, scope and every setting"):
        st.caption("Copy this link (the icon at the right of the box copies it). It holds the query, the scope, "
                   "every setting and the store version — but never a server URL or a key.")
        st.code(url, language=None, wrap_lines=True)


# ---------------------------------------------------------------- escalations, progress, fallbacks
def escalation_view(escalations) -> None:
    """Each escalation as a plain sentence; its code and recorded detail in small print."""
    for e in escalations:
        d = describe(e)
        st.warning(d.sentence, icon=":material/warning:")
        st.caption(f"code {code(d.code)}" + (f" · {plain(d.detail)}" if d.detail else ""))  # the detail may quote ids


# ---------------------------------------------------------------- the explanation
def context_html(context: str, sides: str | None, terms) -> str:
    """The context window beside the trace, greyed: escaped text (never Markdown), what read it, the terms
    BM25 matched only there."""
    feeds = {"bm25": "BM25", "dense": "the embedding", "both": "BM25 and the embedding"}.get(sides or "", "nothing")
    only = f" · matched only here: {html.escape(', '.join(terms))}" if terms else ""
    return (f"<div class='trace-context' style='color:#8a8a8a;font-size:0.85em;white-space:pre-wrap;"
            f"border-left:3px solid #ddd;padding-left:0.6em'><b>Context</b> (the turns around it in its "
            f"conversation, indexed with it for {feeds}; not part of its text){only}\n{html.escape(context)}</div>")


def explanation_summary(ex, query: str, key: str, final_how: str = "") -> bool:  # noqa: ARG001 (callers pass a key)
    """The plain-words part: the reason, the text, rank and score per stage. False when nothing more
    may be shown (no such trace, or not visible from this scope)."""
    reason = plain(ex.reason)  # it quotes the typed id, fact sources, a split half
    if not ex.exists or not ex.visible:
        st.warning(reason)
        return False
    if ex.dropped_at is None:
        st.success(reason)
    else:
        st.warning(f"**Not in the final list** — it fell out at the {DROPPED_AT.get(ex.dropped_at, ex.dropped_at)} "
                   f"stage. {reason}")
    weights = derive.adaptive_sentence(ex.adaptive)  # the query's adapted fusion weights and why (`adaptive` on)
    if weights:
        st.info(weights, icon=":material/tune:")
    if ex.content:
        st.markdown(f"<div style='font-size:0.92em'>{highlight(ex.content, query, 600)}</div>", unsafe_allow_html=True)
        st.caption(f"scope {plain(ex.scope)}" if ex.scope else "")
    if getattr(ex, "context", None):
        st.html(context_html(ex.context, ex.context_sides, getattr(ex, "bm25_context_terms", None)))
    sentence = view.split_sentence(ex.split)
    if sentence:
        st.markdown(sentence)
    st.markdown("**Rank and score per stage**")
    # A static table wraps its notes: a data grid at 1366 px hid the note (and the numbers past it) behind a
    # sideways scroll (issue 35).
    st.table(view.stage_rows(ex, final_how), hide_index=True)
    return True


def explanation_details(ex, key: str, norms: dict[str, str] | None = None) -> None:
    """The score trees, on demand: dense weight × value, fusion (with how each convex list's score was normalised,
    `norms`) and the blend side by side; BM25 per term (nine numbers a term), the split halves and the fact at
    the whole width, where their tables fit at 1366 px (half of it hid them behind a sideways scroll, issue 35)."""
    c1, c2 = st.columns(2)
    with c1:
        if ex.dense_terms:
            total = sum(t["points"] for t in ex.dense_terms)
            with st.expander(f"Dense score {total:.4f} = Σ weight × value over {len(ex.dense_terms)} terms"):
                st.plotly_chart(dense_terms_figure(ex.dense_terms), key=f"{key}_dense",
                                config={"displayModeBar": False})
                st.dataframe(view.dense_rows(ex.dense_terms), hide_index=True, width="stretch")
    with c2:
        if ex.rrf:
            with st.expander(f"Fusion: {view.num(ex.rrf.get('score'), 5)} = the sum of each list's contribution"):
                st.caption(view.fusion_title(ex.rrf))
                st.dataframe(view.fusion_rows(ex.rrf), hide_index=True, width="stretch")
                if norms:  # the normalised score in each "weight × score" above, from the list's own numbers
                    st.caption("Normalised score per list — " + "; ".join(f"{n}: {h}" for n, h in norms.items()))
                if ex.rrf.get("imputed"):
                    st.caption(f"“completed”: the {ex.rrf['imputed']} search did not return this trace; the hybrid "
                               "preset gives it the rank its real score would have had (rank completion), so one "
                               "list missing it does not cap it.")
        sentence = view.blend_sentence(ex.blend)
        if sentence:
            with st.expander("Rerank blend", expanded=True):
                st.markdown(sentence)
    bm25_details(ex, key)
    if ex.split:
        with st.expander("Split halves, both scores", expanded=bool(ex.split.get("replaced"))):
            st.dataframe(view.split_rows(ex.split), hide_index=True, width="stretch",
                         column_config={"content": st.column_config.TextColumn(width="large")})
    if ex.fact:
        f = ex.fact
        triple = code(f"{f['subject']} {f['predicate']} {f['object']}")
        sources = plain(", ".join(f["source_trace_ids"])) or "—"
        st.markdown(f"**Fact** {triple} as of {plain(f['timestamp'][:10])}, from trace(s) {sources}: "
                    f"“{plain(f['source_span'] or '—')}”")


def bm25_details(ex, key: str) -> None:
    """BM25 per query term (Elasticsearch's explain), or why it is 0."""
    if ex.bm25_tree and any(r["score"] > 0 for r in ex.bm25_tree):
        total = sum(r["score"] for r in ex.bm25_tree)
        with st.expander(f"BM25 score {total:.4f} = Σ per query term ({view.bm25_params(ex.bm25_tree)})"):
            st.plotly_chart(bm25_figure(ex.bm25_tree), key=f"{key}_bm25", config={"displayModeBar": False})
            st.dataframe(view.bm25_rows(ex.bm25_tree), hide_index=True, width="stretch")
            if ex.bm25_tree[0].get("backend") == "lancedb-fts":
                st.caption("Scored by LanceDB's full-text index, which reports only each term's score "
                           "(searched alone); tf and idf are not exposed.")
            else:
                st.caption("term score = in query × idf × tf·(k1+1) / (tf + k1·length norm); length norm = "
                           "1 − b + b·doc len / avg len (Elasticsearch's explain).")
    elif ex.bm25_tree is not None:
        st.caption("BM25: no query term is in this trace, so its BM25 score is 0.")


PAGES = (("app.py", "Home"), ("pages/1_Corpus.py", "Corpus"), ("pages/2_Inspect.py", "Inspect"),
         ("pages/3_Compare.py", "Compare"), ("pages/4_Tune.py", "Tune"), ("pages/5_Facts.py", "Facts"),
         ("pages/6_Snapshots.py", "Snapshots"), ("pages/7_Judge.py", "Judge"), ("pages/8_Log.py", "Log"),
         ("pages/9_Present.py", "Present"))


# Streamlit's table toolbar offers "Download as CSV" of any st.dataframe, with no per-table switch (1.67): trace
# text there would reach a spreadsheet as formulas (`=…`). The app's own exports neutralise such cells; this one
# is hidden on every page.
NO_TABLE_CSV = ("<style>[data-testid='stElementToolbar'] button[aria-label='Download as CSV']"
                "{display:none !important}</style>")


def nav() -> None:
    """Sidebar navigation with readable labels (the built-in one would call Home "app"); hides Streamlit's
    unneutralised table CSV download (NO_TABLE_CSV)."""
    st.html(NO_TABLE_CSV)
    with st.sidebar:
        for path, label in PAGES:
            st.page_link(path, label=label)
        st.divider()
