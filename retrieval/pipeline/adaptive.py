"""Per-query fusion weights (the `adaptive` switch): bounded rules on features of the query and its two lists.

Fusion ranks by the ratio of the two weights, so a rule moves the dense *share* `p = dense / (dense + sparse)`:

    p' = clamp(p + clamp(Σ strength_r · signal_r, ±MAX_SHIFT), SHARE_RANGE)   (on the knob's 0.05 step)
    dense' = T · p',  sparse' = T · (1 − p'),  T = dense + sparse   (scaled down if one would exceed 1)

Each signal is in [−1, 1] and each strength in [−MAX_STEP, MAX_STEP] (positive leans dense):

- `identifier`: 1 when the query holds an identifier-like token (FX-209847, BRCA1, v2.3, user_id, 2023-05-01);
- `length`: (words − 6) / 6 clipped — a two-word lookup −0.67, an eighteen-word question +1;
- `rarity`: how rare the query's rarest term is in the BM25 version the query read (scoped statistics when they
  apply): (max idf ÷ the idf of a one-document term − 0.7) / 0.3 clipped; 0 for a backend without idf;
- `confidence`: which side is sure of its #1 — min(1, dense #1's lead over #2 ÷ 0.2) − min(1, BM25's ÷ 0.5).

Features come from the `SearchRecord` (search computes the query's idf once), so a re-fusion adapts without a
search. `Strengths` defaults are the rules; `retrieval.eval.adaptive` learns them from a case's grades.
Pure: no I/O. A side set to 0 stays 0 (adaptive never turns a side on or off).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from retrieval.fusion import FusionStrategy

MAX_STEP = 0.2  # one rule moves the dense share by at most this
MAX_SHIFT = 0.3  # all rules together
SHARE_RANGE = (0.1, 0.9)  # adaptive never gives one side less than a tenth (unless it was set so)
STEP = 0.05  # the weight knobs' step: an adapted share lies on it
RULES = ("identifier", "length", "rarity", "confidence")
TIME_WORDS = re.compile(r"\d+(?:st|nd|rd|th|am|pm|s|k|m|h|x)", re.I)  # 3rd, 10am, 90s: not identifiers
YEAR = re.compile(r"(?:19|20)\d\d")
ID_PATTERNS = (
    re.compile(r"(?=[\w./:#-]*[A-Za-z])(?=[\w./:#-]*\d)[A-Za-z0-9]+(?:[-_./:#][A-Za-z0-9]+)*"),  # letters and digits
    re.compile(r"\d+(?:[-_./:]\d+)+"),  # digit groups: 209-847, 1.2.3, 2023-05-01
    re.compile(r"\d{5,}"),  # a long number
    re.compile(r"[A-Za-z]+(?:_[A-Za-z0-9]+)+"),  # snake_case
    re.compile(r"[a-z]+[A-Z][A-Za-z]*"),  # camelCase
    re.compile(r"[A-Z]{2,}(?:-[A-Z0-9]+)+"),  # CODE-ABC
)
_EDGE = "\"'`.,;:!?()[]{}<>"


def identifiers(query: str) -> tuple[str, ...]:
    """The query's identifier-like tokens, in order, once each."""
    out: list[str] = []
    for raw in query.split():
        tok = raw.strip(_EDGE)
        if len(tok) < 2 or TIME_WORDS.fullmatch(tok) or YEAR.fullmatch(tok) or tok in out:
            continue
        if any(p.fullmatch(tok) for p in ID_PATTERNS):
            out.append(tok)
    return tuple(out)


@dataclass(frozen=True)
class Strengths:
    """How far each rule moves the dense share at full signal (positive: toward dense)."""

    identifier: float = -0.2
    length: float = 0.1
    rarity: float = -0.1
    confidence: float = 0.1

    def __post_init__(self) -> None:
        for name in RULES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not -MAX_STEP <= v <= MAX_STEP:
                raise ValueError(f"adaptive strength {name}={v!r} must be a number in [{-MAX_STEP}, {MAX_STEP}]")

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


RULE_STRENGTHS = Strengths()


@dataclass(frozen=True)
class Features:
    """What the rules read, with the raw numbers for the reasons."""

    identifiers: tuple[str, ...]
    words: int
    rare_term: str | None  # the rarest query term BM25 knows
    rarity: float | None  # its idf ÷ the idf of a term in one document, in [0, 1]; None without idf
    rare_df: int | None  # documents holding it, of `docs`
    docs: int  # documents in the BM25 version the query read (0 without idf)
    dense_gap: float | None  # (#1 − #2) ÷ #1 of the dense list
    sparse_gap: float | None  # the same for BM25

    def signals(self) -> dict[str, float]:
        """Each rule's signal in [−1, 1]."""
        rarity = 0.0 if self.rarity is None else _clip((self.rarity - 0.7) / 0.3)
        conf = min(1.0, (self.dense_gap or 0.0) / 0.2) - min(1.0, (self.sparse_gap or 0.0) / 0.5)
        return {"identifier": 1.0 if self.identifiers else 0.0, "length": _clip((self.words - 6) / 6),
                "rarity": rarity, "confidence": _clip(conf)}


def _clip(x: float, lo: float = -1.0, hi: float = 1.0) -> float:
    return min(hi, max(lo, x))


def _gap(scores: list[float]) -> float | None:
    if len(scores) < 2 or scores[0] <= 0:
        return None
    return _clip((scores[0] - scores[1]) / scores[0], 0.0, 1.0)


def features(record: Any) -> Features:
    """The features of a `SearchRecord` (its original query, its query idf, its first dense and BM25 lists)."""
    idf, n = dict(record.query_idf), record.bm25_docs
    rare = max(sorted(idf), key=lambda t: idf[t]) if idf and n > 0 else None
    rarity = df = None
    if rare is not None:
        # BM25's idf is ln((N + 1) / (df + 0.5)): the ceiling is a term in one document, and df follows from idf.
        rarity = _clip(idf[rare] / math.log((n + 1) / 1.5), 0.0, 1.0) if n > 1 else 1.0
        df = max(1, round((n + 1) * math.exp(-idf[rare]) - 0.5))
    dense = sorted((t.retrieval_score for t in record.dense_lists[0]), reverse=True) if record.dense_lists else []
    sparse = sorted((s for _, s in record.sparse_lists[0]), reverse=True) if record.sparse_lists else []
    return Features(identifiers(record.query), len(re.findall(r"\w+", record.query)), rare, rarity, df, n,
                    _gap(dense), _gap(sparse))


def shift_of(signals: dict[str, float], strengths: Strengths) -> float:
    """Σ strength · signal, bounded by ±MAX_SHIFT."""
    return _clip(sum(getattr(strengths, r) * signals[r] for r in RULES), -MAX_SHIFT, MAX_SHIFT)


def adapted_share(share: float, shift: float) -> float:
    """The dense share after `shift`: unchanged below half a step, else on the step grid within `SHARE_RANGE`
    (widened to hold the share as set)."""
    if abs(shift) < STEP / 2 or share in (0.0, 1.0):
        return share
    lo, hi = min(SHARE_RANGE[0], share), max(SHARE_RANGE[1], share)
    return _clip(round(round((share + shift) / STEP) * STEP, 6), lo, hi)  # clipped to the share as set: unmoved


def _reason(rule: str, f: Features, signal: float, shift: float) -> str:
    if rule == "identifier":
        ids = ", ".join(f.identifiers[:3])
        return f"the query holds the identifier{'s' if len(f.identifiers) > 1 else ''} {ids}"
    if rule == "length":
        return f"{'a short' if signal < 0 else 'a long'} query ({f.words} word{'s' if f.words != 1 else ''})"
    if rule == "rarity":
        return (f"{'its rarest term' if signal > 0 else 'even its rarest term'} “{f.rare_term}” is in {f.rare_df} of "
                f"{f.docs} traces")
    lead = "dense" if signal > 0 else "BM25"  # confidence: the side surer of its #1 (the signal, not the move)
    gap = f.dense_gap if lead == "dense" else f.sparse_gap
    against = " (learned: the surer side gives weight)" if shift * signal < 0 else ""
    return f"{lead}'s #1 leads its #2 by {gap or 0:.0%}{against}"


@dataclass(frozen=True)
class Adapted(Mapping[str, Any]):
    """What `adapt` decided for one query: `strategy` is the fusion it fuses with (the `configured` strategy with
    this query's weights), then why. Read as a mapping it is its plain data (`as_dict`), as explanations and JSON
    show it: `diagnostics.adaptive["summary"]`."""

    strategy: FusionStrategy
    configured: FusionStrategy
    reasons: tuple[str, ...]  # one per rule that moved the share by at least half a step, strongest first
    summary: str  # one line
    rules: tuple[tuple[str, float, float, float], ...]  # every rule: (name, signal, strength, shift)
    strengths: Strengths
    learned: bool  # True when `strengths` were a store's learned ones rather than the shipped rules
    features: Features

    @property
    def dense_weight(self) -> float:
        return self.strategy.weights[0]

    @property
    def sparse_weight(self) -> float:
        return self.strategy.weights[1]

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the adapted and configured weights, the adapted strategy's canonical string (`fusion`), the
        reasons, the summary, every rule, the strengths, `learned` and the features."""
        return {**self.strategy.weight_knobs(), "fusion": self.strategy.spec,
                "configured": self.configured.weight_knobs(), "reasons": self.reasons,
                "summary": self.summary, "rules": [dict(zip(("rule", "signal", "strength", "shift"), r))
                                                   for r in self.rules],
                "strengths": self.strengths.as_dict(), "learned": self.learned, "features": asdict(self.features)}

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())


def adapt(record: Any, strategy: FusionStrategy, strengths: Strengths | None = None) -> Adapted:
    """`strategy` (the settings value's) with this record's query's weights, and why (`Adapted`); `strengths` are a
    store's learned ones (None: the shipped rules)."""
    learned = strengths is not None
    strengths = strengths if strengths is not None else RULE_STRENGTHS
    f = features(record)
    signals = f.signals()
    dw, sw = strategy.weights
    total = dw + sw
    share = dw / total if total > 0 else 0.5
    new = adapted_share(share, shift_of(signals, strengths))
    if new != share:  # on the knob's grid, scaled down when the larger would pass 1
        scale = max(total * new, total * (1 - new), 1.0)
        dw, sw = (float(f"{total * x / scale:.6g}") for x in (new, 1 - new))  # 0.7, not 0.7000000000000001
    rules = [(r, round(signals[r], 4), getattr(strengths, r), round(getattr(strengths, r) * signals[r], 4))
             for r in RULES]
    moved = new != share
    # The rules that moved the share the way it went, strongest first (a rule pulling back is in `rules`).
    toward = 1 if new > share else -1
    pushing = [x for x in sorted(rules, key=lambda x: -abs(x[3])) if moved and x[3] * toward > 0]
    reasons = tuple(_reason(x[0], f, signals[x[0]], x[3])
                    for n, x in enumerate(pushing) if n == 0 or x[3] * toward >= STEP / 2)
    if moved:
        side, w = ("dense", dw) if new > share else ("sparse", sw)
        summary = f"{side} {w:g}: " + "; ".join(reasons)
    else:
        summary = f"dense {dw:g} / sparse {sw:g} as set: no rule moved the weights"
    return Adapted(strategy.with_weights((dw, sw)), strategy, reasons, summary, tuple(rules), strengths, learned, f)


__all__ = ["MAX_SHIFT", "MAX_STEP", "RULES", "RULE_STRENGTHS", "SHARE_RANGE", "STEP", "Adapted", "Features",
           "Strengths", "adapt", "adapted_share", "features", "identifiers", "shift_of"]
