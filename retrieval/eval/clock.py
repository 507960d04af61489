"""The evaluation clock: which instant is "now" when a query's dense hits are cognitively scored.

Three forms, as `--clock` takes them (`parse_clock`):

- `now`: the pinned `EVAL_NOW` (2026-01-01) for every query: reproducible, but years after every LoCoMo
  turn, so the recency and strength terms are ~0 for all traces and only similarity ranks;
- `end`: one day after the newest trace of the query's scope (per conversation for LoCoMo), as an agent
  queries its memory the day after a conversation; a dataset without real timestamps (every trace stamped
  with one instant, as BEIR corpora are) has no end to speak of, and `end` is `now` there;
- an ISO time (`2023-08-01T09:00:00+00:00`; no zone = UTC): that instant for every query.

The default is `end` for a dataset with real timestamps (LoCoMo) and `now` otherwise (`make_clock(None, …)`).

The store's clock stays a zero-argument callable (SPEC §2: `MemoryStore(clock=…)`). `ScopeClock` is one:
it answers with the instant of the scope whose query is running, which the evaluation names around each
query with `with clock.scoped(scope): retriever.retrieve(…)`. The scope is held on the clock itself, not in
a context variable, because the dense search runs on a worker thread; `scoped` holds a lock for the query,
so two threads sharing one clock take turns instead of reading each other's scope.
"""
from __future__ import annotations

import argparse
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from retrieval.types import MemoryTrace, Scope

EVAL_NOW = datetime(2026, 1, 1, tzinfo=UTC)  # pinned: runs are reproducible
END_OFFSET = timedelta(days=1)  # `end` = the scope's newest trace + one day
CLOCK_FORMS = ("now", "end", "ISO-TIME")
CLOCK_HELP = ("now | end | ISO-TIME: the instant recency is scored at. now = 2026-01-01 (pinned); end = one day "
              "after the newest trace of each query's scope (= now for a dataset without real timestamps); "
              "an ISO time (no zone = UTC) = that instant. Default: end for a dataset with real timestamps "
              "(LoCoMo), else now")


@dataclass(frozen=True)
class ClockSpec:
    """A parsed `--clock`: `mode` is "now", "end" or "at" (then `at` is the instant)."""

    mode: str
    at: datetime | None = None

    def __str__(self) -> str:
        return self.at.isoformat() if self.mode == "at" and self.at is not None else self.mode


def parse_clock(text: str) -> ClockSpec:
    """`now`, `end` or an ISO time → `ClockSpec`; anything else → ValueError saying what is accepted."""
    t = str(text).strip()
    if t.lower() in ("now", "end"):
        return ClockSpec(t.lower())
    try:
        at = datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"clock {text!r} is not one of {', '.join(CLOCK_FORMS)}: use now, end or an ISO time "
                         "such as 2023-08-01T09:00:00+00:00") from None
    return ClockSpec("at", at if at.tzinfo is not None else at.replace(tzinfo=UTC))


def clock_arg(text: str) -> ClockSpec:
    """`parse_clock` for argparse's `type=`: a bad value is a usage error with the same message."""
    try:
        return parse_clock(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def trace_time(t: MemoryTrace) -> datetime:
    """The latest instant a trace carries (what its recency is measured from)."""
    return max(t.created_at, t.last_accessed_at or t.created_at)


def has_real_timestamps(traces: Iterable[MemoryTrace]) -> bool:
    """False when every trace carries one instant (a corpus stamped with a fixed date, as BEIR's loader does)."""
    seen: set[datetime] = set()
    for t in traces:
        seen.add(trace_time(t))
        if len(seen) > 1:
            return True
    return False


def scope_ends(traces: Iterable[MemoryTrace]) -> dict[Scope, datetime]:
    """Each scope's `end`: one day after its newest trace."""
    newest: dict[Scope, datetime] = {}
    for t in traces:
        s, at = Scope(t.scope, t.scope_id), trace_time(t)
        if s not in newest or at > newest[s]:
            newest[s] = at
    return {s: at + END_OFFSET for s, at in newest.items()}


class ScopeClock:
    """A zero-argument clock whose answer depends on the scope of the query running (see the module doc).

    `default` answers outside `scoped` and for a scope not in `by_scope` (under `end`: the latest end of all).
    """

    def __init__(self, requested: str, mode: str, default: datetime, by_scope: Mapping[Scope, datetime] | None = None):
        if default.tzinfo is None:
            raise ValueError(f"clock {default!r} must be timezone-aware")
        self.requested, self.mode, self.default = requested, mode, default
        self.by_scope = dict(by_scope or {})
        self._scope: Scope | None = None
        self._turn = threading.RLock()

    def at(self, scope: Scope | None) -> datetime:
        """The instant a query in `scope` is scored at."""
        return self.default if scope is None else self.by_scope.get(scope, self.default)

    def __call__(self) -> datetime:
        return self.at(self._scope)

    @contextmanager
    def scoped(self, scope: Scope | None) -> Iterator[datetime]:
        """Within the block the clock answers for `scope` (on any thread); yields that instant."""
        with self._turn:
            before, self._scope = self._scope, scope
            try:
                yield self.at(scope)
            finally:
                self._scope = before

    def describe(self) -> dict:
        """What every JSON the evaluation writes records as its clock."""
        by_scope = sorted((str(s), at.isoformat()) for s, at in self.by_scope.items())
        return {"requested": self.requested, "mode": self.mode, "default": self.default.isoformat(),
                "by_scope": dict(by_scope)}

    def __repr__(self) -> str:
        return f"ScopeClock({self.requested!r} → {self.mode}, default={self.default.isoformat()}, " \
               f"{len(self.by_scope)} scope(s))"


def make_clock(spec: ClockSpec | str | None, traces: Iterable[MemoryTrace]) -> ScopeClock:
    """The clock `spec` names for a dataset's traces; `None` = the default (`end` with real timestamps, else `now`)."""
    traces = list(traces)
    real = has_real_timestamps(traces)
    if spec is None:
        spec = ClockSpec("end" if real else "now")
    elif isinstance(spec, str):
        spec = parse_clock(spec)
    if spec.mode == "at" and spec.at is not None:
        return ScopeClock(str(spec), "at", spec.at)
    if spec.mode == "end" and real:
        ends = scope_ends(traces)
        return ScopeClock("end", "end", max(ends.values()), ends)
    return ScopeClock(str(spec), "now", EVAL_NOW)  # `now`, or `end` on a dataset without real timestamps


__all__ = ["CLOCK_HELP", "EVAL_NOW", "ClockSpec", "ScopeClock", "clock_arg", "has_real_timestamps", "make_clock",
           "parse_clock", "scope_ends"]
