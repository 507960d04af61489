"""What the agent got then vs what the current configuration returns now, and as of the log's time.

For one logged query: the ids the agent logged, the ids the current configuration returns on the current
store, and the ids it returns on the store as of the log's timestamp (SPEC §16); each pair compared by
overlap@k and rank-biased overlap (retrieval.metrics). Drift is `1 − RBO(then-logged, now)`. When the
log's time is before the store's first version, or that version was cleaned up, the as-of side is empty and
the note says why.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retrieval.metrics import overlap_at_k, rank_biased_overlap
from retrieval.replay.logs import LoggedQuery

RBO_P = 0.9


@dataclass(frozen=True)
class Replayed:
    logged: LoggedQuery
    k: int
    now_ids: tuple[str, ...]
    asof_ids: tuple[str, ...] | None  # None: the store has no version at or before the log's time
    asof_version: int | None
    overlap_now: float
    rbo_now: float
    overlap_asof: float | None
    rbo_asof: float | None
    note: str | None = None

    @property
    def drift(self) -> float:
        """How far what the agent got is from what it gets now: 1 − RBO."""
        return 1.0 - self.rbo_now

    def as_dict(self) -> dict:
        q = self.logged
        return {"key": q.key, "timestamp": q.timestamp.isoformat(), "query": q.query,
                "scope": str(q.scope) if q.scope else None, "k": self.k, "logged": list(q.result_ids[:self.k]),
                "now": list(self.now_ids), "as_of": list(self.asof_ids) if self.asof_ids is not None else None,
                "as_of_version": self.asof_version, "overlap_now": self.overlap_now, "rbo_now": self.rbo_now,
                "overlap_as_of": self.overlap_asof, "rbo_as_of": self.rbo_asof, "drift": self.drift,
                "note": self.note}


def compare_lists(logged: LoggedQuery, now_ids: list[str], asof_ids: list[str] | None, k: int,
                  asof_version: int | None = None, note: str | None = None) -> Replayed:
    k = min(k, len(logged.result_ids)) or k  # the agent logged fewer: compare that many
    then = list(logged.result_ids[:k])
    now = list(now_ids[:k])
    asof = list(asof_ids[:k]) if asof_ids is not None else None
    return Replayed(logged, k, tuple(now), tuple(asof) if asof is not None else None, asof_version,
                    overlap_at_k(then, now, k), rank_biased_overlap(then, now, RBO_P),
                    overlap_at_k(then, asof, k) if asof is not None else None,
                    rank_biased_overlap(then, asof, RBO_P) if asof is not None else None, note)


def replay(logged: LoggedQuery, run: Callable[[Any], list[str]], version_at: Callable[[datetime], int],
           k: int = 10) -> Replayed:
    """`run(as_of)` returns the ids the current configuration gives the logged query and scope on the store as
    of `as_of` (None: the current store); `version_at(time)` names the version at the log's time (ValueError
    when there is none)."""
    now = run(None)
    try:
        version = version_at(logged.timestamp)
    except ValueError as exc:
        return compare_lists(logged, now, None, k, None, str(exc))
    return compare_lists(logged, now, run(version), k, version)
