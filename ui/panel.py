"""The settings panel: every pipeline knob as a widget, config export and import, and falling back
from a backend that cannot be built. Ranges come from `ui.links.FIELDS`, which reads
`retrieval.pipeline.settings.KNOBS` (the same rules a link and a config file are checked against); the fusion
controls (the weights and each registered strategy's parameters) are generated from their declarations in
`retrieval.fusion` (`Param`: label, kind, range, step, choices, help), so a new strategy's knob needs no code here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from retrieval.fusion import FUSIONS, REGISTRY, STRATEGIES, WEIGHTS, Param, get_strategy
from retrieval.models.credentials import scrub_url
from retrieval.pipeline.factory import generator_spec, reranker_spec
from retrieval.pipeline.presets import PRESETS, get_preset
from retrieval.pipeline.settings import SETTINGS_KNOBS, SWITCHES, RetrievalSettings

from .glossary import MOOD, caption_text, explained
from .text import plain
from .links import FIELDS
from .state import CLASSIFIER_CHOICES, FUSION_FIELDS, GENERATOR_CHOICES, RERANKER_CHOICES, PipelineConfig

RERANKER_NOTES = {
    "embedding": "MiniLM bi-encoder stand-in: real but weak; a cross-encoder or Cohere reranks better.",
    "cohere": "Cohere rerank-v3.5, hosted (COHERE_API_KEY).",
    "cross-encoder": "A local sentence-transformers cross-encoder folder (none ships with this app).",
}
FUSION_LABELS = {s.name: s.title for s in STRATEGIES}  # each registered strategy's own title
ADAPTIVE_HELP = (SWITCHES["adaptive"].capitalize() + ". Off by default: on the development sets it did not beat the "
                 "fixed weights (docs/BENCHMARKS.md). A store's strengths learned from a graded case "
                 "(`python -m retrieval adapt --case`) replace the shipped rules'. Switching it re-fuses cached lists "
                 "(no new search).")


# Every fusion parameter once, in registry order: the controls the fusion section draws.
FUSION_CONTROLS: tuple[Param, ...] = tuple({p.name: p for s in STRATEGIES for p in s.params}.values())


def _range(name: str, integer: bool = False) -> tuple[Any, Any, Any]:
    f = FIELDS[name]
    return (int(f.lo), int(f.hi), int(f.step)) if integer else (float(f.lo), float(f.hi), float(f.step))


def param_control(p: Param, key: str, value: Any, disabled: bool, kw: dict[str, Any]) -> Any:
    """The widget a declared fusion parameter gets: a choice a select box, a number a slider over its link field's
    range (`FIELDS`, from the declaration); the value as the config holds it."""
    if p.kind == "choice":
        return st.selectbox(p.title, p.choices, index=p.choices.index(value), key=key, help=explained(p.help) or None,
                            disabled=disabled, **kw)
    integer = FIELDS[p.name].kind == "int"
    lo, hi, step = _range(p.name, integer)
    cast = int if integer else float
    return _slid(p.name, st.slider(p.title, lo, hi, cast(value), step, key=key, disabled=disabled,
                                   help=explained(p.help) or None, **kw))


def _slid(name: str, value: Any) -> Any:
    """A slider's value as the settings value holds it: an integer field's as int, a number without the float noise
    a step can add (`Field.clean`), so the value, and the link written from it, hold 0.35."""
    f = FIELDS[name]
    return int(value) if f.kind == "int" else f.clean(float(value))


def preset_help() -> str:
    """The preset radio's help, from the presets themselves (never a stale copy of their numbers)."""
    lines = []
    for name in PRESETS:
        p = get_preset(name)
        fusion = get_strategy(p.fusion).from_knobs(p).setting
        sparse_only = "sparse-only hits kept" if p.hydrate_sparse_only else "sparse-only hits dropped"
        lines.append(f"{name}: {sparse_only}, dense {p.dense_weight:g} / sparse {p.sparse_weight:g}, {fusion}.")
    return " ".join(lines) + " Switching loads the preset's fusion defaults."


def config_panel(prefix: str, defaults: PipelineConfig | None = None, bind: bool = False,
                 compact: bool = False) -> PipelineConfig:
    """Every pipeline knob as a widget; keys are `prefix + field`. A config imported on the last run
    (`config_io`) is applied here, before any widget of the panel exists."""
    pending = st.session_state.pop(f"{prefix}pending_config", None)
    if pending is not None:
        apply_config(prefix, pending)
    kw: dict[str, Any] = {"bind": "query-params"} if bind else {}
    d = defaults if defaults is not None else PipelineConfig()
    values = _fusion_section(prefix, d, kw)
    c1, c2 = st.columns(2)
    values["recall_top_k"] = int(c1.number_input("Top k", *_range("recall_top_k", True)[:2], d.settings.recall_top_k,
                                                 key=f"{prefix}recall_top_k", **kw))
    values["over_fetch_multiplier"] = int(c2.number_input("Over-fetch ×", *_range("over_fetch_multiplier", True)[:2],
                                                          d.settings.over_fetch_multiplier,
                                                          key=f"{prefix}over_fetch_multiplier",
                                               help="Each side fetches top-k × this many candidates.", **kw))
    values.update(_rerank_section(prefix, d, values["rerank_weight"], kw))
    values.update(_expansion_section(prefix, d, kw))
    values.update(_facts_and_mood(prefix, d, compact, kw))
    knobs = {name: values.pop(name) for name in list(values) if name in SETTINGS_KNOBS}
    try:  # the sliders' values as one settings value, handed on unchanged (to the retriever and to `reweight`)
        settings = RetrievalSettings.from_knobs({**knobs, "split_threshold": knobs["split_threshold"] or None})
    except ValueError as exc:  # e.g. both weights at 0: say so where the sliders are, search nothing
        st.error(str(exc))
        st.stop()
    return PipelineConfig(settings=settings, **values)


def shared_deployment() -> bool:
    """Demo mode or sign-in on: visitors choose among the operator's backends, never an endpoint."""
    from .access import access_config

    cfg = access_config()
    return cfg.read_only or cfg.auth != "none"


def operator_openai_url() -> str:
    """The OpenAI-compatible endpoint the operator configured (OPENAI_BASE_URL, or the provider's)."""
    from retrieval.models.credentials import OPENAI, operator_base_url

    return operator_base_url(OPENAI)


def openai_server(key: str, default: str, **kw: Any) -> str:
    """Where an OpenAI-compatible call from the app server goes — the one place a page asks (the sidebar's query
    generator, Snapshots' machine grader). Shared (demo mode or sign-in on): only the endpoint the operator
    configured, shown, never typed; a visitor never chooses where a request from the server goes. Local use: a
    box, never bound to the page URL (a link must not choose the server a query, and a key, go to)."""
    if shared_deployment():
        url = operator_openai_url()
        st.caption(f"Server: {plain(scrub_url(url))} (configured by the operator: OPENAI_BASE_URL)")
        return url
    return st.text_input("Server URL", default, key=key,
                         help="Not read from the page URL. The operator's OPENAI_API_KEY is sent only to the "
                              "OPENAI_BASE_URL the operator configured; any other server is called without a key "
                              "(right for a local Ollama).", **kw)


def fusion_help() -> str:
    """The Fusion radio's tooltip: each registered strategy in words first, then its formula."""
    return "\n\n".join([*(f"{s.title}: {s.in_words}. Score = {s.formula}." for s in REGISTRY.values()),
                        ", ".join(f"{p.attr} the {p.title.lower()}" for p in WEIGHTS) + " (the sliders below)."])


def _fusion_section(prefix: str, d: PipelineConfig, kw: dict[str, Any]) -> dict[str, Any]:
    def k(name: str) -> str:
        return f"{prefix}{name}"

    def follow_preset() -> None:  # switching preset loads its fusion defaults
        pd = RetrievalSettings(preset=st.session_state[k("preset")]).controls()
        for name in FUSION_FIELDS:  # adaptive too: a preset or a reset turns it off
            st.session_state[k(name)] = pd[name]

    now = d.settings.controls()
    preset = st.radio("Preset", PRESETS, index=PRESETS.index(now["preset"]), key=k("preset"), horizontal=True,
                      on_change=follow_preset, help=explained(preset_help()), **kw)
    pdef = RetrievalSettings(preset=preset).controls() if preset != now["preset"] else now
    st.markdown("**Fusion** — moving these re-fuses cached lists (no new search)")
    if st.button(f"Reset fusion to the {preset} defaults", key=k("reset_fusion")):
        follow_preset()
        st.rerun()
    fusions = get_preset(preset).fusions
    if st.session_state.get(k("fusion"), fusions[0]) not in fusions:
        st.session_state[k("fusion")] = fusions[0]
    fusion = st.radio("Fusion", FUSIONS, index=FUSIONS.index(pdef["fusion"]), key=k("fusion"), horizontal=True,
                      format_func=FUSION_LABELS.get, disabled=len(fusions) == 1,
                      help=explained(fusion_help() + ("" if len(fusions) > 1 else
                                                      f"\n\nThe {preset} preset is always {fusions[0]}.")),
                      **kw)
    fusion = fusion if fusion in fusions else fusions[0]
    own = {p.name for p in get_strategy(fusion).params}  # the selected strategy's own parameters
    values: dict[str, Any] = {"preset": preset, "fusion": fusion, "rerank_weight": pdef["rerank_weight"]}
    # Generated from the declarations: the selected strategy's choices, the weights, then every strategy's numbers
    # (another strategy's shown greyed, so switching back finds them where they were).
    choices = [p for p in FUSION_CONTROLS if p.kind == "choice"]
    numbers = [p for p in FUSION_CONTROLS if p.kind != "choice"]
    for p in (*choices, *WEIGHTS, *numbers):
        if p.kind == "choice" and p.name not in own:
            values[p.name] = pdef[p.name]
            continue
        values[p.name] = param_control(p, k(p.name), pdef[p.name], p not in WEIGHTS and p.name not in own,
                                       kw)
    values["adaptive"] = bool(st.toggle("Adaptive weights (per query)", now["adaptive"], key=k("adaptive"),
                                        help=ADAPTIVE_HELP, **kw))
    return values


def _rerank_section(prefix: str, d: PipelineConfig, rerank_weight: float, kw: dict[str, Any]) -> dict[str, Any]:
    st.markdown("**Rerank**")
    # Plain option values (no format_func): they are what the URL carries.
    reranker = st.selectbox("Reranker", RERANKER_CHOICES, index=RERANKER_CHOICES.index(d.reranker),
                            key=f"{prefix}reranker",
                            help="embedding: the bundled MiniLM as a bi-encoder stand-in (offline, weak); cohere: "
                                 "rerank-v3.5 (needs COHERE_API_KEY); cross-encoder: a local model folder", **kw)
    if reranker != "none":
        st.caption(RERANKER_NOTES[reranker])
    ce_path = d.cross_encoder_path
    if reranker == "cross-encoder":
        ce_path = st.text_input("Cross-encoder folder", d.cross_encoder_path, key=f"{prefix}cross_encoder_path", **kw)
    rw = st.slider("Rerank blend weight", *_range("rerank_weight")[:2], rerank_weight, _range("rerank_weight")[2],
                   key=f"{prefix}rerank_weight", disabled=reranker == "none", **kw)
    split_on = st.slider("Split-on-ambiguous threshold (0 = off)", *_range("split_threshold")[:2],
                         d.settings.split_threshold or 0.0,
                         _range("split_threshold")[2], key=f"{prefix}split_threshold", disabled=reranker == "none",
                         help="The lowest-scoring fraction of the pool is split in half and re-scored; a half "
                              "replaces the text only when it scores higher than the whole.", **kw)
    return {"reranker": reranker, "cross_encoder_path": ce_path, "rerank_weight": _slid("rerank_weight", rw),
            "split_threshold": _slid("split_threshold", split_on)}


def _expansion_section(prefix: str, d: PipelineConfig, kw: dict[str, Any]) -> dict[str, Any]:
    st.markdown("**Query expansion**")
    hyde = st.toggle("HyDE (search a hypothetical memory note)", d.hyde, key=f"{prefix}hyde", **kw)
    mq = st.number_input("Multi-query variants (0 = off)", *_range("multi_query_n", True)[:2], d.multi_query_n,
                         key=f"{prefix}multi_query_n", **kw)
    gen, base_url, model = d.generator, d.openai_base_url, d.openai_model
    if hyde or mq:
        gen = st.selectbox("Text generator", GENERATOR_CHOICES, index=GENERATOR_CHOICES.index(d.generator),
                           key=f"{prefix}generator", help="gemma: local Gemma 3 270M, offline; cohere: Cohere chat "
                           "(needs COHERE_API_KEY); openai: any OpenAI-compatible server (Ollama, vLLM, llama.cpp)",
                           **kw)
        if gen == "openai":
            base_url = openai_server(f"{prefix}openai_base_url", d.openai_base_url, **kw)
            model = st.text_input("Model", d.openai_model, key=f"{prefix}openai_model", **kw)
    return {"hyde": bool(hyde), "multi_query_n": int(mq), "generator": gen, "openai_base_url": base_url,
            "openai_model": model}


def _facts_and_mood(prefix: str, d: PipelineConfig, compact: bool, kw: dict[str, Any]) -> dict[str, Any]:
    st.markdown("**Fact graph**")
    facts = st.toggle("Inject facts", d.facts, key=f"{prefix}facts", **kw)
    clf = st.selectbox("Query classifier", CLASSIFIER_CHOICES, index=CLASSIFIER_CHOICES.index(d.classifier),
                       key=f"{prefix}classifier", disabled=not facts, **kw)
    mood = {name: getattr(d, name) for name in MOOD}  # the glossary's PAD entry says their ranges
    if not compact:
        st.markdown("**Mood** (PAD) — emotional traces score higher when valences agree")
        st.caption(caption_text("PAD"))
        for name in mood:
            lo, hi, step = _range(name)
            mood[name] = _slid(name, st.slider(name.capitalize(), lo, hi, getattr(d, name), step,
                                               key=f"{prefix}{name}", **kw))
    return {"facts": bool(facts), "classifier": clf, **mood}


def apply_config(prefix: str, cfg: PipelineConfig) -> None:
    """Set the panel's widget state from a config (before the widgets are drawn)."""
    for name, value in cfg.as_fields().items():
        st.session_state[f"{prefix}{name}"] = value


def config_changes(old: PipelineConfig, new: PipelineConfig) -> list[str]:
    """`name: old → new` for every field that differs (what an import changed)."""
    a, b = old.as_fields(), new.as_fields()
    return [f"{name}: {a[name]!r} → {b[name]!r}" for name in b if a[name] != b[name]]


def config_io(prefix: str, cfg: PipelineConfig) -> None:
    """Export the current config as JSON; import one. An import is applied at the start of the next
    run (`config_panel`): the panel's widgets already exist on this one, and Streamlit refuses to
    change a drawn widget's state."""
    st.download_button("Export config (JSON)", cfg.to_json(), file_name="retrieval-config.json",
                       mime="application/json", key=f"{prefix}export")
    note = st.session_state.pop(f"{prefix}import_note", None)
    if note:
        st.success(note)
    up = st.file_uploader("Import config", type=["json"], key=f"{prefix}import")
    if up is None or st.session_state.get(f"{prefix}imported") == up.file_id:
        return
    try:
        new = PipelineConfig.from_json(up.getvalue())
    except ValueError as exc:
        st.error(f"Could not import {up.name}: {exc}")
        return
    st.session_state[f"{prefix}imported"] = up.file_id
    changed = config_changes(cfg, new)
    st.session_state[f"{prefix}import_note"] = (f"Imported {up.name}: " + "; ".join(changed) if changed
                                                else f"Imported {up.name}: it matches the current settings.")
    st.session_state[f"{prefix}pending_config"] = new
    st.rerun()


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
