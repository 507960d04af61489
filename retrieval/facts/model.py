"""The fact record (SPEC §7): a literal (subject, predicate, object) with its time and sources.

Pure: no I/O. Shared vocabulary (predicates, first-person words, words that are not names) lives
here so the extractors and the classifiers agree on it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, UTC

from retrieval.types import MemoryTrace, Scope, ScoreBreakdown, ScoredMemoryTrace, epoch_ms

PREDICATES = (
    "prefers", "dislikes", "avoids", "is", "isNamed", "identifiesAs", "livesIn", "worksAt", "studiesAt",
    "ownsPet", "drives", "marriedTo", "parentOf", "friendOf", "colleagueOf", "visited", "attended",
    "purchased", "scheduled", "allergicTo", "takesMedication", "diagnosedWith", "commitsTo", "decidedOn",
    "believes",
)
FIRST_PERSON = frozenset({"i", "my", "me", "mine", "myself"})
# Capitalised words that start sentences or name days, months and relatives: never a person's name,
# neither as an extracted subject ("Mum visited …") nor as a subject asked about ("does Monday …").
NOT_NAMES = frozenset(["The", "A", "An", "My", "Our", "Your", "His", "Her", "Their", "It", "This", "That", "These",
                       "Those", "We", "They", "He", "She", "You", "There", "Here", "Then", "Today", "Yesterday",
                       "Tomorrow", "Last", "Next", "After", "Before", "When", "While", "Also", "And", "But", "So",
                       "Yes", "No", "Ok", "Okay", "Oh", "Well", "Just", "Monday", "Tuesday", "Wednesday", "Thursday",
                       "Friday", "Saturday", "Sunday", "January", "February", "March", "April", "May", "June", "July",
                       "August", "September", "October", "November", "December", "Mom", "Dad", "Mum", "Mummy",
                       "Mother", "Father", "Grandma", "Grandpa", "Granny", "Train", "Flight", "Bus", "Order",
                       "Invoice", "Ticket", "Meeting"])


def canonical_subject(subject: str) -> str:
    s = subject.strip().lower()
    return "user" if s in FIRST_PERSON else s


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    object: str
    timestamp: datetime
    source_trace_ids: tuple[str, ...] = ()
    source_span: str = ""

    def __post_init__(self) -> None:
        if self.predicate not in PREDICATES:
            raise ValueError(f"predicate {self.predicate!r} is not one of the {len(PREDICATES)} known predicates")
        if not self.object or not self.object.strip():
            raise ValueError("a fact needs a non-empty object")
        if self.timestamp.tzinfo is None:
            raise ValueError("fact timestamp must be timezone-aware")
        object.__setattr__(self, "subject", canonical_subject(self.subject))
        object.__setattr__(self, "source_trace_ids", tuple(self.source_trace_ids))

    @property
    def key(self) -> str:
        """Identity for idempotent storage: every field but the span, sources order-free."""
        raw = json.dumps([self.subject, self.predicate, self.object, epoch_ms(self.timestamp),
                          sorted(self.source_trace_ids)])
        return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


def fact_trace_id(f: Fact) -> str:
    return f"fact-graph:{f.subject}:{f.predicate}:{epoch_ms(f.timestamp)}"


def fact_to_trace(f: Fact, scope: Scope) -> ScoredMemoryTrace:
    content = f"{f.subject} {f.predicate} {f.object} (as of {f.timestamp.astimezone(UTC):%Y-%m-%d})."
    trace = MemoryTrace(
        id=fact_trace_id(f), content=content, scope=scope.scope, scope_id=scope.scope_id, type="semantic",
        tags=("fact-graph", f"predicate:{f.predicate}"), source_type="fact_graph", created_at=f.timestamp,
    )
    return ScoredMemoryTrace(trace, 1.0, ScoreBreakdown())
