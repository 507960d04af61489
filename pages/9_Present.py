"""Present: the Home examples as a guided story for people who never read code — one step per screen.

No knobs, no grading, no uploads, no settings: each step runs its example's query with the example's own
settings, shows the claim as a big callout (checked against this very result, ui/present.py), one sentence of
why, and the final list in large type with how each result was found. Ids only with "Show ids".
Open it with `?present=1` on Home, or from the sidebar; ← and → step back and forward.
"""
from __future__ import annotations

import html

import streamlit as st

from retrieval.ingest.demo import load_examples
from retrieval.types import Scope
from ui import present
from ui.access import page_guard
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.calibration import store_defaults
from ui.refuse import live_step
from ui.state import run_config
from ui.text import code, plain

STEP = "present_step"  # 1-based step number
RESULTS = "present_results"  # (step id, store version) -> ("ok", result, cfg) | ("skip", sentence, cfg)
RUN, ARMED = "present_run", "present_ahead_armed"  # a number per run of the whole page; the one look_ahead saw
CSS = """<style>
[data-testid=stSidebar], [data-testid=stSidebarCollapsedControl], [data-testid=stExpandSidebarButton]{display:none}
.block-container{padding-top:1.2rem; max-width:1500px}
[data-testid=stMarkdownContainer] p{font-size:1.3rem; line-height:1.45}
[data-testid=stCaptionContainer] p{font-size:1.05rem}
[data-testid=stAlertContainer] p{font-size:1.5rem; line-height:1.4; font-weight:600}
.pr-step{font-size:1.05rem; color:#555; letter-spacing:.04em; text-transform:uppercase; text-align:center}
.pr-query{font-size:1.7rem; font-weight:600; margin:.2rem 0 .6rem 0}
.pr-rank{font-size:2.1rem; font-weight:700; line-height:1; color:#31333f; text-align:right}
.pr-target .pr-rank{color:#0b7a3e}
</style>"""

st.set_page_config(page_title="Present · Hybrid retrieval inspector", page_icon=":material/slideshow:", layout="wide",
                   initial_sidebar_state="collapsed")
access = page_guard()  # sign-in and allowed scopes; nothing on this page writes
st.html(CSS)


def go(number: int) -> None:
    st.session_state[STEP] = number


def run_step(ws, step: present.Step):
    """("ok", result, cfg) or ("skip", a plain sentence, cfg); never an exception on screen."""
    if not access.sees(step.scope):
        return "skip", "This example is about someone whose notes you may not see, so it is skipped.", None
    try:
        cfg = present.step_config(step, [step.scope], store_defaults(ws))
    except ValueError:
        return "skip", "This example's settings do not fit this version of the app, so it is skipped.", None
    try:
        ensure_model()
        result, _ = run_config(ws, cfg, step.query, Scope.parse(step.scope), get_reranker, get_generator,
                               access=access)
    except Exception:  # a missing model or backend: one plain sentence, never a traceback
        need = "the small local language model" if cfg.hyde else "a model"
        return "skip", f"This step needs {need}, which is not available on this computer, so it is skipped.", cfg
    return "ok", result, cfg


def header(step: present.Step, show_ids: bool) -> None:
    """Back, where we are, next and "Show ids" on one line (always on screen), then the question in large type. The
    buttons' labels carry no arrow: Streamlit draws the shortcut's (← →) beside them."""
    back, where, nxt, ids = st.columns([1.1, 5, 1.1, 1.1], vertical_alignment="center")
    back.button("Back", key="present_back", on_click=go, args=(step.number - 1,), disabled=step.number == 1,
                shortcut="Left", width="stretch")
    where.html(f"<div class='pr-step'>Step {step.number} of {step.total}</div>")
    last = step.number == step.total
    nxt.button("Start again" if last else "Next", key="present_next", on_click=go,
               args=(1 if last else step.number + 1,), type="primary", shortcut="Right", width="stretch")
    with ids:
        st.toggle("Show ids", key="present_ids", help="Show the notes' ids under each result.")
    st.title(step.story.headline, anchor=False)
    if step.story.ask:
        st.markdown(plain(step.story.ask))
    st.html(f"<div class='pr-query'>“{html.escape(step.query)}”</div>")
    if show_ids:
        st.caption(f"Example {code(step.id)} · scope {code(step.scope)}")


def story(step: present.Step, outcome) -> None:
    """The claim as a big callout, what the lists show, and why — in plain words."""
    kind, value, cfg = outcome
    if kind == "skip":
        st.info(plain(value))
        return
    verdict = present.check(step, value)  # against this very result, the list shown beside it
    if not verdict.checked:
        st.info("What to look for: " + plain(step.story.claim), icon=":material/visibility:")
    elif verdict.holds:
        st.success(plain(step.story.claim), icon=":material/check_circle:")
    else:
        st.warning("Not this time: " + plain(step.story.claim), icon=":material/info:")
    st.markdown(("What happened: " if verdict.checked and not verdict.holds else "") + plain(verdict.evidence))
    st.markdown("**Why:** " + plain(step.story.why))
    st.caption("How this search works: " + plain("; ".join(present.setup_words(cfg))) + ".")
    d = value.diagnostics
    if cfg.hyde and d.hyde:
        st.markdown("**The model's guess, searched instead of the question:**")
        st.markdown(plain(d.hyde))
    elif cfg.hyde:
        st.caption("The small local language model is not available here, so the plain question was searched.")


def results(step: present.Step, outcome, show_ids: bool) -> None:
    """The final list: large numbered snippets, each with how it was found."""
    kind, value, _ = outcome
    if kind == "skip":
        return
    st.subheader("What the search returns", anchor=False)
    items = present.final_items(value, step.query, step.target)
    if not items:
        st.markdown("Nothing was found.")
    for item in items:
        with st.container(border=True):
            rank, body = st.columns([1, 11])
            rank.html(f"<div class='{'pr-target' if item.is_target else ''}'><div class='pr-rank'>{item.rank}</div>"
                      "</div>")
            body.markdown(plain(item.text))
            meta = f"found by: **{item.found_by}**"
            if item.split:
                meta += " · ✂ the best half of a longer note"
            if item.is_target:
                meta += " · ★ the one this step is about"
            body.caption(meta + (f" · {code(item.id)}" if show_ids else ""))


def live_toggle(step: present.Step, outcome) -> bool:
    """The optional live step, on the steps that have one: the audience drags the balance between keyword and meaning
    search and watches this step's query flip, re-fused in the browser at every step of the slider
    (ui/refuse/present.js); nothing is saved. True when it is on."""
    if step.id not in present.LIVE_STEPS or outcome[0] != "ok":
        return False
    return st.toggle("Try it yourself: slide the balance", key="present_live",
                     help="Drag between keyword search and meaning search and watch the list change.")


@st.fragment(run_every=1.0)
def look_ahead(ws, ahead: present.Step) -> None:
    """Search the next step, so "Next" shows it at once: in this fragment's own run, a second after the page's
    run ended (Streamlit removes what the previous step left on screen only when a run ends; a slow search ahead
    inside the page's run kept it there, faded). The call inside the page's run only arms it."""
    if st.session_state.get(ARMED) != st.session_state.get(RUN):
        st.session_state[ARMED] = st.session_state.get(RUN)
        return
    memo = st.session_state.setdefault(RESULTS, {})
    key = (ahead.id, ws.store.version())
    if key not in memo:
        memo[key] = run_step(ws, ahead)


ws = workspace()
steps = present.steps(load_examples())
if not steps or ws.store.count() == 0:
    st.title("Nothing to present yet", anchor=False)
    st.markdown("The demo examples need the demo notes: load them on the Corpus page first.")
    st.page_link("pages/1_Corpus.py", label="Go to Corpus", icon=":material/library_books:")
    st.stop()
number = min(max(int(st.session_state.get(STEP, 1)), 1), len(steps))
step = steps[number - 1]
show_ids = bool(st.session_state.get("present_ids", False))
# The header and the step's claim and list each live in one placeholder, both made (so both cleared) before this
# run writes the new question: the previous step's claim and list are never on screen under it, neither while a
# slow step searches (HyDE) nor for the frames a remembered step takes. An element (not a container) replaces the
# old region whole; a container at the same place would keep the old step's elements, faded, until the run ends.
head, body = st.empty(), st.empty()
st.page_link("app.py", label="Leave presenter mode", icon=":material/home:")
with head.container():
    header(step, show_ids)
version = ws.store.version()  # a result searched before the store changed is searched again: the claim follows
memo = st.session_state[RESULTS] = {k: v for k, v in st.session_state.get(RESULTS, {}).items() if k[1] == version}
if (step.id, version) not in memo:
    body.info("Searching for this step's answer…", icon=":material/hourglass_top:")
    memo[(step.id, version)] = run_step(ws, step)
outcome = memo[(step.id, version)]
with body.container():
    left, right = st.columns([5, 7], gap="large")
    with left:
        story(step, outcome)
        trying = live_toggle(step, outcome)
    with right:
        if trying:  # the list itself, re-fused in the browser as the audience moves the balance
            st.subheader("What the search returns", anchor=False)
            live_step(f"present_live_{step.id}", present.live_payload(outcome[1], step.query, step.target))
        else:
            results(step, outcome, show_ids)
st.session_state[RUN] = st.session_state.get(RUN, 0) + 1
ahead = steps[number % len(steps)]
if (ahead.id, version) not in memo:
    look_ahead(ws, ahead)
