"""The threads a writer has just read and written, kept for its next write (store/threads.py).

A write with a context setting on reads every stored trace of the threads it touches; an agent that writes turn
after turn would read the same threads again on every write, more of them each time. This writer keeps them,
exactly as the table holds them at one version: the commit its last context write made, when that commit came
right after the version it read (nobody committed in between). Any other version — another writer's commit, this
process's own index rebuild, a setting change, a re-embed — and the next write reads the table again. Bounded:
beyond `MAX_ROWS` rows nothing is kept.

Besides its threads it may know every id the table holds at that version and the thread of each (`ids`): read
from the table in one narrow scan (id, scope, thread) when the table holds at most `MAX_ROWS` rows, then kept in
step with this writer's own commits under the same rule. A write asks "which of my ids are stored already, and in
which threads?" of it instead of scanning the table for the batch's ids. The table stays the truth: any version
this writer did not commit right after the one it knew drops it, and the next write reads the table again.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retrieval.store.context import ThreadKey

MAX_ROWS = 200_000


class ThreadCache:
    """ThreadKey → its stored traces as rows (`threads.as_row`: tuples of `threads.Stored`'s fields, the id first) in
    thread order (`context.thread_order`: a write that only
    appends to a held thread reads the turns before its new ones off the end), valid at table version `version`
    (None: nothing held)."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows
        self.version: int | None = None
        self.threads: dict[ThreadKey, list[Any]] = {}
        self.ids: dict[str, ThreadKey | None] | None = None  # every stored id → its thread at `version` (None: unknown)

    def usable(self, handle: Any) -> dict[ThreadKey, list[Any]]:
        """The threads held, if the table is still at the version they reflect (else none, and from now on the
        table's version is the one a commit must follow)."""
        version = handle.version()
        if version != self.version:
            self.threads, self.ids = {}, None
        self.version = version
        return self.threads

    def clear(self) -> None:
        self.version, self.threads, self.ids = None, {}, None

    def learn_ids(self, ids: Sequence[str], keys: Sequence[ThreadKey | None]) -> None:
        """Every id the table holds at `version` and its thread, as one scan just read them (call right after
        `usable`). An id stored twice (two writers raced on it) leaves the ids unknown: the table is asked each time."""
        known = dict(zip(ids, keys))
        self.ids = known if self.version is not None and len(known) == len(ids) else None

    def committed(self, after: Mapping[ThreadKey, Sequence[Any]] | None, version: int,
                  written: Iterable[tuple[str, ThreadKey | None]] = (), removed: Iterable[str] = ()) -> None:
        """This writer committed `version`, leaving the threads `after` as given (every other thread held is
        unchanged), the ids `written` stored in their threads and the ids `removed` gone. Kept only when that
        commit is the very next version after the one read."""
        if after is None or self.version is None or version != self.version + 1:
            self.clear()
            return
        for key, rows in after.items():
            if len({r[0] for r in rows}) != len(rows):  # an id stored twice: read it from the table next time
                self.clear()
                return
            self.threads[key] = list(rows)
        if sum(len(r) for r in self.threads.values()) > self.max_rows:
            self.clear()
            return
        if self.ids is not None:
            self.ids.update(written)
            for i in removed:
                self.ids.pop(i, None)
            if len(self.ids) > self.max_rows:
                self.ids = None
        self.version = version


__all__ = ["MAX_ROWS", "ThreadCache"]
