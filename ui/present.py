"""Presenter mode's content: the Home examples as a guided story in plain words, and each step's claim
checked against a real search result.

Pure Python (no Streamlit): `steps` turns the examples into numbered steps, `step_config` reads an example's
link the way Inspect reads it, `final_items` is the final list in plain words ("found by: keyword search"),
and `check` says whether the step's claim holds in *this* result (the target's rank in the final list, in the
meaning search and in the keyword search), so the screen never claims what the lists do not show.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.pipeline.config import PipelineConfig

from .links import read_link
from .view import half_snippet, origin, snippet

TOP = 3  # the claim is about the first three results
SHOWN = 5  # results listed per step
# How a result was found, in words for people who never read code (ui/stages.py ORIGIN_WORDS is the jargon).
FOUND_BY = {"dense": "meaning", "sparse": "keyword search", "both": "both", "fact": "fact graph"}
# Jargon the rest of the app uses, and what presenter mode says instead.
PLAIN_WORDS = {
    "theoretical normalisation": "scores put on the same 0–1 scale",
    "paired t-test (scipy.stats.ttest_rel)": "a check that the difference is not luck",
    "exact (flat) vector search": "a search that compares the question with every note",
    "BM25": "keyword search",
    "dense": "meaning search",
    "reranker": "second look",
    "HyDE": "guess-first search",
}


@dataclass(frozen=True)
class Story:
    """One example in plain words: a headline, what we ask, the claim, and one sentence of why. `top` is the rank
    the claim's words promise for the target ("comes out on top": 1, "into the top three": 3), checked as said;
    None for a claim `check` reads otherwise (facts, the split) or cannot check (an example without a story)."""

    headline: str
    ask: str
    claim: str
    why: str
    top: int | None = None


STORIES: dict[str, Story] = {
    "identifier": Story(
        "Exact codes need keyword search",
        "Priya asks about a ticket by its code.",
        "Keyword search finds the note about ticket FX-209847 that the meaning search misses, and it comes out "
        "on top.",
        "Searching by meaning treats a code like FX-209847 as noise; keyword search matches it letter for letter, "
        "and combining both keeps the best of each.", top=1),
    "fact": Story(
        "Some answers are facts, not notes",
        "Maya asks where she lives now.",
        "The first answer is a fact: she lives in Berlin, taken from the note where she said she moved.",
        "The app keeps a small graph of facts it read in the notes (who lives where, who works where) and "
        "puts the latest one first, so the answer is not buried among similar notes."),
    "temporal": Story(
        "A question about time gets the history",
        "Maya asks where she lived first.",
        "Every place she lived is listed, oldest first: Lisbon, Porto, Berlin.",
        "A search by meaning cannot tell old from new; the fact graph remembers when each fact was said, so "
        "it can put them in order."),
    "split": Story(
        "One buried sentence can still be found",
        "Maya asks who has been complaining about the driver app.",
        "A long weekly note hides the answer in one sentence; splitting the note lets that half count on its "
        "own, and the note moves up.",
        "A long note about many things looks only a little like the question; its second half, about the "
        "complaint, looks a lot like it, so the app scores the halves separately and keeps the better one."),
    "hyde": Story(
        "Guess the answer first, then search",
        "Maya asks what the technician did to her washing machine.",
        "A small local language model writes the note it expects to find, and searching with that guess brings "
        "the repair note into the top three.",
        "A question and its answer use different words; a made-up answer uses words closer to the real note.", top=3),
    "mood": Story(
        "Mood changes what comes to mind",
        "Maya asks how life in Berlin has been, while in a happy mood.",
        "The warm memory — bouldering with new friends — comes up in the top three.",
        "Like people, the app recalls memories that match the current mood a little more easily.", top=3),
}


@dataclass(frozen=True)
class Step:
    number: int  # 1-based
    total: int
    id: str
    title: str
    query: str
    scope: str
    target: str | None
    params: Mapping[str, str]
    story: Story


def steps(examples: Sequence[Mapping[str, Any]]) -> list[Step]:
    """One step per example, in the Home page's order; an example without a story gets one from its own text."""
    out = []
    for i, ex in enumerate(examples, 1):
        story = STORIES.get(ex["id"]) or Story(ex["title"], "", ex.get("look_for", ""), ex.get("demonstrates", ""))
        out.append(Step(i, len(examples), ex["id"], ex["title"], ex["query"], ex["scope"], ex.get("target"),
                        dict(ex.get("params", {})), story))
    return out


def step_config(step: Step, scopes: Sequence[str], defaults: PipelineConfig | None = None) -> PipelineConfig:
    """The example's settings, read from its link as Inspect reads it, on top of `defaults` (the page's start)."""
    link = read_link(step.params, "i_", scopes)
    values = dict(link.config)
    base = defaults or PipelineConfig()
    if "preset" in values:
        base = PipelineConfig.for_preset(values.pop("preset"))
    return base.with_(**values)


def setup_words(cfg: PipelineConfig) -> list[str]:
    """What this step's search does, in plain words (no knob names)."""
    words = {"hybrid": "searches by meaning and by keywords, then combines the two",
             "agentos": "searches by meaning and keywords, keeping only what the meaning search found"}
    out = [words.get(cfg.settings.preset_name, "searches by meaning and by keywords")]
    if cfg.facts:
        out.append("adds answers from the fact graph")
    if cfg.reranker != "none":
        out.append("takes a second look at the best candidates")
    if cfg.settings.split_threshold:
        out.append("splits long notes in two and keeps the half that fits best")
    if cfg.hyde:
        out.append("lets a small local language model guess the answer first")
    if cfg.valence or cfg.arousal or cfg.dominance:
        out.append(f"searches in a {'happy' if cfg.valence > 0 else 'sad' if cfg.valence < 0 else 'calm'} mood")
    return out


def plainer(text: str) -> str:
    """`text` with the app's jargon replaced by presenter mode's words."""
    for term, words in PLAIN_WORDS.items():
        text = re.sub(rf"(?<!\w){re.escape(term)}(?!\w)", words, text)
    return text


def fact_words(text: str) -> str:
    """A fact trace's text in words: "user livesIn Berlin" → "lives in Berlin"."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    words = text.split()
    if words and words[0] == "user":
        words = words[1:]
    out = " ".join(w.lower() if i < 2 else w for i, w in enumerate(words))
    return out[:1].upper() + out[1:]


@dataclass(frozen=True)
class Item:
    rank: int
    id: str
    text: str  # a plain-text snippet (not escaped: render it with ui.text.plain)
    found_by: str  # a FOUND_BY word
    split: bool  # the text is the better half of a longer note
    is_target: bool


def final_items(result, query: str, target: str | None = None, limit: int = SHOWN) -> list[Item]:
    """The first `limit` results of the final list, each with its snippet and how it was found."""
    d = result.diagnostics
    out = []
    for i, t in enumerate(result.traces[:limit], 1):
        kind = origin(t.id, d.stage_ids, d.fact_ids)
        text = fact_words(t.content) if kind == "fact" else snippet(t.content, query, 180)
        split = t.id in d.splits and bool(d.splits[t.id].replaced)
        text = half_snippet(text, d.splits[t.id].chosen) if split else text  # a half starts or ends mid-note
        out.append(Item(i, t.id, text, FOUND_BY[kind], split, t.id == target or _from_target(d, t.id, target)))
    return out


def _from_target(d, fact_id: str, target: str | None) -> bool:
    """Whether `fact_id` is a fact trace read from the note `target`."""
    return bool(target) and any(fid == fact_id and target in f.source_trace_ids
                                for fid, f in zip(d.fact_ids, d.facts))


def rank_in(ids: Sequence[str], tid: str | None) -> int | None:
    """1-based rank of `tid` in `ids`, None when absent."""
    return ids.index(tid) + 1 if tid and tid in ids else None


@dataclass(frozen=True)
class Verdict:
    holds: bool
    evidence: str  # one sentence of what the lists show
    final_rank: int | None = None
    dense_rank: int | None = None
    sparse_rank: int | None = None
    checked: bool = True  # False: a claim in words `check` cannot test (an example without a story): no ✓, no ✗


def _where(rank: int | None, what: str, depth: int) -> str:
    return f"{what} ranks it #{rank}" if rank else f"{what} does not have it in its top {depth}"


def check(step: Step, result) -> Verdict:
    """Whether the step's claim holds in `result`, with the ranks that say so."""
    d = result.diagnostics
    if step.id == "fact":
        return _check_fact(step, d)
    if step.id == "temporal":
        return _check_history(d)
    ids = d.stage_ids
    final, dense, sparse = (rank_in(list(ids[s]), step.target) for s in ("final", "dense", "sparse"))
    parts = [f"In the final list it is #{final}" if final else "It is not in the final list",
             _where(sparse, "keyword search", len(ids["sparse"])), _where(dense, "meaning search", len(ids["dense"]))]
    if step.id not in STORIES or (step.story.top is None and step.id != "split"):
        return Verdict(False, "; ".join(parts) + ".", final, dense, sparse, checked=False)
    holds = final is not None and final <= (step.story.top or TOP)
    if step.id == "identifier":
        holds = holds and sparse is not None and dense is None
    if step.id == "split":  # the claim: its better half replaced it, and it moved up from the combined list
        sp = d.splits.get(step.target) if step.target else None
        before = rank_in(list(ids["merged"]), step.target)
        holds = final is not None and before is not None and final < before and sp is not None and bool(sp.replaced)
        if before:
            parts[0] += f", up from #{before} before the notes were split"
        if sp is not None and sp.replaced and sp.whole > 0:
            best = max(sp.half_scores)
            parts.append(f"its better half scores {best / sp.whole:.1f} times the whole note")
    if step.id == "hyde":
        holds = holds and bool(d.hyde)
        if not d.hyde:
            parts.append("the language model wrote no guess, so the plain question was searched")
    return Verdict(holds, "; ".join(parts) + ".", final, dense, sparse)


def _check_fact(step: Step, d) -> Verdict:
    final = list(d.stage_ids["final"])
    first = final[0] if final else None
    holds = first is not None and first in d.fact_ids and _from_target(d, first, step.target)
    if holds:
        span = next((f.source_span for fid, f in zip(d.fact_ids, d.facts) if fid == first), "")
        said = f" It was read from this sentence: “{' '.join(span.split())}”" if span.strip() else ""
        return Verdict(True, "#1 in the final list comes from the fact graph, not from a search of the notes."
                       + said, 1)
    return Verdict(False, "This time the first answer is not a fact read from that note.")


def _check_history(d) -> Verdict:
    facts = list(d.facts)
    places = [f.object for f in facts]
    in_order = all(a.timestamp <= b.timestamp for a, b in zip(facts, facts[1:]))
    on_top = bool(facts) and list(d.stage_ids["final"])[:len(facts)] == list(d.fact_ids)[:len(facts)]
    if len(facts) > 1 and in_order and on_top:
        return Verdict(True, f"{', then '.join(places)} — oldest first, at the top of the list.")
    return Verdict(False, "This time the facts are not all listed first in time order.")


LIVE_STEPS = {"identifier"}  # steps with the optional "try it yourself" balance (issue 35, item 5)
LIVE_WORDS = {"keyword": "keyword search", "meaning": "meaning search", "target": "the note this step is about"}


def live_payload(result, query: str, target: str | None) -> dict[str, Any]:
    """The step's search as the browser re-fuses it on the balance slider (ui/refuse/present.js): the record
    (`retrieval.pipeline.browser.fusion_payload`), each candidate's snippet and how it was found in plain words (the
    words `final_items` uses), and
    where the slider starts (the step's own dense share, to the nearest 5 %). Pure."""
    import hashlib
    import json

    from retrieval.pipeline.browser import fusion_payload

    d = result.diagnostics
    rec = d.record
    traces = {t.id: t for t in rec.sparse_hydrated.values()}
    traces.update({t.id: t for lst in rec.dense_lists for t in lst})
    texts = {i: snippet(t.content, query, 180) for i, t in traces.items()}
    texts.update({t.id: fact_words(t.content) for t in rec.fact_traces})
    ids = set(texts) | {i for lst in rec.sparse_lists for i, _ in lst}
    found = {i: FOUND_BY[origin(i, d.stage_ids, d.fact_ids)] for i in ids}  # as the step's own list says it
    data = fusion_payload(d)
    s = data["setting"]
    total = s["dense_weight"] + s["sparse_weight"]
    balance = int(round(20 * s["dense_weight"] / total) * 5) if total > 0 else 50
    sig = hashlib.sha1(json.dumps([data["server_final"], target, balance]).encode()).hexdigest()[:16]
    return {**data, "mode": "present", "texts": texts, "found_by": found, "target": target, "shown": SHOWN,
            "balance": balance, "words": LIVE_WORDS, "sig": sig}
