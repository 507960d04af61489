"""Data model shared by every stage (SPEC §1).

Frozen dataclasses: a later stage builds new objects with `dataclasses.replace`, so an
earlier stage's list can never change after the fact.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

SCOPES = ("thread", "user", "persona", "organization")
TRACE_TYPES = ("episodic", "semantic", "procedural", "prospective", "relational")

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


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
    def parse(cls, text: str) -> "Scope":
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

    def __post_init__(self) -> None:
        # Default last access is the creation time (SPEC §1). Tuples keep the trace hashable.
        if self.last_accessed_at is None:
            object.__setattr__(self, "last_accessed_at", self.created_at)
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "entities", tuple(self.entities))

    @property
    def scope_key(self) -> Scope:
        return Scope(self.scope, self.scope_id)

    def validate(self) -> None:
        """Raise `ValueError` naming the trace id and the bad field."""
        tid = self.id if isinstance(self.id, str) else repr(self.id)
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("trace with an empty id: field 'id' must be a non-empty string")

        def bad(fieldname: str, why: str) -> ValueError:
            return ValueError(f"trace {tid!r}: field {fieldname!r} {why}")

        if not isinstance(self.content, str) or not self.content.strip():
            raise bad("content", "is empty or whitespace; every trace needs text")
        if self.scope not in SCOPES:
            raise bad("scope", f"is {self.scope!r}; allowed: {', '.join(SCOPES)}")
        if not isinstance(self.scope_id, str) or not self.scope_id.strip():
            raise bad("scope_id", "is empty")
        if self.type not in TRACE_TYPES:
            raise bad("type", f"is {self.type!r}; allowed: {', '.join(TRACE_TYPES)}")
        for name in ("created_at", "last_accessed_at"):
            value = getattr(self, name)
            if not isinstance(value, datetime):
                raise bad(name, f"is {type(value).__name__}, expected a timezone-aware datetime")
            if value.tzinfo is None or value.utcoffset() is None:
                raise bad(name, "is a naive datetime; give it a timezone (e.g. UTC)")
        ranges = {
            "confidence": (0.0, 1.0),
            "encoding_strength": (0.0, 1.0),
            "valence": (-1.0, 1.0),
            "arousal": (0.0, 1.0),
            "dominance": (-1.0, 1.0),
        }
        for name, (lo, hi) in ranges.items():
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or not lo <= value <= hi:
                raise bad(name, f"is {value!r}; must be between {lo:g} and {hi:g}")
        if not isinstance(self.stability_ms, (int, float)) or not self.stability_ms > 0:
            raise bad("stability_ms", f"is {self.stability_ms!r}; must be > 0")
        if not isinstance(self.retrieval_count, int) or self.retrieval_count < 0:
            raise bad("retrieval_count", f"is {self.retrieval_count!r}; must be an integer >= 0")


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

    def with_score(self, score: float) -> "ScoredMemoryTrace":
        return replace(self, retrieval_score=score)


def epoch_ms(dt: datetime) -> int:
    return int(round((dt - _EPOCH).total_seconds() * 1000))
