"""Shared Streamlit widgets: the settings panel, stage columns, trace cards, the explanation view."""
from __future__ import annotations

import html
import re
from dataclasses import fields

import streamlit as st

from retrieval.bm25 import default_tokenizer
from retrieval.hybrid import PRESETS
from retrieval.types import Scope

from .charts import STAGE_LABELS, bar_figure, origin
from .state import CLASSIFIER_CHOICES, GENERATOR_CHOICES, RERANKER_CHOICES, PipelineConfig

SNIPPET_CHARS = 180
RERANKER_NOTES = {
    "embedding": "MiniLM bi-encoder stand-in: real but weak; a cross-encoder or Cohere reranks better.",
    "cohere": "Cohere rerank-v3.5, hosted (COHERE_API_KEY).",
    "cross-encoder": "A local sentence-transformers cross-encoder folder (none ships with this app).",
}
BADGE_STYLE = ("display:inline-block;padding:0 6px;margin-left:4px;border-radius:8px;font-size:0.72em;"
               "color:white;background:{bg}")
BADGES = {"fact": ("fact", "#2a9d4b"), "sparse": ("BM25 only", "#e4572e"), "split": ("split", "#b8860b"),
          "both": ("both", "#7b3fb0")}


def highlight(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """HTML-escaped snippet with query terms in <mark>; centred on the first hit when long."""
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
    return "".join(out)


def badge(kind: str) -> str:
    label, bg = BADGES[kind]
    return f"<span style='{BADGE_STYLE.format(bg=bg)}'>{label}</span>"


def stage_column(stage: str, diag, pool: dict, query: str, rows: int, store_get) -> None:
    """One of the five side-by-side columns: rank, short id, score, snippet, badges."""
    ids = diag.stage_ids.get(stage, [])
    scores = diag.stage_scores.get(stage, {})
    st.markdown(f"**{STAGE_LABELS[stage]}** · {len(ids)}")
    if not ids:
        reason = {"reranked": "no reranker selected (or it failed)", "merged": "fusion skipped"}.get(stage, "no hits")
        st.caption(f"— {reason}")
        return
    texts = {i: t.content for i, t in pool.items()}
    missing = [i for i in ids[:rows] if i not in texts]
    if missing:
        texts.update({t.id: t.content for t in store_get(missing)})
    split_ids = set((diag.split_on_ambiguous or {}).get("replaced_ids", []))
    lines = []
    for rank, tid in enumerate(ids[:rows], start=1):
        o = origin(tid, diag.stage_ids, diag.fact_ids)
        badges = badge("fact") if o == "fact" else badge("sparse") if o == "sparse" else ""
        if tid in split_ids and stage in ("reranked", "final"):
            badges += badge("split")
        short = tid if len(tid) <= 26 else tid[:24] + "…"
        snippet = highlight(texts.get(tid, "(not in store)"), query, 120)
        lines.append(
            f"<div class='trace-row' data-stage='{stage}' style='border-bottom:1px solid #eee;padding:4px 0;"
            f"font-size:0.82em;line-height:1.25'><b>{rank}.</b> <code title='{html.escape(tid)}'>"
            f"{html.escape(short)}</code> <span style='color:#666'>{scores.get(tid, 0):.4g}</span>{badges}"
            f"<br>{snippet}</div>")
    st.markdown("".join(lines), unsafe_allow_html=True)


def scope_picker(ws, key: str, label: str = "Scope", allow_all: bool = True, bind: bool = True) -> Scope | None:
    """Pick one scope (default: the one with most traces) or, optionally, all of them. Only the scopes
    this visitor may see are offered (`ui.access`); a visitor limited to some cannot pick all of them."""
    from .access import session_access

    acc = session_access()  # issue #17: the check itself is retrieval.access
    counts = {s: n for s, n in ws.store.scope_counts().items() if acc.sees(s)}
    allow_all = allow_all and acc.sees(None)
    scopes = [str(s) for s in counts]
    options = (["(all scopes)"] if allow_all else []) + scopes
    if not options or not scopes:
        st.caption("No scope you may see has traces yet." if acc.limited else "No scopes yet.")
        if acc.limited:
            st.stop()  # None would mean "every scope" to the pipeline
        return None
    biggest = str(max(counts, key=lambda s: (counts[s], str(s))))
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = biggest
    default_idx = options.index(biggest)
    kw = {"bind": "query-params"} if bind else {}
    choice = st.selectbox(label, options, index=default_idx, key=key, **kw)
    return None if choice == "(all scopes)" else Scope.parse(choice)


def config_panel(prefix: str, defaults: PipelineConfig = PipelineConfig(), bind: bool = True,
                 compact: bool = False) -> PipelineConfig:
    """Every pipeline knob as a widget; keys are `prefix + field` (and URL params when bound)."""
    kw = {"bind": "query-params"} if bind else {}

    def k(name: str) -> str:
        return f"{prefix}{name}"

    d = defaults
    def follow_preset() -> None:  # switching preset loads its fusion defaults
        pd = PipelineConfig.for_preset(st.session_state[k("preset")])
        for name in ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight"):
            st.session_state[k(name)] = getattr(pd, name)

    preset = st.radio("Preset", PRESETS, index=PRESETS.index(d.preset), key=k("preset"), horizontal=True,
                      on_change=follow_preset,
                      help="agentos: the faithful AgentOS pipeline (sparse-only hits dropped, 0.7/0.3, k 60). "
                           "hybrid: sparse-only hits kept, rank completion, fused rerank base, 0.5/0.5, k 10. "
                           "Switching loads the preset's fusion defaults.", **kw)
    pdef = PipelineConfig.for_preset(preset) if preset != d.preset else d
    st.markdown("**Fusion** — moving these re-fuses cached lists (no new search)")
    if st.button(f"Reset fusion to the {preset} defaults", key=k("reset_fusion")):
        follow_preset()
        st.rerun()
    dw = st.slider("Dense weight", 0.0, 1.0, pdef.dense_weight, 0.05, key=k("dense_weight"), **kw)
    sw = st.slider("Sparse weight", 0.0, 1.0, pdef.sparse_weight, 0.05, key=k("sparse_weight"), **kw)
    rrf_k = st.slider("RRF k", 1, 200, pdef.rrf_k, 1, key=k("rrf_k"), help="Higher k flattens rank differences.", **kw)
    c1, c2 = st.columns(2)
    top_k = c1.number_input("Top k", 1, 100, d.top_k, key=k("top_k"), **kw)
    over = c2.number_input("Over-fetch ×", 1, 10, d.over_fetch, key=k("over_fetch"),
                           help="Each side fetches top-k × this many candidates.", **kw)
    st.markdown("**Rerank**")
    # Plain option values (no format_func): they are what the URL carries.
    reranker = st.selectbox("Reranker", RERANKER_CHOICES, index=RERANKER_CHOICES.index(d.reranker), key=k("reranker"),
                            help="embedding: the bundled MiniLM as a bi-encoder stand-in (offline, weak); cohere: "
                                 "rerank-v3.5 (needs COHERE_API_KEY); cross-encoder: a local model folder", **kw)
    if reranker != "none":
        st.caption(RERANKER_NOTES[reranker])
    ce_path = d.cross_encoder_path
    if reranker == "cross-encoder":
        ce_path = st.text_input("Cross-encoder folder", d.cross_encoder_path, key=k("cross_encoder_path"), **kw)
    rw = st.slider("Rerank blend weight", 0.0, 1.0, pdef.rerank_weight, 0.05, key=k("rerank_weight"),
                   disabled=reranker == "none", **kw)
    split_on = st.slider("Split-on-ambiguous threshold (0 = off)", 0.0, 1.0, d.split_threshold, 0.05,
                         key=k("split_threshold"), disabled=reranker == "none",
                         help="The lowest-scoring fraction of the pool is split in half and re-scored.", **kw)
    st.markdown("**Query expansion**")
    hyde = st.toggle("HyDE (search a hypothetical memory note)", d.hyde, key=k("hyde"), **kw)
    mq = st.number_input("Multi-query variants (0 = off)", 0, 5, d.multi_query_n, key=k("multi_query_n"), **kw)
    gen, base_url, model = d.generator, d.openai_base_url, d.openai_model
    if hyde or mq:
        gen = st.selectbox("Text generator", GENERATOR_CHOICES, index=GENERATOR_CHOICES.index(d.generator),
                           key=k("generator"), help="gemma: local Gemma 3 270M, offline; cohere: Cohere chat (needs "
                           "COHERE_API_KEY); openai: any OpenAI-compatible server (Ollama, vLLM, llama.cpp)", **kw)
        if gen == "openai":
            # Never bound to the page URL: a link must not choose the server a query (and a key) goes to.
            base_url = st.text_input("Server URL", d.openai_base_url, key=k("openai_base_url"),
                                     help="Not read from the page URL. The operator's OPENAI_API_KEY is sent only "
                                          "to the OPENAI_BASE_URL the operator configured; any other server is "
                                          "called without a key (right for a local Ollama).")
            model = st.text_input("Model", d.openai_model, key=k("openai_model"), **kw)
    st.markdown("**Fact graph**")
    facts = st.toggle("Inject facts", d.facts, key=k("facts"), **kw)
    clf = st.selectbox("Query classifier", CLASSIFIER_CHOICES, index=CLASSIFIER_CHOICES.index(d.classifier),
                       key=k("classifier"), disabled=not facts, **kw)
    val, aro, dom = d.valence, d.arousal, d.dominance
    if not compact:
        st.markdown("**Mood** (PAD) — emotional traces score higher when valences agree")
        val = st.slider("Valence", -1.0, 1.0, d.valence, 0.1, key=k("valence"), **kw)
        aro = st.slider("Arousal", 0.0, 1.0, d.arousal, 0.1, key=k("arousal"), **kw)
        dom = st.slider("Dominance", -1.0, 1.0, d.dominance, 0.1, key=k("dominance"), **kw)
    return PipelineConfig(
        preset=preset, dense_weight=float(dw), sparse_weight=float(sw), rrf_k=int(rrf_k), over_fetch=int(over),
        top_k=int(top_k), hyde=bool(hyde), generator=gen, openai_base_url=base_url, openai_model=model,
        multi_query_n=int(mq), facts=bool(facts), classifier=clf, reranker=reranker, cross_encoder_path=ce_path,
        rerank_weight=float(rw), split_threshold=float(split_on), valence=float(val), arousal=float(aro),
        dominance=float(dom))


def apply_config(prefix: str, cfg: PipelineConfig) -> None:
    """Set the panel's widget state from a config (before the widgets are drawn)."""
    for f in fields(cfg):
        st.session_state[f"{prefix}{f.name}"] = getattr(cfg, f.name)


def config_io(prefix: str, cfg: PipelineConfig) -> None:
    """Export the current config as JSON; import one (applied on the next run)."""
    st.download_button("Export config (JSON)", cfg.to_json(), file_name="retrieval-config.json",
                       mime="application/json", key=f"{prefix}export")
    up = st.file_uploader("Import config", type=["json"], key=f"{prefix}import")
    if up is not None and st.session_state.get(f"{prefix}imported") != up.file_id:
        try:
            new = PipelineConfig.from_json(up.getvalue())
        except ValueError as exc:
            st.error(f"Could not import {up.name}: {exc}")
        else:
            st.session_state[f"{prefix}imported"] = up.file_id
            apply_config(prefix, new)
            st.rerun()


def explanation_view(ex, query: str) -> None:
    """Everything `Diagnostics.explain` knows about one id."""
    if ex.dropped_at is None:
        st.success(ex.reason)
    else:
        st.warning(f"Dropped at **{ex.dropped_at}** — {ex.reason}")
    if ex.content:
        st.markdown(f"<div style='font-size:0.9em'>{highlight(ex.content, query, 600)}</div>", unsafe_allow_html=True)
        if ex.scope:
            st.caption(f"scope {ex.scope}")
    rows = [{"stage": STAGE_LABELS[s], "rank": v[0] if v else None, "score": round(v[1], 5) if v else None}
            for s, v in ex.stages.items()]
    c1, c2, c3 = st.columns(3)
    with c1:
        st.markdown("**Rank and score per stage**")
        st.dataframe(rows, hide_index=True, width="stretch")
    with c2:
        if ex.dense_breakdown:
            st.plotly_chart(bar_figure(ex.dense_breakdown, "dense score breakdown (each term 0–1)"),
                            key=f"xb_{ex.trace_id}", config={"displayModeBar": False})
        if ex.rrf:
            st.markdown("**RRF contributions** (weight / (k + rank))")
            st.dataframe([{"list": n, "rank": ex.rrf["ranks"][n], "contribution": round(c, 6),
                           "rank from": "its real score (rank completion)" if ex.rrf.get("imputed") == n else "the list"}
                          for n, c in ex.rrf["contributions"].items()], hide_index=True, width="stretch")
    with c3:
        if ex.bm25_terms and any(v > 0 for v in ex.bm25_terms.values()):
            st.plotly_chart(bar_figure(ex.bm25_terms, "BM25 contribution per query term", "#e4572e"),
                            key=f"xt_{ex.trace_id}", config={"displayModeBar": False})
        elif ex.bm25_terms is not None:
            st.caption("BM25: no query term is in this trace, so it scores 0.")
        if ex.blend:
            b = ex.blend
            st.markdown(f"**Rerank**: reranker {b['rerank']:.3f}; blended = (1−{b['weight']:.2f})·{b['base']:.3f} + "
                        f"{b['weight']:.2f}·{b['rerank']:.3f} = **{b['blended']:.3f}**")
        if ex.split:
            s = ex.split
            st.markdown(f"**Split**: halves scored {s['half_scores'][0]:.3f} / {s['half_scores'][1]:.3f} vs whole "
                        f"{s['whole']:.3f} → {'replaced by half ' + s['chosen'] if s['replaced'] else 'kept whole'}")
        if ex.fact:
            f = ex.fact
            st.markdown(f"**Fact** `{f['subject']} {f['predicate']} {f['object']}` as of {f['timestamp'][:10]}, "
                        f"from trace(s) {', '.join(f['source_trace_ids'])}: “{f['source_span']}”")


PAGES = (("app.py", "Home"), ("pages/1_Corpus.py", "Corpus"), ("pages/2_Inspect.py", "Inspect"),
         ("pages/3_Compare.py", "Compare"), ("pages/4_Tune.py", "Tune"), ("pages/5_Facts.py", "Facts"))


def nav() -> None:
    """Sidebar navigation with readable labels (the built-in one would call Home "app")."""
    with st.sidebar:
        for path, label in PAGES:
            st.page_link(path, label=label)
        st.divider()
