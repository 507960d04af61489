"""Tune: labelled queries → Recall@k, nDCG@10, MRR per stage; a dense-weight × RRF-k sweep; per-query wins/losses.

"Apply best" sets this page's and Inspect's fusion sliders to the best cell; clicking a per-query
row opens that query in Inspect with this configuration.
"""
from __future__ import annotations

import streamlit as st

from retrieval.eval.lab import fusion_grid, search_fusions
from retrieval.eval.runner import METRICS, per_query_deltas, run_queries, summarize, sweep
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.sets import pick_labelled_set
from ui.charts import heatmap_figure, metrics_figure
from ui.state import PipelineConfig, build_retriever
from ui.links import fmt
from ui.access import page_guard
from ui.panel import config_panel, usable_config
from ui.widgets import nav, open_in_inspect, selected_row

P = "t_"
DENSE_WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
KS = [1, 5, 10, 20, 40, 60, 100]

st.set_page_config(page_title="Tune · Hybrid retrieval inspector", page_icon="🎛️", layout="wide")
nav()
access = page_guard()  # sign-in, allowed scopes, read-only
ws = workspace()
st.title("Tune")

with st.sidebar:
    st.header("Configuration")
    cfg = config_panel(P, PipelineConfig(), bind=False, compact=True)

queries = pick_labelled_set(ws, P)
if not queries:
    st.info("No labelled queries yet.")
    st.stop()
judged = sorted({i for q in queries for i in q.qrels})
present = {t.id for t in ws.store.get(judged) if access.sees(t.scope_key)}  # a hidden scope's trace is not "present"
if not present:
    st.warning("None of the judged traces are in this store. Load the demo corpus on the Corpus page.")
    st.stop()
st.caption(f"{len(queries)} labelled queries · {len(present)}/{len(judged)} judged traces present in the store")



def apply_best(bp: dict) -> None:
    """Set Tune's and Inspect's fusion sliders to the best cell (a callback: before the widgets are drawn)."""
    best = {"dense_weight": float(bp["dense_weight"]), "sparse_weight": float(bp["sparse_weight"]),
            "rrf_k": int(bp["rrf_k"]), "fusion": bp.get("fusion", "rrf")}
    if bp.get("fusion") == "convex":
        best["normalization"] = bp["normalization"]
    for prefix in (P, "i_"):
        for name, value in best.items():
            st.session_state[f"{prefix}{name}"] = value
    last = st.session_state.get("i_link")
    if last is not None:  # Inspect restores its last view on arrival: make that view the best cell
        st.session_state["i_link"] = {**last, **{f"i_{n}": fmt(v) for n, v in best.items()}}
    st.session_state[f"{P}applied"] = bp


def lab_view(lab) -> None:
    """The fusion lab: each function's best on the tune half, its held-out score, and "apply"."""
    st.subheader("Fusion lab: which fusion suits these queries?")
    st.caption("Every fusion function × normalisation × dense weight (× k for RRF), re-fused from the cached lists. "
               "Each row is that function's best on the tune half; trust the held-out column.")
    rows = [{"fusion": "current configuration", "setting": lab.baseline.candidate.label,
             "tune": lab.baseline.tune, "held-out": lab.baseline.held_out, "all queries": lab.baseline.all}]
    for fusion, norm in (("rrf", None), ("convex", "minmax"), ("convex", "theoretical"), ("convex", "zscore")):
        b = lab.best_of(fusion, norm)
        rows.append({"fusion": "RRF" if fusion == "rrf" else f"convex · {norm}", "setting": b.candidate.label,
                     "tune": b.tune, "held-out": b.held_out, "all queries": b.all})
    st.dataframe([{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows],
                 hide_index=True, width="stretch")
    best = lab.best.candidate
    knobs = {**best.knobs(), "tune": lab.best.tune, "held_out": lab.best.held_out}
    wins = sum(1 for r in lab.per_query if r["delta"] > 1e-9)
    losses = sum(1 for r in lab.per_query if r["delta"] < -1e-9)
    st.caption(f"Best on the tune half: {best.label} → tune {lab.best.tune:.4f}, held-out "
               f"**{lab.best.held_out:.4f}** (current: {lab.baseline.held_out:.4f}); against the current configuration "
               f"it wins {wins} queries and loses {losses}.")
    st.button(f"Apply: {best.label}", key=f"{P}apply_lab", on_click=apply_best, args=(knobs,),
              help="Sets the fusion selector and sliders here and on Inspect (the other settings stay).")


if st.button("Evaluate", type="primary", key=f"{P}run"):
    ensure_model()
    try:
        cfg, notes = usable_config(cfg, get_reranker, get_generator)
        for note in notes:
            st.warning(note)
        bar = st.progress(0.0, text=f"Evaluating the configuration ({cfg.preset}) on {len(queries)} queries…")
        retr = build_retriever(ws, cfg, get_reranker, get_generator)
        runs = run_queries(retr, queries, progress=lambda d, t: bar.progress(d / t * 0.5,
                                                                             text=f"configuration: query {d} of {t}"),
                           recall_top_k=cfg.recall_top_k, over_fetch_multiplier=cfg.over_fetch_multiplier)
        base_cfg = PipelineConfig.for_preset("agentos")
        base = run_queries(build_retriever(ws, base_cfg, get_reranker, get_generator), queries,
                           progress=lambda d, t: bar.progress(0.5 + d / t * 0.4,
                                                              text=f"agentos baseline: query {d} of {t}"),
                           recall_top_k=base_cfg.recall_top_k, over_fetch_multiplier=base_cfg.over_fetch_multiplier)
        bar.progress(0.95,
                     text=f"Sweeping {len(DENSE_WEIGHTS)} dense weights × {len(KS)} RRF k values (re-fusing cached "
                          f"lists, no search)…")
        sw = sweep(retr, runs, DENSE_WEIGHTS, KS, rerank_weight=cfg.rerank_weight)
        lab = None
        if cfg.preset != "agentos":
            bar.progress(0.97, text="Fusion lab: every fusion function × normalisation × weight (re-fusing)…")
            lab = search_fusions(runs, fusion_grid())
        bar.empty()
        st.session_state[f"{P}out"] = (summarize(runs), sw, per_query_deltas(base, runs), summarize(base))
        st.session_state[f"{P}lab"] = lab
        st.session_state[f"{P}cfg"] = cfg
    except (ValueError, ImportError) as exc:
        st.error(str(exc))

if f"{P}out" in st.session_state:
    rows, sw, deltas, base_rows = st.session_state[f"{P}out"]
    st.subheader("Per stage (current configuration)")
    c1, c2 = st.columns([2, 3])
    c1.dataframe([{**r, **{m: round(r[m], 4) for m in METRICS}} for r in rows], hide_index=True, width="stretch")
    c2.plotly_chart(metrics_figure(rows, METRICS), key=f"{P}stages", config={"displayModeBar": False})
    st.subheader("Sweep: dense weight × RRF k (sparse = 1 − dense), final nDCG@10")
    bp = sw.best_params
    st.caption(f"Best on the tune half: dense {bp['dense_weight']}, sparse {bp['sparse_weight']}, k {bp['rrf_k']} → "
               f"{bp['tune']:.4f}; the same cell on the held-out half: **{bp['held_out']:.4f}**. "
               "Choose on one half, trust the other.")
    if getattr(st.session_state.get(f"{P}cfg"), "fusion", "rrf") != "rrf":
        st.caption("The grid re-fuses with RRF (k is an RRF knob); applying a cell switches the fusion to RRF. "
                   "The fusion lab below compares it with the convex functions.")
    st.plotly_chart(heatmap_figure(sw.tune, sw.ks, sw.dense_weights, sw.best, "RRF k", "dense weight",
                                   "nDCG@10 (tune half)"), key=f"{P}heat", config={"displayModeBar": False})
    st.button(f"Apply best: dense {bp['dense_weight']:g}, sparse {bp['sparse_weight']:g}, k {bp['rrf_k']}",
              key=f"{P}apply_best", on_click=apply_best, args=(bp,), type="primary",
              help="Sets the fusion sliders here and on Inspect to the best cell (the other settings stay).")
    if st.session_state.get(f"{P}applied") == bp:
        st.success(f"Applied: the sliders here and on Inspect now read dense {bp['dense_weight']:g}, sparse "
                   f"{bp['sparse_weight']:g}, k {bp['rrf_k']}.")
    lab = st.session_state.get(f"{P}lab")
    if lab is not None:
        lab_view(lab)
    st.subheader("Per query vs the agentos baseline (final nDCG@10)")
    wins = sum(1 for d in deltas if d["delta"] > 1e-9)
    losses = sum(1 for d in deltas if d["delta"] < -1e-9)
    st.caption(f"{wins} wins, {losses} losses, {len(deltas) - wins - losses} ties")
    st.caption("Click a query to open it in Inspect with this configuration.")
    ev = st.dataframe([{**d, "baseline": round(d["baseline"], 3), "config": round(d["config"], 3),
                        "delta": round(d["delta"], 3)} for d in deltas], hide_index=True, width="stretch",
                      on_select="rerun", selection_mode="single-row", key=f"{P}per_q")
    n = selected_row(ev)
    if n is not None:
        q = {x.qid: x for x in queries}[deltas[n]["qid"]]
        open_in_inspect(st.session_state.get(f"{P}cfg", cfg), q.query, q.scope, None, ws.store.version())
