"""Compare: two configurations on one query (or the labelled set) — rank deltas, entered/left, overlap, metric deltas."""
from __future__ import annotations

import streamlit as st

from retrieval.eval.runner import credited_ids, load_judgments, run_queries, score_ranking, summarize
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.state import PipelineConfig, build_retriever, run_config
from ui.widgets import config_panel, nav, scope_picker

P = "cmp_"
st.set_page_config(page_title="Compare · Hybrid retrieval inspector", page_icon="⚖️", layout="wide")
nav()
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

mode = st.radio("Compare on", ["one query", "the labelled demo set"], horizontal=True, key=f"{P}mode")


def render_lists(res_a, res_b, qrels: dict | None) -> None:
    a, b = res_a.ids, res_b.ids
    k = max(len(a), len(b))
    overlap = len(set(a) & set(b))
    c = st.columns(4)
    c[0].metric("Overlap", f"{overlap}/{k}")
    c[1].metric("Jaccard", f"{overlap / max(1, len(set(a) | set(b))):.2f}")
    if qrels:
        ma, mb = score_ranking(credited_ids(res_a, "final"), qrels), score_ranking(credited_ids(res_b, "final"), qrels)
        c[2].metric("nDCG@10 B", f"{mb['ndcg@10']:.3f}", f"{mb['ndcg@10'] - ma['ndcg@10']:+.3f} vs A")
        c[3].metric("Recall@10 B", f"{mb['recall@10']:.3f}", f"{mb['recall@10'] - ma['recall@10']:+.3f} vs A")
    left, right = st.columns(2)
    texts = {t.id: t.content for t in res_a.traces + res_b.traces}
    with left:
        st.markdown(f"**A** · {cfg_a.preset}")
        st.dataframe([{"rank": i + 1, "id": t, "left top-k": "✗" if t not in b else "", "grade": (qrels or {}).get(t),
                       "content": texts[t][:140]} for i, t in enumerate(a)], hide_index=True, width="stretch")
    with right:
        st.markdown(f"**B** · {cfg_b.preset}")
        rows = []
        for i, t in enumerate(b):
            delta = "new" if t not in a else (a.index(t) - i)
            rows.append({"rank": i + 1, "id": t, "Δ rank": f"▲{delta}" if isinstance(delta, int) and delta > 0 else
                         (f"▼{-delta}" if isinstance(delta, int) and delta < 0 else ("=" if delta == 0 else "entered")),
                         "grade": (qrels or {}).get(t), "content": texts[t][:140]})
        st.dataframe(rows, hide_index=True, width="stretch")
    entered, left_ = [t for t in b if t not in a], [t for t in a if t not in b]
    st.caption(f"Entered B's top-k: {', '.join(entered) or 'none'} · left: {', '.join(left_) or 'none'}")


ensure_model()
try:
    if mode == "one query":
        c1, c2 = st.columns([3, 1])
        query = c1.text_input("Query", key=f"{P}q")
        with c2:
            scope = scope_picker(ws, f"{P}scope", bind=False)
        if query.strip():
            res_a, _ = run_config(ws, cfg_a, query, scope, get_reranker, get_generator)
            res_b, _ = run_config(ws, cfg_b, query, scope, get_reranker, get_generator)
            from retrieval.demo import JUDGMENTS

            qrels = None
            if JUDGMENTS.is_file():
                match = [j for j in load_judgments(JUDGMENTS)
                         if j.query.strip().lower() == query.strip().lower() and str(j.scope) == str(scope)]
                qrels = match[0].qrels if match else None
            render_lists(res_a, res_b, qrels)
        else:
            st.caption("Type a query to compare A and B.")
    else:
        from retrieval.demo import JUDGMENTS

        if not JUDGMENTS.is_file():
            st.error("No labelled set found (data/demo/judgments.jsonl).")
            st.stop()
        queries = load_judgments(JUDGMENTS)
        known = ws.store.get(sorted({i for q in queries for i in q.qrels}))
        if not known:
            st.warning("None of the judged traces are in this store: load the demo corpus first.")
            st.stop()
        if st.button(f"Run A and B on {len(queries)} labelled queries", key=f"{P}run", type="primary"):
            bar = st.progress(0.0, text="A…")
            ra = run_queries(build_retriever(ws, cfg_a, get_reranker, get_generator), queries,
                             progress=lambda d, t: bar.progress(d / t / 2, text=f"A {d}/{t}"),
                             recall_top_k=cfg_a.top_k, over_fetch_multiplier=cfg_a.over_fetch)
            rb = run_queries(build_retriever(ws, cfg_b, get_reranker, get_generator), queries,
                             progress=lambda d, t: bar.progress(0.5 + d / t / 2, text=f"B {d}/{t}"),
                             recall_top_k=cfg_b.top_k, over_fetch_multiplier=cfg_b.over_fetch)
            bar.empty()
            st.session_state[f"{P}set"] = (summarize(ra), summarize(rb), [
                {"qid": x.q.qid, "query": x.q.query, "A ndcg@10": x.per_stage.get("final", {}).get("ndcg@10", 0),
                 "B ndcg@10": y.per_stage.get("final", {}).get("ndcg@10", 0)} for x, y in zip(ra, rb)])
        if f"{P}set" in st.session_state:
            sa, sb, per_q = st.session_state[f"{P}set"]
            fa = next(r for r in sa if r["stage"] == "final")
            fb = next(r for r in sb if r["stage"] == "final")
            c = st.columns(3)
            for col, m in zip(c, ("ndcg@10", "recall@10", "mrr")):
                col.metric(f"{m} (B)", f"{fb[m]:.3f}", f"{fb[m] - fa[m]:+.3f} vs A")
            for row in per_q:
                row["Δ"] = row["B ndcg@10"] - row["A ndcg@10"]
            st.dataframe(sorted(per_q, key=lambda r: r["Δ"]), hide_index=True, width="stretch")
except (ValueError, ImportError) as exc:
    st.error(str(exc))
