"""Data model shared by every stage (SPEC §1).

Frozen dataclasses: a later stage builds new objects with `dataclasses.replace`, so an
earlier stage's list can never change after the fact.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, UTC

SCOPES = ("thread", "user", "persona", "organization")
TRACE_TYPES = ("episodic", "semantic", "procedural", "prospective", "relational")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Every datetime must survive conversion to UTC, to epoch ms and to a 64-bit *nanosecond* timestamp
# (pandas, which the app's tables use: 1677-09-21 .. 2262-04-11). LanceDB's timestamp[us] holds more,
# but a date the app cannot show or `astimezone` cannot convert (year 1 at +01:00) must fail here,
# per trace, before anything is written.
MIN_TIME = datetime(1678, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2262, 4, 11, tzinfo=UTC)
INT64_MAX = 2**63 - 1
# Which index a trace's context feeds (SPEC §1 thread/position; retrieval.store.context)
CONTEXT_SIDES = ("bm25", "dense", "both")
MAX_ID_CHARS = 1024
MAX_SCOPE_ID_CHARS = 256
# Ids and scope ids end up quoted inside LanceDB SQL filters and URLs: no control characters,
# line separators or lone surrogates. Text fields may hold tabs and newlines but never NUL or a lone
# surrogate (Arrow stores UTF-8; a lone surrogate cannot be encoded at all).
_BAD_ID_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_BAD_TEXT_CHARS = re.compile("[\x00\ud800-\udfff]")


def _describe_char(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def check_identifier(value: object, limit: int = MAX_ID_CHARS) -> str | None:
    """Why `value` cannot be an id or scope id, as a predicate ("is empty"); None when it can."""
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value) > limit:
        return f"is {len(value)} characters long; the limit is {limit}"
    bad = _BAD_ID_CHARS.search(value)
    if bad:
        return (f"contains {_describe_char(bad.group())} at position {bad.start()}; ids may not hold "
                "control characters, line separators or lone surrogates")
    return None


def check_text(value: object) -> str | None:
    """Why `value` cannot be stored as text, as a predicate; None when it can."""
    if not isinstance(value, str):
        return f"is {type(value).__name__}, expected a string"
    bad = _BAD_TEXT_CHARS.search(value)
    if bad:
        kind = "NUL" if bad.group() == "\x00" else "a lone surrogate"
        return (f"contains {kind} ({_describe_char(bad.group())}) at position {bad.start()}; "
                "re-save the text as valid UTF-8")
    return None


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Mood:
    valence: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0


@dataclass(frozen=True)
class Scope:
    scope: str
    scope_id: str

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope {self.scope!r} is not one of {', '.join(SCOPES)}")
        if not isinstance(self.scope_id, str) or not self.scope_id.strip():
            raise ValueError("scope_id must be a non-empty string")

    def __str__(self) -> str:
        return f"{self.scope}:{self.scope_id}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        """`"user:u1"` → `Scope("user", "u1")`."""
        kind, sep, sid = text.partition(":")
        if not sep:
            raise ValueError(f"scope {text!r} must look like 'user:u1' (one of {', '.join(SCOPES)})")
        return cls(kind.strip(), sid.strip())


@dataclass(frozen=True)
class MemoryTrace:
    id: str
    content: str
    scope: str = "user"
    scope_id: str = "default"
    type: str = "episodic"
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    source_type: str = "user_statement"
    confidence: float = 1.0
    created_at: datetime = field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    encoding_strength: float = 0.5
    stability_ms: float = 3_600_000.0
    retrieval_count: int = 0
    valence: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0
    is_active: bool = True
    # The conversation a trace belongs to and its order there (optional; loaders set them). Neighbours of a
    # trace are the traces of the same scope AND thread, ordered by position.
    thread: str | None = None
    position: int | None = None
    # Derived by the store at write time, never given: the neighbours' text the store's context setting
    # assembled for this trace, and which index it feeds (`bm25` | `dense` | `both`). The displayed text,
    # facts and grades stay `content`.
    context: str | None = None
    context_sides: str | None = None

    def __post_init__(self) -> None:
        # Default last access is the creation time (SPEC §1). Tuples keep the trace hashable.
        if self.last_accessed_at is None:
            object.__setattr__(self, "last_accessed_at", self.created_at)
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "entities", tuple(self.entities))

    @property
    def scope_key(self) -> Scope:
        return Scope(self.scope, self.scope_id)

    def text_for(self, side: str) -> str:
        """The text this trace contributes to `side` (`bm25` or `dense`): see `indexed_text`."""
        return indexed_text(self.content, self.context, self.context_sides, side)

    def validate(self) -> None:
        """Raise `ValueError` naming the trace id and the bad field.

        Checks everything the store needs to hold the trace and query it afterwards: ids without
        control characters, text without NUL or lone surrogates, aware datetimes between MIN_TIME and
        MAX_TIME, finite numbers in range, `retrieval_count` within int64.
        """
        why = check_identifier(self.id)
        if why:
            shown = ascii(self.id[:80]) if isinstance(self.id, str) else type(self.id).__name__
            raise ValueError(f"trace {shown}: field 'id' {why}")
        tid = self.id

        def bad(fieldname: str, why: str) -> ValueError:
            return ValueError(f"trace {tid!r}: field {fieldname!r} {why}")

        if not isinstance(self.content, str) or not self.content.strip():
            raise bad("content", "is empty or whitespace; every trace needs text")
        if self.scope not in SCOPES:
            raise bad("scope", f"is {self.scope!r}; allowed: {', '.join(SCOPES)}")
        why = check_identifier(self.scope_id, MAX_SCOPE_ID_CHARS)
        if why:
            raise bad("scope_id", why)
        if self.type not in TRACE_TYPES:
            raise bad("type", f"is {self.type!r}; allowed: {', '.join(TRACE_TYPES)}")
        texts = [("content", self.content), ("source_type", self.source_type)]
        texts += [(f"tags[{i}]", v) for i, v in enumerate(self.tags)]
        texts += [(f"entities[{i}]", v) for i, v in enumerate(self.entities)]
        for name, value in texts:
            why = check_text(value)
            if why:
                raise bad(name, why)
        for name in ("created_at", "last_accessed_at"):
            self._check_time(name, bad)
        self._check_thread(bad)
        ranges = {
            "confidence": (0.0, 1.0),
            "encoding_strength": (0.0, 1.0),
            "valence": (-1.0, 1.0),
            "arousal": (0.0, 1.0),
            "dominance": (-1.0, 1.0),
        }
        for name, (lo, hi) in ranges.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not lo <= value <= hi:  # NaN fails the comparison
                raise bad(name, f"is {value!r}; must be between {lo:g} and {hi:g}")
        s_ms = self.stability_ms
        if not isinstance(s_ms, (int, float)) or not 0 < s_ms < math.inf:
            raise bad("stability_ms", f"is {s_ms!r}; must be a finite number > 0")
        n = self.retrieval_count
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= INT64_MAX:
            shown = f"an integer of {n.bit_length()} bits" if isinstance(n, int) and n > INT64_MAX else repr(n)
            raise bad("retrieval_count", f"is {shown}; must be an integer from 0 to {INT64_MAX} (int64)")

    def _check_thread(self, bad) -> None:
        if self.thread is not None:
            why = check_identifier(self.thread, MAX_SCOPE_ID_CHARS)
            if why:
                raise bad("thread", f"{why} (or leave it out: a trace without a thread has no neighbours)")
        pos = self.position
        if pos is not None:
            if not isinstance(pos, int) or isinstance(pos, bool) or not 0 <= pos <= INT64_MAX:
                raise bad("position", f"is {pos!r}; must be a whole number from 0 to {INT64_MAX} (the turn's "
                                      "order in its thread)")
            if self.thread is None:
                raise bad("position", f"is {pos!r} but the trace has no thread; give a thread too, or drop it")
        if self.context is not None:
            why = check_text(self.context)
            if why:
                raise bad("context", why)
        if self.context_sides is not None and self.context_sides not in CONTEXT_SIDES:
            raise bad("context_sides", f"is {self.context_sides!r}; allowed: {', '.join(CONTEXT_SIDES)}")

    def _check_time(self, name: str, bad) -> None:
        value = getattr(self, name)
        if not isinstance(value, datetime):
            raise bad(name, f"is {type(value).__name__}, expected a timezone-aware datetime")
        if value.tzinfo is None or value.utcoffset() is None:
            raise bad(name, "is a naive datetime; give it a timezone (e.g. UTC)")
        try:  # aware comparison works on offsets; it never builds an out-of-range datetime
            inside = MIN_TIME <= value <= MAX_TIME
        except (OverflowError, ValueError):
            inside = False
        if not inside:
            raise bad(name, f"is {value.isoformat()}; the store holds dates from {MIN_TIME:%Y-%m-%d} to "
                            f"{MAX_TIME:%Y-%m-%d} UTC (a 64-bit nanosecond timestamp)")


@dataclass(frozen=True)
class ScoreBreakdown:
    strength: float = 0.0
    similarity: float = 0.0
    recency: float = 0.0
    emotional: float = 0.0
    graph: float = 0.0
    importance: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in ("strength", "similarity", "recency", "emotional", "graph", "importance")}


@dataclass(frozen=True)
class ScoredMemoryTrace:
    trace: MemoryTrace
    retrieval_score: float
    score_breakdown: ScoreBreakdown = field(default_factory=ScoreBreakdown)

    @property
    def id(self) -> str:
        return self.trace.id

    @property
    def content(self) -> str:
        return self.trace.content


def indexed_text(content: str, context: str | None, sides: str | None, side: str) -> str:
    """The ONE definition of what a trace contributes to an index: its own text, followed by the context the
    store assembled for it when the recorded setting feeds that `side` (`bm25` | `dense`). The BM25 builds
    (streamed from rows or synced from traces) and the embedding at upsert all call this."""
    if context and sides in (side, "both"):
        return f"{content}\n{context}"
    return content


def epoch_ms(dt: datetime) -> int:
    return int(round((dt - _EPOCH).total_seconds() * 1000))
