"""Tune: calibrate the store without labels; on labelled queries, Recall@k, nDCG@10, MRR per stage, one fusion
search (every fusion function × normalisation × weight, × k for RRF) with one best, its held-out interval
against the current setting, and per-query wins and losses.

The heatmap is the RRF part of the same search the lab table summarises, so its starred cell is the lab's best
RRF setting. "Apply" sets this page's and Inspect's fusion sliders to the best and says when the held-out
interval includes zero; clicking a per-query row opens that query in Inspect with this configuration.
"""
from __future__ import annotations

import streamlit as st

from retrieval.eval.runner import METRICS
from retrieval.eval.sessions import tune
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.calibration import calibrate_section, set_sliders, store_defaults
from ui.sets import pick_labelled_set
from ui.charts import heatmap_figure, metrics_figure
from ui.state import PipelineConfig, side
from ui.access import page_guard
from ui.panel import config_panel, usable_config
from ui.glossary import caption_text, column_help, terms_in
from ui.text import plain
from ui.widgets import nav, open_in_inspect, selected_row

P = "t_"

st.set_page_config(page_title="Tune · Hybrid retrieval inspector", page_icon=":material/tune:", layout="wide")
nav()
access = page_guard()  # sign-in, allowed scopes, read-only
ws = workspace()
st.title("Tune")

with st.sidebar:
    st.header("Configuration")
    cfg = config_panel(P, store_defaults(ws), bind=False, compact=True)

if ws.store.count() > 0:
    calibrate_section(ws, access)
    st.divider()

st.subheader("Evaluate on labelled queries")
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


def apply_best(fusion, applied: tuple) -> None:
    """Set Tune's and Inspect's fusion sliders to the best strategy (a callback: before the widgets are drawn)."""
    set_sliders(fusion)
    st.session_state[f"{P}applied"] = applied


def interval_text(iv) -> str:
    return iv.describe(over="held-out queries")


def lab_table(lab) -> None:
    """Each fusion function's best on the tune half, its held-out score and interval against the current setting."""
    rows = [{"fusion": "evaluated configuration", "setting": lab.baseline.candidate.label, "tune": lab.baseline.tune,
             "held-out": lab.baseline.held_out, "Δ held-out vs evaluated": "—", "95 % interval": "—"}]
    for family, b in lab.best_by_family().items():  # each registered strategy (and its choices)
        iv = lab.interval(b)
        rows.append({"fusion": " · ".join(family), "setting": b.candidate.label,
                     "tune": b.tune, "held-out": b.held_out, "Δ held-out vs evaluated": f"{iv.delta:+.4f}",
                     "95 % interval": f"[{iv.lo:+.4f}, {iv.hi:+.4f}]"})
    st.dataframe([{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows],
                 hide_index=True, width="stretch")
    st.caption("Only the best on the tune half can be applied: picking the row that scores best held-out would choose "
               "on the very queries that judge it, and its held-out gain would no longer be an honest estimate.")


def best_view(lab) -> None:
    """The one best of the search, judged on the held-out half, and "Apply" with what the interval says."""
    best, iv = lab.best, lab.interval()
    verdict = ("better than the current setting (interval above zero)" if iv.above_zero else
               "worse than the current setting (interval below zero)" if iv.below_zero else
               "not shown to be better than the current setting (the interval includes zero)")
    st.markdown(f"**Best of the search** (chosen on the tune half): {plain(best.candidate.label)} → tune "
                f"{best.tune:.4f}, held-out **{best.held_out:.4f}** vs current {lab.baseline.held_out:.4f}: "
                f"{verdict}.")
    st.caption(f"Held-out gain {interval_text(iv)} (paired bootstrap).")
    if not iv.above_zero:
        st.warning(f"Applying {best.candidate.label} is not shown to help: held-out gain {interval_text(iv)}. "
                   "Keep the current setting, or label more queries to narrow the interval.")
    applied = (best.candidate.strategy.spec, best.tune, best.held_out)
    zero = "" if iv.above_zero else " (interval includes zero)" if not iv.below_zero else " (worse held-out)"
    st.button(f"Apply: {best.candidate.label}{zero}", key=f"{P}apply_best", on_click=apply_best,
              args=(best.candidate.strategy, applied),
              type="primary" if iv.above_zero else "secondary",
              help="Sets the fusion selector and sliders here and on Inspect (the other settings stay).")
    if st.session_state.get(f"{P}applied") == applied:
        st.success(f"Applied: the sliders here and on Inspect now read {best.candidate.label}.")


def search_view(lab) -> None:
    st.subheader(f"Fusion search: {len(lab.scores)} settings, one best ({lab.metric})")
    st.caption("Every fusion function × normalisation × dense weight (sparse = 1 − dense), × k for RRF, re-fused from "
               "the cached lists (no new search). Settings are chosen on the tune half and judged on the held-out "
               "half.")
    ws_, ks, cells = lab.rrf_cells()
    if ws_:
        rrf_best = lab.best_of("rrf")
        mark = (ws_.index(rrf_best.candidate.dense_weight), ks.index(rrf_best.candidate.rrf_k))
        st.plotly_chart(heatmap_figure(cells, [f"{k:g}" for k in ks], ws_, mark, "RRF k", "dense weight",
                                       f"{lab.metric} (tune half)"), key=f"{P}heat", config={"displayModeBar": False})
        st.caption(f"The RRF part of the search; ★ = the best RRF setting ({rrf_best.candidate.label}), the RRF row "
                   "of the table below.")
    if "held-out" not in lab.halves:  # too few labelled queries to split: no honest interval to show
        st.warning(f"All {len(lab.halves)} labelled quer{'y is' if len(lab.halves) == 1 else 'ies are'} in the tune "
                   "half, none held out: the search's best cannot be judged, nor applied. Label more queries (add "
                   "them to the case in Inspect) for a held-out half.")
        return
    lab_table(lab)
    best_view(lab)


def evaluate(cfg: PipelineConfig) -> None:
    """The configuration per stage, the agentos baseline, and one fusion search (`retrieval.eval.sessions.tune`)."""
    ensure_model()
    cfg, notes = usable_config(cfg, get_reranker, get_generator)
    for note in notes:
        st.warning(note)
    bar = st.progress(0.0, text=f"Evaluating the configuration ({cfg.settings.preset_name}) on {len(queries)} queries…")
    models = (get_reranker, get_generator)
    out = tune(side(ws, cfg, "configuration", *models),
               side(ws, PipelineConfig.for_preset("agentos"), "agentos baseline", *models), queries,
               progress=lambda f, text: bar.progress(f, text=text))
    bar.empty()
    st.session_state[f"{P}out"] = out
    st.session_state[f"{P}cfg"] = cfg


if st.button("Evaluate", type="primary", key=f"{P}run"):
    try:
        evaluate(cfg)
    except (ValueError, ImportError) as exc:
        st.error(plain(exc))

if f"{P}out" in st.session_state:
    out = st.session_state[f"{P}out"]
    evaluated = st.session_state.get(f"{P}cfg", cfg)
    if evaluated != cfg:  # Apply, or a slider moved: the tables below are the evaluated configuration's
        st.info("The settings changed since this evaluation: the tables below score the configuration evaluated "
                "then. Press **Evaluate** to score the settings the sliders show now.")
    st.subheader("Per stage (the evaluated configuration)")
    c1, c2 = st.columns([2, 3])
    c1.dataframe([{**r, **{m: round(r[m], 4) for m in METRICS}} for r in out.stages], hide_index=True,
                 width="stretch", column_config=column_help(list(out.stages[0]) if out.stages else []))
    c1.caption(plain(out.note))
    c1.caption(caption_text(*terms_in(" ".join(METRICS))))
    c2.plotly_chart(metrics_figure(out.stages, METRICS), key=f"{P}stages", config={"displayModeBar": False})
    search_view(out.lab)
    st.subheader("Per query vs the agentos baseline (final nDCG@10)")
    wins, losses, ties = out.wins_losses_ties
    st.caption(f"{wins} wins, {losses} losses, {ties} ties")
    st.caption("Click a query to open it in Inspect with this configuration.")
    deltas = out.deltas
    ev = st.dataframe([{**d, "baseline": round(d["baseline"], 3), "config": round(d["config"], 3),
                        "delta": round(d["delta"], 3)} for d in deltas], hide_index=True, width="stretch",
                      on_select="rerun", selection_mode="single-row", key=f"{P}per_q")
    n = selected_row(ev)
    if n is not None:
        q = {x.qid: x for x in queries}[deltas[n]["qid"]]
        open_in_inspect(st.session_state.get(f"{P}cfg", cfg), q.query, q.scope, None, ws.store.version())
