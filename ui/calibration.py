"""The store's calibration in the app: its defaults for the settings panel, a one-line caption (Home, Inspect),
and Tune's "Calibrate this store" section (progress, the result with its interval, record and undo)."""
from __future__ import annotations

import streamlit as st

from retrieval.access import may_write
from retrieval.eval.calibrate import DEFAULT_SAMPLE, calibrate
from retrieval.eval.clock import END_OFFSET
from retrieval.fusion import FusionStrategy
from retrieval.pipeline.settings import FUSION_PARAMS, RetrievalSettings
from retrieval.store.calibration import read_calibration, read_previous, undo_calibration, write_calibration

from .links import relinked
from .glossary import caption_text
from .state import PipelineConfig
from .text import plain

P = "cal_"
PAGES = ("t_", "i_")  # Tune's and Inspect's settings panels


def set_sliders(fusion: FusionStrategy, preset: str | None = None) -> None:
    """Set Tune's and Inspect's fusion widgets to the strategy `fusion` (with `preset`, when given: every other fusion
    knob then reads the preset's, as a preset switch does; else a knob `fusion` does not use is left alone), and
    Inspect's remembered view to the same value; call from a callback, before the widgets are drawn."""
    start = RetrievalSettings(preset=preset).fusion_defaults() if preset is not None else {}
    best: dict = {**{k: v for k, v in start.items() if k in FUSION_PARAMS}, **fusion.knobs()}
    if "rrf_k" in best:
        best["rrf_k"] = int(best["rrf_k"])  # RRF k's slider moves in whole numbers
    if preset is not None:
        best = {"preset": preset, **best}
    for prefix in PAGES:
        for name, value in best.items():
            st.session_state[f"{prefix}{name}"] = value
    last = st.session_state.get("i_link")
    if last is not None:  # Inspect restores its last view on arrival: its settings field gets this fusion
        st.session_state["i_link"] = relinked(last, "i_", fusion, preset)


def current(ws):
    """The store's calibration record, or None (none, or unreadable: the preset's defaults apply)."""
    try:
        return read_calibration(ws.store)
    except Exception:  # an unreadable table: pages render with the preset's defaults
        return None


def store_defaults(ws) -> PipelineConfig:
    """The settings a page starts from: the `hybrid` preset with the store's calibrated fusion knobs, if any."""
    rec = current(ws)
    if rec is None:
        return PipelineConfig()
    return PipelineConfig(settings=RetrievalSettings(preset="hybrid", fusion=rec.fusion))  # the recorded strategy


def calibration_line(ws, who: bool = True) -> str:
    """"calibrated: <settings> (date)" or "not calibrated: …" — plain text, safe for Markdown. `who=False` leaves
    out who ran it (a visitor limited to some scopes is not told about the store's other users)."""
    rec = current(ws)
    if rec is None:
        return "not calibrated: the hybrid preset's fixed defaults (Tune → Calibrate this store)"
    by = f" · by {rec.by}" if who else ""
    return plain(f"calibrated: {rec.describe()}{by} · held-out gain {rec.interval.get('delta', 0):+.3f}, "
                 f"95 % interval [{rec.interval.get('lo', 0):+.3f}, {rec.interval.get('hi', 0):+.3f}]")


def caption(ws, always: bool = True) -> None:
    """The one-line hook Home and Inspect call (`always=False`: only when the store is calibrated)."""
    from .access import session_access

    if always or current(ws) is not None:
        st.caption(calibration_line(ws, who=not session_access().limited))


def _may_record(ws, access) -> str | None:
    """Why this visitor may not record a calibration (None: they may)."""
    if getattr(ws, "demo_mode", False) or getattr(access, "read_only", False):
        return "The app is read-only (demo mode): calibrating can be tried, not recorded."
    if ws.store.read_only:
        return "This table is inspected in place (read-only): the result cannot be recorded."
    if not may_write(access) or access.limited:
        return "Recording changes the defaults of every scope: only a writer who sees every scope may."
    return None


def _run(ws, sample: int, seed: int) -> None:
    from .cache import ensure_model

    ensure_model()
    bar = st.progress(0.0, text="Calibrating…")
    try:
        st.session_state[f"{P}result"] = calibrate(ws.store, ws.bm25, sample=sample, seed=seed,
                                                   progress=lambda f, t: bar.progress(min(f, 1.0), text=t))
    except ValueError as exc:
        st.error(plain(exc))
    bar.empty()


def _result(ws, res, refusal: str | None, who: str) -> None:
    iv = res.interval
    st.dataframe([{"setting": "default (hybrid preset)", "label": res.default.label,
                   "held-out": f"{res.lab.baseline.held_out:.4f}", "Δ vs default": "—", "95 % interval": "—"},
                  {"setting": "best on the tune half", "label": res.winner.label,
                   "held-out": f"{res.lab.best.held_out:.4f}", "Δ vs default": f"{iv.delta:+.4f}",
                   "95 % interval": iv.bounds()}], hide_index=True, width="stretch")
    (st.success if res.adopt else st.info)(plain(res.verdict))
    st.caption(f"{res.queries} pseudo-queries from {res.traces} traces in {res.scopes} scope(s), "
               f"{len(res.lab.scores)} candidates, clock end, {res.seconds:.1f} s.")
    if res.adopt:
        st.button(f"Record {res.winner.label} as this store's default", key=f"{P}record", type="primary",
                  disabled=refusal is not None, help=refusal or "Also sets the fusion sliders here and on Inspect.",
                  on_click=_record, args=(ws, res, who))


def _record(ws, res, who: str) -> None:
    rec = res.record(by=who)
    write_calibration(ws.store, rec)
    set_sliders(rec.fusion, preset="hybrid")
    st.session_state.pop(f"{P}result", None)
    st.session_state[f"{P}note"] = f"Recorded: this store's hybrid defaults are now {rec.describe()}."


def _undo(ws) -> None:
    now = undo_calibration(ws.store)
    set_sliders(now.fusion if now else RetrievalSettings(preset="hybrid").strategy, preset="hybrid")
    st.session_state[f"{P}note"] = ("Undone: the store's defaults are now " +
                                    (f"the calibration {now.describe()}." if now else "the hybrid preset's."))


def calibrate_section(ws, access) -> None:
    """Tune's "Calibrate this store": no labels needed."""
    st.subheader("Calibrate this store (no labels needed)")
    st.caption("Pseudo-queries cropped from this store's own traces (each trace is the answer to its phrase) "
               "run through every fusion candidate, with recency scored as if asked "
               f"{END_OFFSET.days} day{'s' * (END_OFFSET.days != 1)} after the newest trace of their scope (as an "
               "agent asks its memory). The best on one half replaces the fixed "
               "default only if, on the other half, its paired bootstrap 95 % interval lies above zero. Phrase "
               "lookups favour BM25: on SciFact a calibration chose dense 0.2 and lost 0.03 nDCG@10 on real queries "
               "(docs/BENCHMARKS.md) — when you have labelled queries, trust the search below.")
    st.caption(caption_text("nDCG@10"))  # its own line: appended to the paragraph above it read as a run-on
    caption(ws)
    refusal = _may_record(ws, access)
    rec = current(ws)
    c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    sample = int(c1.number_input("Pseudo-queries", 10, 2000, DEFAULT_SAMPLE, 50, key=f"{P}sample"))
    seed = int(c2.number_input("Seed", 0, 10_000, 0, key=f"{P}seed"))
    limited = ("Calibration samples every scope of the store: only a visitor who sees every scope may run it."
               if access.limited else None)
    if c3.button("Calibrate this store", key=f"{P}run", type="primary", disabled=limited is not None, help=limited):
        _run(ws, sample, seed)
    if rec is not None:
        prev = read_previous(ws.store)
        undo_to = f"back to {prev.describe()}" if prev else "back to the hybrid preset's fixed defaults"
        st.button(f"Undo calibration ({undo_to})", key=f"{P}undo", disabled=refusal is not None, help=refusal,
                  on_click=_undo, args=(ws,))
    note = st.session_state.pop(f"{P}note", None)
    if note:
        st.success(plain(note))
    res = st.session_state.get(f"{P}result")
    if res is not None:
        _result(ws, res, refusal, access.user or "app")
    if refusal:
        st.caption(refusal)
