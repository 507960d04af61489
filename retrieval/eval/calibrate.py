"""Label-free calibration: the fusion lab run on pseudo-queries made from a store's own traces.

A pseudo-query is a phrase cropped from one trace, and that trace is its one relevant answer (the
"inverse cloze" idea of Lee, Chang & Toutanova, ACL 2019; Bonifacio et al.'s InPars, 2022, for the
question-writing variant). Three choices keep it honest:

- **sampled across scopes**: traces are drawn round-robin over scopes (shuffled by the seed), so a
  store whose one scope holds most traces does not decide alone; traces under `MIN_WORDS` words are
  skipped (a phrase from a five-word note is the note);
- **less exact overlap**: the phrase comes from a *middle* sentence when the trace has three or more
  (a first sentence is often a title, which favours both sides unfairly), is at most `MAX_WORDS` words cut
  from the middle of it, and a share of its words (`drop`, default a quarter) is left out, so a
  pseudo-query is not a verbatim substring — a verbatim substring is BM25's best case, not a user's;
- optionally a local text generator turns the phrase into a question (`question_writer`); any failure
  keeps the phrase.

The criterion (stated, and shown with the result): the lab picks the best candidate on the 'tune' half
of the pseudo-queries; it replaces the preset's fixed default only when, on the 'held-out' half, the
paired bootstrap 95 % interval of its gain over the default lies above zero. Otherwise the default is
kept and the result says so. Queries run with the `end` clock (one day after each scope's newest trace).

Measured (docs/BENCHMARKS.md, "Label-free calibration"): it does not beat the fixed default on LoCoMo dev
(kept) or SciFact (a BM25-heavy winner that loses on the labelled queries): phrase lookups favour BM25.
"""
from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.eval.clock import make_clock
from retrieval.eval.lab import Candidate, LabResult, fusion_grid, search_fusions
from retrieval.eval.memo import QueryMemo
from retrieval.metrics import PairedInterval
from retrieval.eval.runner import run_queries
from retrieval.judgments.model import LabelledQuery
from retrieval.pipeline.presets import HYBRID_PRESET
from retrieval.fusion import strategy_for
from retrieval.types import MemoryTrace, Scope, utcnow

MIN_WORDS = 12  # a trace shorter than this is skipped
MIN_PHRASE = 4  # words a pseudo-query keeps at least
MAX_WORDS = 12  # words cropped at most
DROP = 0.25  # share of the cropped words left out
DEFAULT_SAMPLE = 300
METRIC = "ndcg@10"
Progress = Callable[[float, str], object]
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_EDGE = re.compile(r"^\W+|\W+$")


def crop_phrase(text: str, rng: random.Random, max_words: int = MAX_WORDS, drop: float = DROP,
                df: Mapping[str, int] | None = None) -> str | None:
    """A phrase from the middle of `text`: fewer words than the text, at least `MIN_PHRASE`; None when the
    text is too short to crop. The words keep their order (a subsequence of the text's words)."""
    sentences = [s for s in _SENTENCE.split(text.strip()) if len(s.split()) >= MIN_PHRASE]
    if not sentences:
        return None
    pool = sentences[1:-1] if len(sentences) >= 3 else sentences
    words = rng.choice(pool).split()
    total = len(text.split())
    size = min(max_words, len(words), total - 1)  # never the whole text
    if size < MIN_PHRASE:
        return None
    slack = len(words) - size
    start = rng.randint(slack // 4, slack - slack // 4) if slack else 0
    window = words[start:start + size]
    n_drop = min(int(len(window) * drop), len(window) - MIN_PHRASE)
    if n_drop > 0 and df is not None:  # the rarest words go: BM25's exact-match edge, not the meaning
        order = sorted(range(len(window)), key=lambda i: (df.get(_EDGE.sub("", window[i]).lower(), 0), i))
        gone = set(order[:n_drop])
        window = [w for i, w in enumerate(window) if i not in gone]
    elif n_drop > 0:
        gone = set(rng.sample(range(len(window)), n_drop))
        window = [w for i, w in enumerate(window) if i not in gone]
    phrase = " ".join(window)
    return _EDGE.sub("", phrase) or None


def sample_traces(traces: Sequence[MemoryTrace], n: int, seed: int = 0, min_words: int = MIN_WORDS,
                  scope: Scope | None = None) -> list[MemoryTrace]:
    """Up to `n` active traces of at least `min_words` words, round-robin over scopes (deterministic by `seed`)."""
    rng = random.Random(seed)
    by_scope: dict[Scope, list[MemoryTrace]] = {}
    for t in sorted(traces, key=lambda t: t.id):
        s = Scope(t.scope, t.scope_id)
        if t.is_active and len(t.content.split()) >= min_words and (scope is None or s == scope):
            by_scope.setdefault(s, []).append(t)
    groups = [by_scope[s] for s in sorted(by_scope, key=str)]
    rng.shuffle(groups)
    for g in groups:
        rng.shuffle(g)
    out: list[MemoryTrace] = []
    while len(out) < n and any(groups):
        for g in groups:
            if g and len(out) < n:
                out.append(g.pop())
    return out


def pseudo_queries(traces: Sequence[MemoryTrace], n: int = DEFAULT_SAMPLE, seed: int = 0,
                   scope: Scope | None = None, drop: float = DROP,
                   question_writer: Callable[[str], str] | None = None, rare: bool = False) -> list[LabelledQuery]:
    """Pseudo-queries, each with its source trace as the one relevant answer (qid `calib:<trace id>`)."""
    rng = random.Random(seed)
    df = doc_freq(traces) if rare else None
    out = []
    for t in sample_traces(traces, n, seed, scope=scope):
        phrase = crop_phrase(t.content, rng, drop=drop, df=df)
        if phrase is None:
            continue
        if question_writer is not None:
            phrase = rewrite(question_writer, phrase)
        out.append(LabelledQuery(f"calib:{t.id}", phrase, {t.id: 1.0}, Scope(t.scope, t.scope_id),
                                 "pseudo-query", "cropped from its source trace"))
    return out


def doc_freq(traces: Sequence[MemoryTrace]) -> dict[str, int]:
    """In how many traces each lower-cased word occurs (for dropping a phrase's rarest words)."""
    df: dict[str, int] = {}
    for t in traces:
        for w in {_EDGE.sub("", w).lower() for w in t.content.split()}:
            df[w] = df.get(w, 0) + 1
    return df


def rewrite(question_writer: Callable[[str], str], phrase: str) -> str:
    """The writer's one-line question for `phrase`, or the phrase when the writer fails or says nothing useful."""
    try:
        q = question_writer(phrase).strip().split("\n")[0].strip()
    except Exception:  # a local model failing is a fallback, not a failed calibration
        return phrase
    return q if 3 <= len(q.split()) <= 40 else phrase


@dataclass(frozen=True)
class Calibration:
    """What a calibration found. `adopt` is the criterion's verdict; `interval` is winner − default, held-out."""

    lab: LabResult
    default: Candidate
    winner: Candidate
    interval: PairedInterval
    adopt: bool
    queries: int
    traces: int
    scopes: int
    seconds: float
    seed: int
    method: str
    clock: dict[str, Any]

    @property
    def chosen(self) -> Candidate:
        return self.winner if self.adopt else self.default

    @property
    def verdict(self) -> str:
        """The criterion's outcome in one sentence."""
        iv = self.interval
        gain = (f"{self.lab.metric} on {iv.n} held-out pseudo-queries: {self.lab.best.held_out:.4f} vs default "
                f"{self.lab.baseline.held_out:.4f}, gain {iv.delta:+.4f}, 95 % interval [{iv.lo:+.4f}, {iv.hi:+.4f}]")
        if same_setting(self.winner, self.default):
            return f"The default ({self.default.label}) is already the best on the tune half; kept. {gain}."
        if self.adopt:
            return f"{self.winner.label} beats the default ({self.default.label}): {gain}, above zero."
        return (f"Kept the default ({self.default.label}): the best candidate, {self.winner.label}, does not beat it "
                f"with an interval above zero ({gain}).")

    def record(self, by: str) -> Any:
        """The store record for the winner (`retrieval.store.calibration`); ValueError when the default was kept."""
        from retrieval.store.calibration import CalibrationRecord

        if not self.adopt:
            raise ValueError("the default was kept: there is no calibration to record")
        iv = self.interval
        return CalibrationRecord(
            fusion=self.winner.strategy, label=self.winner.label, by=by,
            at=utcnow().isoformat(timespec="seconds"), metric=f"{self.lab.metric} (held-out pseudo-queries)",
            default_score=round(self.lab.baseline.held_out, 4), score=round(self.lab.best.held_out, 4),
            interval={"delta": round(iv.delta, 4), "lo": round(iv.lo, 4), "hi": round(iv.hi, 4), "n": iv.n,
                      "confidence": iv.confidence},
            sample={"queries": self.queries, "seed": self.seed, "traces": self.traces, "scopes": self.scopes,
                    "method": self.method, "clock": self.clock.get("mode", "end")})

    def to_dict(self) -> dict[str, Any]:
        return {"adopt": self.adopt, "verdict": self.verdict, "default": self.default.knobs(),
                "default_label": self.default.label, "winner": self.winner.knobs(), "winner_label": self.winner.label,
                "interval": self.interval.as_dict(), "metric": self.lab.metric, "queries": self.queries,
                "traces": self.traces, "scopes": self.scopes, "seconds": round(self.seconds, 2), "seed": self.seed,
                "method": self.method, "clock": self.clock.get("mode")}


def default_candidate() -> Candidate:
    """The hybrid preset's own fusion strategy (its weights as the preset holds them)."""
    return Candidate(strategy_for(HYBRID_PRESET))


def same_setting(a: Candidate, b: Candidate) -> bool:
    """Whether two candidates fuse alike (k means nothing to a convex fusion, normalisation nothing to RRF)."""
    return a.strategy == b.strategy  # the strategy compares its own parameters and the weights only


def decide(lab: LabResult, resamples: int = 10_000, seed: int = 0) -> tuple[PairedInterval, bool]:
    """The stated criterion: the tune-half best replaces the default only when its held-out gain's paired 95 %
    bootstrap interval lies above zero."""
    iv = lab.interval(half="held-out", resamples=resamples, seed=seed)
    return iv, not same_setting(lab.best.candidate, lab.baseline.candidate) and iv.above_zero


def _stage(progress: Progress | None, lo: float, hi: float, what: str) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(lo + (hi - lo) * done / max(total, 1), f"{what} {done}/{total}")
    return report


def calibrate(store: Any, bm25: Any, *, sample: int = DEFAULT_SAMPLE, seed: int = 0, scope: Scope | None = None,
              question_writer: Callable[[str], str] | None = None, candidates: Sequence[Candidate] | None = None,
              progress: Progress | None = None, resamples: int = 10_000, traces: Sequence[MemoryTrace] | None = None,
              drop: float = DROP, rare: bool = False) -> Calibration:
    """Calibrate `store` (a MemoryStore) with its sparse index `bm25`; nothing is written here.

    The queries run on a read-only view of the store whose clock is `end` per scope (the shared store and its
    clock are not touched), with the `hybrid` preset's fixed defaults as the baseline and facts off.
    """
    from retrieval.hybrid import HybridRetriever
    from retrieval.store.memory import MemoryStore

    if sample < 10:
        raise ValueError(f"sample={sample}: calibration needs at least 10 pseudo-queries (default {DEFAULT_SAMPLE})")
    t0 = time.perf_counter()
    if progress:
        progress(0.0, "reading the store's traces")
    traces = list(traces) if traces is not None else store.all_traces()
    queries = pseudo_queries(traces, sample, seed, scope, drop=drop, question_writer=question_writer, rare=rare)
    if len(queries) < 10:
        raise ValueError(f"only {len(queries)} trace(s) of at least {MIN_WORDS} words"
                         f"{f' in scope {scope}' if scope else ''}: calibration needs 10 or more; ingest more traces "
                         "or calibrate another scope")
    if progress:
        progress(0.05, f"embedding {len(queries)} pseudo-queries")
    clock = make_clock("end", traces)
    view = MemoryStore(store.uri, embedder=QueryMemo(store.embedder, [q.query for q in queries]),
                       table=store.table_name, clock=clock, read_only=True, storage_options=store.storage_options,
                       columns=None if store.columns.native else store.columns)
    retriever = HybridRetriever(view, bm25=bm25, preset=HYBRID_PRESET, fact_store=None)
    runs = run_queries(retriever, queries, progress=_stage(progress, 0.15, 0.7, "searching pseudo-query"),
                       clock=clock, recall_top_k=10)
    lab = search_fusions(runs, list(candidates) if candidates is not None else fusion_grid(), METRIC,
                         progress=_stage(progress, 0.7, 0.98, "re-fusing candidate"), clock=clock.describe())
    iv, adopt = decide(lab, resamples, seed)
    if progress:
        progress(1.0, "done")
    return Calibration(lab, lab.baseline.candidate, lab.best.candidate, iv, adopt, len(queries), len(traces),
                       len({q.scope for q in queries}), time.perf_counter() - t0, seed,
                       "question" if question_writer else "phrase", clock.describe())


# Plain examples with no name, number or code a base model could copy into the next question.
QUESTION_PROMPT = ("Write one short question that the note answers.\n\n"
                   "Note: booked the dentist for nine on Tuesday\nQuestion: When is the dentist appointment?\n\n"
                   "Note: the blue bike needs a new chain before the trip\nQuestion: What does the bike need?\n\n"
                   "Note: {phrase}\nQuestion:")


def generator_writer(generator: Any) -> Callable[[str], str]:
    """A question writer over a text generator (`generate(system, prompt)`), few-shot as a base model needs."""
    return lambda phrase: generator.generate("", QUESTION_PROMPT.format(phrase=phrase))


__all__ = ["DEFAULT_SAMPLE", "MIN_WORDS", "Calibration", "calibrate", "crop_phrase", "decide", "default_candidate",
           "generator_writer", "pseudo_queries", "same_setting", "sample_traces"]
