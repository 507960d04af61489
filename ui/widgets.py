"""Shared Streamlit widgets: the settings panel, stage columns, the explanation view, escalations, links."""
from __future__ import annotations

import html
import re
from dataclasses import fields, replace
from urllib.parse import urlencode

import streamlit as st

from retrieval.bm25.index import default_tokenizer
from retrieval.pipeline.escalations import describe
from retrieval.pipeline.factory import generator_spec, reranker_spec
from retrieval.fusion import FUSIONS, NORMALIZATIONS
from retrieval.hybrid import PRESETS
from retrieval.types import Scope

from . import view
from .charts import STAGE_LABELS, bm25_figure, dense_terms_figure
from .links import ALL_SCOPES, FIELDS, ignored_sentence, read_link, store_changed, write_link
from .state import CLASSIFIER_CHOICES, GENERATOR_CHOICES, RERANKER_CHOICES, PipelineConfig

SNIPPET_CHARS = 180
RERANKER_NOTES = {
    "embedding": "MiniLM bi-encoder stand-in: real but weak; a cross-encoder or Cohere reranks better.",
    "cohere": "Cohere rerank-v3.5, hosted (COHERE_API_KEY).",
    "cross-encoder": "A local sentence-transformers cross-encoder folder (none ships with this app).",
}
FUSION_LABELS = {"rrf": "RRF (ranks)", "convex": "convex (scores)"}
DROPPED_AT = {"dense": "search", "hydrate": "hydration", "rerank": "rerank", "truncate": "top-k cut"}


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


# ---------------------------------------------------------------- click to explain
def _pick(key: str, target_key: str) -> None:
    """Selection callback: the clicked row's (or point's) id becomes the explained id."""
    tid = view.picked_id(st.session_state.get(key), st.session_state.get(f"{key}_ids", []))
    if tid:
        st.session_state[target_key] = tid


def stage_column(stage: str, diag, whole: dict, query: str, rows: int, key: str, target_key: str,
                 label: str | None = None) -> None:
    """One of the five side-by-side columns as a selectable table; clicking a row explains it."""
    ids = list(diag.stage_ids.get(stage, []))
    st.markdown(f"**{label or STAGE_LABELS[stage]}** · {len(ids)}")
    if not ids:
        reason = {"reranked": "no reranker selected (or it failed)",
                  "merged": "fusion skipped (see the warning above)"}.get(stage, "no hits")
        st.caption(f"— {reason}")
        return
    data = view.column_rows(stage, diag, whole, query, rows)
    st.session_state[f"{key}_ids"] = [r["id"] for r in data]
    st.dataframe(data, hide_index=True, width="stretch", height=36 + 35 * len(data), key=key,
                 on_select=lambda: _pick(key, target_key), selection_mode="single-row",
                 column_config={"#": st.column_config.TextColumn(width=28), "by": st.column_config.TextColumn(width=52),
                                "id": st.column_config.TextColumn(width=118),
                                "score": st.column_config.TextColumn(width=56),
                                "text": st.column_config.TextColumn(width="large")})
    # For tests and screen readers: the ids in this column, in order.
    st.markdown(f"<div class='stage-ids' data-stage='{stage}' data-ids='{html.escape(','.join(r['id'] for r in data))}'"
                " style='display:none'></div>", unsafe_allow_html=True)
    split = [r["id"] for r in data if "✂" in r["by"]]
    if split:
        with st.expander(f"✂ whole text of {len(split)} split trace(s)"):
            for tid in split:
                st.markdown(f"**{tid}** — {view.split_mark(diag.splits[tid])}")
                st.caption(whole.get(tid, ""))


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

    acc = session_access()  # issue #17: the check itself is retrieval.access
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
    kw = {"bind": "query-params"} if bind else {}
    choice = st.selectbox(label, options, index=options.index(biggest), key=key, **kw)
    return None if choice == ALL_SCOPES else Scope.parse(choice)


def _range(name: str, integer: bool = False):
    f = FIELDS[name]
    return (int(f.lo), int(f.hi), int(f.step)) if integer else (float(f.lo), float(f.hi), float(f.step))


def config_panel(prefix: str, defaults: PipelineConfig | None = None, bind: bool = False,
                 compact: bool = False) -> PipelineConfig:
    """Every pipeline knob as a widget; keys are `prefix + field`. Ranges come from `ui.links.FIELDS`
    (the same rules a link is checked against)."""
    kw = {"bind": "query-params"} if bind else {}

    def k(name: str) -> str:
        return f"{prefix}{name}"

    d = defaults if defaults is not None else PipelineConfig()

    def follow_preset() -> None:  # switching preset loads its fusion defaults
        pd = PipelineConfig.for_preset(st.session_state[k("preset")])
        for name in ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight", "fusion", "normalization"):
            st.session_state[k(name)] = getattr(pd, name)

    preset = st.radio("Preset", PRESETS, index=PRESETS.index(d.preset), key=k("preset"), horizontal=True,
                      on_change=follow_preset,
                      help="agentos: the faithful AgentOS pipeline (sparse-only hits dropped, 0.7/0.3, k 60, RRF). "
                           "hybrid: sparse-only hits kept, rank completion, fused rerank base, 0.5/0.5, k 10. "
                           "Switching loads the preset's fusion defaults.", **kw)
    pdef = PipelineConfig.for_preset(preset) if preset != d.preset else d
    st.markdown("**Fusion** — moving these re-fuses cached lists (no new search)")
    if st.button(f"Reset fusion to the {preset} defaults", key=k("reset_fusion")):
        follow_preset()
        st.rerun()
    agentos = preset == "agentos"
    if agentos and st.session_state.get(k("fusion"), "rrf") != "rrf":
        st.session_state[k("fusion")] = "rrf"
    fusion = st.radio("Fusion", FUSIONS, index=FUSIONS.index(pdef.fusion), key=k("fusion"), horizontal=True,
                      format_func=FUSION_LABELS.get, disabled=agentos,
                      help="RRF adds weight / (k + rank) per list; convex adds weight × the list's normalised "
                           "score. The agentos preset is always RRF.", **kw)
    fusion = "rrf" if agentos else fusion
    norm = pdef.normalization
    if fusion == "convex":
        norm = st.selectbox("Normalisation", NORMALIZATIONS, index=NORMALIZATIONS.index(pdef.normalization),
                            key=k("normalization"), help="minmax: each list to [0, 1]; theoretical: divide by the "
                            "score's known maximum; zscore: distribution-based (DBSF).", **kw)
    dw = st.slider("Dense weight", *_range("dense_weight")[:2], pdef.dense_weight, _range("dense_weight")[2],
                   key=k("dense_weight"), **kw)
    sw = st.slider("Sparse weight", *_range("sparse_weight")[:2], pdef.sparse_weight, _range("sparse_weight")[2],
                   key=k("sparse_weight"), **kw)
    lo, hi, step = _range("rrf_k", integer=True)
    rrf_k = st.slider("RRF k", lo, hi, pdef.rrf_k, step, key=k("rrf_k"), disabled=fusion != "rrf",
                      help="Higher k flattens rank differences (RRF only).", **kw)
    c1, c2 = st.columns(2)
    top_k = c1.number_input("Top k", *_range("top_k", True)[:2], d.top_k, key=k("top_k"), **kw)
    over = c2.number_input("Over-fetch ×", *_range("over_fetch", True)[:2], d.over_fetch, key=k("over_fetch"),
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
    rw = st.slider("Rerank blend weight", *_range("rerank_weight")[:2], pdef.rerank_weight, _range("rerank_weight")[2],
                   key=k("rerank_weight"), disabled=reranker == "none", **kw)
    split_on = st.slider("Split-on-ambiguous threshold (0 = off)", *_range("split_threshold")[:2], d.split_threshold,
                         _range("split_threshold")[2], key=k("split_threshold"), disabled=reranker == "none",
                         help="The lowest-scoring fraction of the pool is split in half and re-scored; a half "
                              "replaces the text only when it scores higher than the whole.", **kw)
    st.markdown("**Query expansion**")
    hyde = st.toggle("HyDE (search a hypothetical memory note)", d.hyde, key=k("hyde"), **kw)
    mq = st.number_input("Multi-query variants (0 = off)", *_range("multi_query_n", True)[:2], d.multi_query_n,
                         key=k("multi_query_n"), **kw)
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
        val = st.slider("Valence", *_range("valence")[:2], d.valence, _range("valence")[2], key=k("valence"), **kw)
        aro = st.slider("Arousal", *_range("arousal")[:2], d.arousal, _range("arousal")[2], key=k("arousal"), **kw)
        dom = st.slider("Dominance", *_range("dominance")[:2], d.dominance, _range("dominance")[2], key=k("dominance"),
                        **kw)
    return PipelineConfig(
        preset=preset, dense_weight=float(dw), sparse_weight=float(sw), rrf_k=int(rrf_k), fusion=fusion,
        normalization=norm, over_fetch=int(over), top_k=int(top_k), hyde=bool(hyde), generator=gen,
        openai_base_url=base_url, openai_model=model, multi_query_n=int(mq), facts=bool(facts), classifier=clf,
        reranker=reranker, cross_encoder_path=ce_path, rerank_weight=float(rw), split_threshold=float(split_on),
        valence=float(val), arousal=float(aro), dominance=float(dom))


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


# ---------------------------------------------------------------- links
def seed_from_link(prefix: str, scopes: list[str], version: int, extra: dict[str, str],
                   allow_all: bool = True) -> None:
    """Before any widget is drawn: when the URL is not the link this page wrote last, set the widgets
    from it (valid values only) and remember what was ignored and whether the store changed.

    `extra` maps view fields to widget keys (`{"q": "i_q", "scope": "i_scope", "id": "i_typed"}`).
    Arriving without parameters (the sidebar link) restores this session's last view.
    """
    raw = {k: v for k, v in st.query_params.to_dict().items() if k.startswith(prefix)}
    last = st.session_state.get(f"{prefix}link")
    if last is not None and raw == last:
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
    if current != params:
        st.query_params.from_dict(params)
    st.session_state[f"{prefix}link"] = dict(params)


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
        st.caption(f"code `{d.code}`" + (f" · {d.detail}" if d.detail else ""))


def usable_config(cfg: PipelineConfig, get_reranker, get_generator) -> tuple[PipelineConfig, list[str]]:
    """`cfg` with any backend that cannot be built switched off, and a sentence for each.

    A misconfigured reranker (no key, no model folder) or text generator must not hide the lists the
    search can still give: build each first, under a labelled spinner, and fall back to none.
    """
    notes = []
    try:
        spec = reranker_spec(cfg)
        if spec:
            with st.spinner(f"Loading the {cfg.reranker} reranker…"):
                get_reranker(spec)
    except (ValueError, ImportError, OSError, RuntimeError) as exc:
        notes.append(f"The {cfg.reranker} reranker could not be loaded ({exc}). Showing the lists without "
                     "reranking; fix the reranker settings or choose 'none'.")
        cfg = replace(cfg, reranker="none")
    try:
        spec = generator_spec(cfg)
        if spec:
            with st.spinner(f"Loading the {cfg.generator} text generator…"):
                get_generator(spec)
    except (ValueError, ImportError, OSError, RuntimeError) as exc:
        what = " and ".join(x for x, on in (("HyDE", cfg.hyde), ("multi-query", cfg.multi_query_n)) if on)
        notes.append(f"The {cfg.generator} text generator could not be loaded ({exc}). Searched without {what}; "
                     "fix the generator settings or turn them off.")
        cfg = replace(cfg, hyde=False, multi_query_n=0)
    return cfg, notes


# ---------------------------------------------------------------- the explanation
def explanation_summary(ex, query: str, key: str) -> bool:
    """The plain-words part: the reason, the text, rank and score per stage. False when nothing more
    may be shown (no such trace, or not visible from this scope)."""
    if not ex.exists or not ex.visible:
        st.warning(ex.reason)
        return False
    if ex.dropped_at is None:
        st.success(ex.reason)
    else:
        st.warning(f"**Not in the final list** — it fell out at the {DROPPED_AT.get(ex.dropped_at, ex.dropped_at)} "
                   f"stage. {ex.reason}")
    if ex.content:
        st.markdown(f"<div style='font-size:0.92em'>{highlight(ex.content, query, 600)}</div>", unsafe_allow_html=True)
        st.caption(f"scope {ex.scope}" if ex.scope else "")
    sentence = view.split_sentence(ex.split)
    if sentence:
        st.markdown(sentence)
    st.markdown("**Rank and score per stage**")
    st.dataframe(view.stage_rows(ex), hide_index=True, width="stretch", key=f"{key}_stages",
                 column_config={"note": st.column_config.TextColumn(width="large")})
    return True


def explanation_details(ex, key: str) -> None:
    """The score trees, on demand: dense weight × value, BM25 per term, fusion, blend, split, fact."""
    c1, c2 = st.columns(2)
    with c1:
        if ex.dense_terms:
            total = sum(t["points"] for t in ex.dense_terms)
            with st.expander(f"Dense score {total:.4f} = Σ weight × value over {len(ex.dense_terms)} terms"):
                st.plotly_chart(dense_terms_figure(ex.dense_terms), key=f"{key}_dense",
                                config={"displayModeBar": False})
                st.dataframe(view.dense_rows(ex.dense_terms), hide_index=True, width="stretch")
        if ex.rrf:
            with st.expander(f"Fusion: {view.num(ex.rrf.get('score'), 5)} = the sum of each list's contribution"):
                st.caption(view.fusion_title(ex.rrf))
                st.dataframe(view.fusion_rows(ex.rrf), hide_index=True, width="stretch")
                if ex.rrf.get("imputed"):
                    st.caption(f"“completed”: the {ex.rrf['imputed']} search did not return this trace; the hybrid "
                               "preset gives it the rank its real score would have had (rank completion), so one "
                               "list missing it does not cap it.")
        sentence = view.blend_sentence(ex.blend)
        if sentence:
            with st.expander("Rerank blend", expanded=True):
                st.markdown(sentence)
        if ex.split:
            with st.expander("Split halves, both scores", expanded=bool(ex.split.get("replaced"))):
                st.dataframe(view.split_rows(ex.split), hide_index=True, width="stretch",
                             column_config={"content": st.column_config.TextColumn(width="large")})
        if ex.fact:
            f = ex.fact
            st.markdown(f"**Fact** `{f['subject']} {f['predicate']} {f['object']}` as of {f['timestamp'][:10]}, "
                        f"from trace(s) {', '.join(f['source_trace_ids']) or '—'}: “{f['source_span'] or '—'}”")
    with c2:
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
         ("pages/6_Snapshots.py", "Snapshots"))


def nav() -> None:
    """Sidebar navigation with readable labels (the built-in one would call Home "app")."""
    with st.sidebar:
        for path, label in PAGES:
            st.page_link(path, label=label)
        st.divider()
