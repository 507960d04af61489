"""Traces read in their context: the store setting and the window it assembles (pure).

A trace from a conversation is often meaningless alone ("Yes, last Tuesday!"): the words a later
question uses are in the turn before it. A store records a `ContextSetting` (like its BM25 analyser, in
the vector field's metadata, the previous one kept for one undo): the previous `window` traces of the
same scope AND thread (optionally the `next` one), at most `max_chars` characters, feeding BM25, the
embedding or both. The store assembles a trace's context at write time and keeps it in the row
(`context`, `context_sides`), so any reader that rebuilds from rows (BM25 catch-up, as-of reads, another
machine) gets the same text; `retrieval.types.indexed_text` is the one definition of what a row then
contributes to each index. A trace without a thread has no context: the setting is a no-op there.
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from retrieval.types import CONTEXT_SIDES

# Where a trace's context goes, in words (`ContextSetting.describe`): one phrase per side in CONTEXT_SIDES.
FED = {"bm25": "added to each trace's text for BM25 only", "dense": "added to each trace's text for the embedding only",
       "both": "added to each trace's text for both BM25 and the embedding"}

KEY_CONTEXT = "retrieval.context"
KEY_CONTEXT_PREVIOUS = "retrieval.context.previous"
MAX_WINDOW = 20
MAX_CHARS = 20_000
SEPARATOR = "\n"


@dataclass(frozen=True)
class ContextSetting:
    """`window` previous traces (0 = none), `next` the following one too, `max_chars` of context at most,
    `sides` which index reads it (`bm25` | `dense` | `both`). Off when it lends no neighbour."""

    window: int = 0
    sides: str = "both"
    next: bool = False
    max_chars: int = 300

    def __post_init__(self) -> None:
        w, c = self.window, self.max_chars
        if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w <= MAX_WINDOW:
            raise ValueError(f"context window {w!r} must be a whole number from 0 to {MAX_WINDOW}")
        if self.sides not in CONTEXT_SIDES:
            raise ValueError(f"context sides {self.sides!r} must be one of {', '.join(CONTEXT_SIDES)}")
        if not isinstance(self.next, bool):
            raise ValueError(f"context next {self.next!r} must be true or false")
        if not isinstance(c, int) or isinstance(c, bool) or not 1 <= c <= MAX_CHARS:
            raise ValueError(f"context max_chars {c!r} must be a whole number from 1 to {MAX_CHARS}")

    @property
    def on(self) -> bool:
        return self.window > 0 or self.next

    def to_text(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_text(cls, text: str | None) -> ContextSetting:
        """The recorded form back; OFF for none. ValueError naming the record when it is not one."""
        if not text:
            return OFF
        try:
            raw = json.loads(text)
            return cls(**{k: raw[k] for k in ("window", "sides", "next", "max_chars") if k in raw})
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"the store's context record {text[:80]!r} is not readable ({exc}); record one "
                             "again with `python -m retrieval context --window N --sides both --db URI`") from None

    def describe(self) -> str:
        if not self.on:
            return "off (each trace indexed as its own text)"
        turns = f"the previous {self.window} turn{'s' * (self.window != 1)}" if self.window else "no previous turn"
        nxt = " and the next one" if self.next else ""
        return f"{turns}{nxt} of the same thread, at most {self.max_chars} characters, {FED[self.sides]}"


OFF = ContextSetting()
# What a new store records: the previous 3 turns of the thread, at most 300 characters, for BM25 only — chosen on
# LoCoMo dev by leave-one-conversation-out (every fold chose it, at the unchanged dense weight 0.5; held-out
# recall@10 0.7977 against 0.6806 off; docs/BENCHMARKS.md "Traces read in their context"). A no-op for traces
# without a thread (SciFact, the demo set): only conversation data gets context. A store recording none keeps off.
NEW_STORE_CONTEXT = ContextSetting(window=3, sides="bm25", max_chars=300)

ThreadKey = tuple[str, str, str]  # (scope, scope_id, thread)


class Turn(Protocol):
    """What the context of a thread reads of each of its traces (a `MemoryTrace`, or a lighter stored row)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def scope_id(self) -> str: ...
    @property
    def thread(self) -> str | None: ...
    @property
    def position(self) -> int | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def is_active(self) -> bool: ...


T = TypeVar("T", bound=Turn)


def thread_key(t: Turn) -> ThreadKey | None:
    return (t.scope, t.scope_id, t.thread) if t.thread is not None else None


def thread_order_key(t: Turn) -> tuple[bool, int, datetime, str]:
    """Where a trace sits in its thread: by position (a trace without one after those with), then time, then id."""
    return (t.position is None, t.position or 0, t.created_at, t.id)


def thread_order(members: Iterable[T]) -> list[T]:
    """A thread's traces in order (`thread_order_key`)."""
    return sorted(members, key=thread_order_key)


def _clip(text: str, budget: int) -> str:
    return text if len(text) <= budget else text[:budget]


def _lenders(active: Sequence[int], at: int, setting: ContextSetting) -> list[int]:
    """Indices (into the ordered thread) of the neighbours lending `at` its context, nearest first: `active` holds
    the ascending indices of the active traces (inactive ones lend nothing; `at` never lends to itself)."""
    k = bisect_left(active, at)
    before = [active[i] for i in range(k - 1, max(k - 1 - setting.window, -1), -1)]
    j = bisect_right(active, at)
    after = list(active[j:j + 1]) if setting.next else []
    out: list[int] = []
    for n in range(max(len(before), len(after))):  # nearest first: previous, next, the one before …
        out += before[n:n + 1] + after[n:n + 1]
    return out


def window_of(ordered: Sequence[T], at: int, setting: ContextSetting) -> list[T]:
    """The neighbours lending `ordered[at]` its context, nearest first (inactive traces lend nothing)."""
    active = [i for i, t in enumerate(ordered) if t.is_active]
    return [ordered[i] for i in _lenders(active, at, setting)]


def _assemble(ordered: Sequence[Turn], lenders: list[int], budget: int, index: Mapping[str, int]) -> str | None:
    """The lenders' texts (nearest first into `budget`) joined in thread order (`index`: id → its place)."""
    kept: dict[str, str] = {}
    for i in lenders:
        if budget <= 0:
            break
        t = ordered[i]
        piece = kept[t.id] = _clip(t.content, budget)
        budget -= len(piece) + len(SEPARATOR)
    return SEPARATOR.join(kept[i] for i in sorted(kept, key=index.__getitem__)) if kept else None


def _places(ordered: Sequence[Turn]) -> tuple[list[int], dict[str, int]]:
    """The ascending indices of the active traces, and id → index."""
    return [i for i, t in enumerate(ordered) if t.is_active], {t.id: i for i, t in enumerate(ordered)}


def assemble(ordered: Sequence[Turn], at: int, setting: ContextSetting) -> str | None:
    """The context of `ordered[at]`: its window's texts in thread order, the nearest kept first within
    `max_chars` (each cut at the end when the budget runs out); None when there is none."""
    if not setting.on:
        return None
    active, index = _places(ordered)
    return _assemble(ordered, _lenders(active, at, setting), setting.max_chars, index)


def contexts(members: Iterable[Turn], setting: ContextSetting,
             only: Container[str] | None = None) -> dict[str, tuple[str | None, str | None]]:
    """id → (context, context_sides) for every trace of ONE thread (scope and thread equal), or only for the ids
    in `only`. Linear in the thread's length times the window (the thread is ordered once)."""
    ordered = thread_order(members)
    if not setting.on:
        return {t.id: (None, None) for t in ordered if only is None or t.id in only}
    active, index = _places(ordered)
    out = {}
    for i, t in enumerate(ordered):
        if only is not None and t.id not in only:
            continue
        ctx = _assemble(ordered, _lenders(active, i, setting), setting.max_chars, index)
        out[t.id] = (ctx, setting.sides if ctx is not None else None)
    return out


def by_thread(traces: Iterable[T]) -> dict[ThreadKey, list[T]]:
    out: dict[ThreadKey, list[T]] = {}
    for t in traces:
        key = thread_key(t)
        if key is not None:
            out.setdefault(key, []).append(t)
    return out


def read_setting(meta: Mapping[str, str]) -> ContextSetting:
    return ContextSetting.from_text(meta.get(KEY_CONTEXT))


__all__ = ["ContextSetting", "NEW_STORE_CONTEXT", "OFF", "Turn", "assemble", "by_thread", "contexts", "read_setting",
           "thread_key", "thread_order", "thread_order_key", "window_of"]
