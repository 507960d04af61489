"""The judging queue (pure): the pooled top k of a case's queries under one or more configurations, in a
random order of its own per rater, blind.

Pooling (as TREC does): each query's items are the union of the top `k` of the final lists of the chosen
snapshots (fact-graph traces credited to their source). An item holds the query, its scope and note (the
information need) and the trace id — never which snapshot or configuration found it, so nothing about the
configuration can reach the page while judging. A shared overlap set comes first (`OVERLAP` items, the same for
every rater: agreement needs items graded by several raters), then the rest. Each part is shuffled with a seed made
of the case, the snapshots and the rater: stable across reruns and sessions of one rater, different between raters
(so no two raters share a position bias).
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from retrieval.judgments.model import Case, Judgment, Snapshot, query_key, scope_text
from retrieval.judgments.raters import Item
from retrieval.types import Scope


@dataclass(frozen=True)
class QueueItem:
    qid: str
    query: str
    scope: Scope | None
    note: str
    trace_id: str

    @property
    def key(self) -> Item:
        return (scope_text(self.scope), query_key(self.query), self.trace_id)


def pooled_items(case: Case, snapshots: Sequence[Snapshot], k: int) -> list[QueueItem]:
    """Every (query, trace) in the top `k` of any of `snapshots` for the case's queries, in case order."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    by_qid = {q.qid: q for q in case.queries}
    pools: dict[str, dict[str, None]] = {q.qid: {} for q in case.queries}
    for snap in sorted(snapshots, key=lambda s: s.id):  # the pool does not depend on the order picked
        if snap.case != case.name:
            raise ValueError(f"snapshot {snap.id} is of case {snap.case!r}, not {case.name!r}")
        for sq in snap.queries:
            if sq.qid in pools:
                pools[sq.qid].update(dict.fromkeys(sq.credited("final")[:k]))
    return [QueueItem(q, by_qid[q].query, by_qid[q].scope, by_qid[q].note, t) for q, ids in pools.items() for t in ids]


def queue_seed(case: str, snapshot_ids: Iterable[str], rater: str) -> int:
    text = "\x1f".join([case, *sorted(snapshot_ids), rater])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


OVERLAP = 20  # items every rater gets first, the same ones, so a team's agreement rests on shared items


def judging_queue(case: Case, snapshots: Sequence[Snapshot], k: int, rater: str,
                  overlap: int = OVERLAP) -> list[QueueItem]:
    """The pooled items for this rater: first a shared overlap set (`overlap` items drawn once for the case and
    pool, the same for every rater), then the rest; each part in this rater's own random order."""
    if overlap < 0:
        raise ValueError(f"the shared overlap must be 0 or more items, got {overlap}")
    items = pooled_items(case, snapshots, k)
    ids = [s.id for s in snapshots]
    shared = list(items)
    random.Random(queue_seed(case.name, ids, "")).shuffle(shared)  # "" is no rater's name: one draw for all
    shared = shared[:overlap]
    keys = {i.key for i in shared}
    rest = [i for i in items if i.key not in keys]
    mine = random.Random(queue_seed(case.name, ids, rater))
    mine.shuffle(shared)
    mine.shuffle(rest)
    return shared + rest


def done_items(judgments: Iterable[Judgment], rater: str, hashes: Mapping[str, str] | None = None) -> set[Item]:
    """The items `rater` has rated ("can't rate" counts; a stale grade does not)."""
    hashes = hashes or {}
    return {(scope_text(j.scope), query_key(j.query), j.trace_id) for j in judgments
            if j.who == rater and not j.stale(hashes.get(j.trace_id))}


def progress(queue: Sequence[QueueItem], judgments: Iterable[Judgment],
             hashes: Mapping[str, str] | None = None) -> dict[str, int]:
    """{rater: items of the queue they have rated}, most first."""
    keys = {i.key for i in queue}
    judgments = list(judgments)
    counts = {r: len(done_items(judgments, r, hashes) & keys) for r in {j.who for j in judgments}}
    return dict(sorted(((r, n) for r, n in counts.items() if n), key=lambda x: (-x[1], x[0])))


def next_open(queue: Sequence[QueueItem], done: set[Item], start: int = 0) -> int | None:
    """The position of the first item at or after `start` (wrapping round) not in `done`; None when all are."""
    n = len(queue)
    for step in range(n):
        i = (start + step) % n
        if queue[i].key not in done:
            return i
    return None
