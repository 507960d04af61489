"""Compare: two configurations on one query (or the labelled set) — rank deltas, entered/left, overlap, metric deltas.

Each side has the full settings panel (RRF and convex fusion can sit side by side). Click a row to
open that query in Inspect with that side's configuration.
"""
from __future__ import annotations

import streamlit as st

from retrieval.eval.compare import compare_rankings
from retrieval.eval.runner import credited_ids, score_ranking
from retrieval.metrics import credited
from retrieval.eval.sessions import COMPARED, compare_sets
from retrieval.judgments.store import JudgmentStoreError
from ui.cache import ensure_model, get_generator, get_reranker, judgments, workspace
from ui.grading import UNRATED, grade_word, query_grades, unrated_ids
from ui.sets import pick_labelled_set
from ui.state import PipelineConfig, cache_key, run_config, side
from ui import view
from ui.access import page_guard
from ui.tables import HALF_PX, widths
from ui.text import code, plain
from ui.glossary import column_help, explain, helps
from ui.panel import config_panel, usable_config
from ui.widgets import nav, open_in_inspect, scope_picker, selected_row

P = "cmp_"
LABELS = {"ndcg@10": "nDCG@10", "recall@10": "recall@10", "mrr": "MRR"}  # each metric written as the glossary does
st.set_page_config(page_title="Compare · Hybrid retrieval inspector", page_icon="⚖️", layout="wide")
nav()
access = page_guard()  # sign-in, allowed scopes, read-only
ws = workspace()
st.title("Compare two configurations")
if ws.store.count() == 0:
    st.info("The store is empty: load the demo corpus on the Corpus page first.")
    st.stop()

with st.sidebar:
    st.header("A (baseline)")
    with st.expander("Settings A", expanded=False):
        cfg_a = config_panel(f"{P}a_", PipelineConfig.for_preset("agentos"), bind=False, compact=True)
    st.header("B")
    with st.expander("Settings B", expanded=True):
        cfg_b = config_panel(f"{P}b_", PipelineConfig.for_preset("hybrid"), bind=False, compact=True)

mode = st.radio("Compare on", ["one query", "a labelled set"], horizontal=True, key=f"{P}mode")


def render_lists(res_a, res_b, qrels: dict | None) -> list:
    cmp = compare_rankings(res_a.ids, res_b.ids)
    c = st.columns(4)
    c[0].metric("Overlap", f"{cmp.overlap}/{cmp.k}")
    c[1].metric("Jaccard", f"{cmp.jaccard:.2f}", help=explain("Jaccard"))
    if qrels:
        ma, mb = score_ranking(credited_ids(res_a, "final"), qrels), score_ranking(credited_ids(res_b, "final"), qrels)
        one = "One query: no interval (run on a labelled set for a paired 95 % interval)."
        for col, m in zip(c[2:], ("ndcg@10", "recall@10")):
            col.metric(f"{LABELS[m]} (B)", f"{mb[m]:.3f}", **view.metric_delta(mb[m], ma[m]),
                       help=f"{helps(LABELS[m])}\n\n{one}")
    left, right = st.columns(2)
    # The stored (whole) text: a split half is an Inspect detail, not what the trace says.
    texts = {t.id: t.content for t in res_a.traces + res_b.traces}
    for res in (res_a, res_b):
        texts.update(view.whole_texts(res.diagnostics, ws.store.get, res.ids))
    # a fact row is graded as its source trace, as the metrics above score it (retrieval.metrics.credited)
    credit: dict[str, str] = {**res_a.diagnostics.credit, **res_b.diagnostics.credit}
    unrated = set(unrated_ids(credited(cmp.a, credit), qrels or {})
                  + unrated_ids(credited([d.id for d in cmp.deltas], credit), qrels or {}))
    grade = (lambda t: grade_of(str(credit.get(t, t)), unrated, qrels))
    # Half the main column each (440 px at 1366 px): rank, id, mark and grade fit; the texts are listed below.
    with left:
        st.markdown(f"**A** · {cfg_a.settings.preset_name}")
        ev_a = st.dataframe([{"rank": i + 1, "id": t, "left": "✗" if t in cmp.left else "", "grade": grade(t)}
                             for i, t in enumerate(cmp.a)], hide_index=True, width="stretch",
                            column_config=widths({"rank": 44, "id": 200, "left": 52, "grade": 104}, HALF_PX, True),
                            on_select="rerun", selection_mode="single-row", key=f"{P}list_a")
    with right:
        st.markdown(f"**B** · {cfg_b.settings.preset_name}")
        ev_b = st.dataframe([{"rank": d.rank_b, "id": d.id, "Δ rank": d.label, "grade": grade(d.id)}
                             for d in cmp.deltas], hide_index=True, width="stretch",
                            column_config=widths({"rank": 44, "id": 200, "Δ rank": 52, "grade": 104}, HALF_PX, True),
                            on_select="rerun", selection_mode="single-row", key=f"{P}list_b")
    with st.expander(f"Texts of the {len(set(cmp.a) | {d.id for d in cmp.deltas})} traces in A or B"):
        order = [d.id for d in cmp.deltas] + [t for t in cmp.a if t in cmp.left]
        st.markdown("\n".join(f"- {code(t)} {plain(texts[t])}" for t in dict.fromkeys(order)))
    st.caption(f"Entered B's top-k: {plain(', '.join(cmp.entered)) or 'none'} · left: "
               f"{plain(', '.join(cmp.left)) or 'none'}"
               " · click a row to explain it in Inspect with that side's settings")
    return [(cfg_a, cmp.a[n]) for n in [selected_row(ev_a)] if n is not None] + \
        [(cfg_b, cmp.deltas[n].id) for n in [selected_row(ev_b)] if n is not None]


def short(cfg) -> str:
    """A side's preset and fusion, as the status line names it."""
    return f"{cfg.settings.preset_name}, {cfg.settings.strategy.name}"


def grade_of(t: str, unrated: set[str], qrels: dict | None) -> str:
    return UNRATED if t in unrated else "—" if not qrels or t not in qrels else compare_grade(qrels[t])


def compare_grade(g: float) -> str:
    """The grade words every page writes; a mean of several raters that is not whole says so."""
    return grade_word(int(g)) if float(g).is_integer() else f"{g:.2g} (mean)"


def interval_caption(iv) -> str:
    where = "B is better" if iv.above_zero else "B is worse" if iv.below_zero else "no difference shown"
    return f"Δ {iv.describe(3)}: {where} (paired bootstrap)"


ensure_model()
try:
    if mode == "one query":
        c1, c2 = st.columns([3, 1])
        query = c1.text_input("Query", key=f"{P}q")
        with c2:
            scope = scope_picker(ws, f"{P}scope", bind=False)
        if query.strip():
            # Each side keeps its searched result: a rerun re-fuses it instead of searching again.
            cfg_a, notes_a = usable_config(cfg_a, get_reranker, get_generator)
            cfg_b, notes_b = usable_config(cfg_b, get_reranker, get_generator)
            for which, note in [("A", n) for n in notes_a] + [("B", n) for n in notes_b]:
                st.warning(f"{which}: {note}")
            what = f"A ({short(cfg_a)}) and B ({short(cfg_b)})"
            with st.status(f"Running {what}…",
                           expanded=False) as status:
                res_a, _ = run_config(ws, cfg_a, query, scope, get_reranker, get_generator,
                                      st.session_state.get(f"{P}ra"))
                res_b, _ = run_config(ws, cfg_b, query, scope, get_reranker, get_generator,
                                      st.session_state.get(f"{P}rb"))
                status.update(label=f"Ran {what}",
                              state="complete")
            st.session_state[f"{P}ra"] = (cache_key(query, scope, cfg_a), res_a)
            st.session_state[f"{P}rb"] = (cache_key(query, scope, cfg_b), res_b)
            try:
                graded = query_grades(judgments(ws.uri), scope, query)  # every rater's, combined (mean)
            except JudgmentStoreError as exc:  # a damaged judgments table: no grades, the lists still compare
                st.warning(f"Grading is off: {plain(exc)}")
                graded = {}
            qrels = {i: float(g) for i, g in graded.items()} or None
            picked = render_lists(res_a, res_b, qrels)
            if picked:
                open_in_inspect(picked[0][0], query, scope, picked[0][1], ws.store.version())
        else:
            st.caption("Type a query to compare A and B.")
    else:
        queries = pick_labelled_set(ws, P)
        if not queries:
            st.stop()
        known = [t for t in ws.store.get(sorted({i for q in queries for i in q.qrels})) if access.sees(t.scope_key)]
        if not known:
            st.warning("None of the judged traces are in this store: load the demo corpus first.")
            st.stop()
        if st.button(f"Run A and B on {len(queries)} labelled queries", key=f"{P}run", type="primary"):
            side_a, side_b = (side(ws, usable_config(cfg, get_reranker, get_generator)[0],
                                   f"{name} ({cfg.settings.preset_name})",
                                   get_reranker, get_generator) for name, cfg in (("A", cfg_a), ("B", cfg_b)))
            bar = st.progress(0.0, text=f"Running A and B on {len(queries)} queries…")
            st.session_state[f"{P}set"] = compare_sets(side_a, side_b, queries,
                                                       progress=lambda f, text: bar.progress(f, text=text))
            bar.empty()
        if f"{P}set" in st.session_state:
            out = st.session_state[f"{P}set"]  # a retrieval.eval.sessions.SetComparison
            fa, fb = out.final("a"), out.final("b")
            for col, m in zip(st.columns(3), COMPARED):
                col.metric(f"{LABELS[m]} (B)", f"{fb[m]:.3f}", **view.metric_delta(fb[m], fa[m]),
                           help=f"{helps(LABELS[m])}\n\nB's final lists, the mean over the set's queries; below it the "
                                "paired 95 % interval of B − A.")
                col.caption(interval_caption(out.intervals[m]))
            rows = out.per_query
            st.caption("Click a query to open it in Inspect with B's settings.")
            shown = {"qid": "qid", "query": "query", "A ndcg@10": "nDCG@10 (A)", "B ndcg@10": "nDCG@10 (B)", "Δ": "Δ"}
            table = [{shown[k]: round(v, 3) if isinstance(v, float) else v for k, v in r.items() if k in shown}
                     for r in rows]
            ev = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun",
                              selection_mode="single-row", key=f"{P}per_q",
                              column_config=column_help(list(shown.values()), {"Δ": st.column_config.Column(
                                  help="nDCG@10 (B) − nDCG@10 (A) for this query (worst loss first)")}))
            n = selected_row(ev)
            if n is not None:
                q = {q.qid: q for q in queries}[rows[n]["qid"]]
                open_in_inspect(cfg_b, q.query, q.scope, None, ws.store.version())
except (ValueError, ImportError) as exc:
    st.error(plain(exc))
