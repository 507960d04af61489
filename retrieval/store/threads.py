"""Keeping every row's context right as its thread changes (the I/O around `store/context.py`).

A write names the traces it adds or replaces and the ids it removes; `plan` reads the other stored traces
of every thread those touch (same scope AND thread: scopes never lend each other context), recomputes the
whole thread's contexts with the recorded setting, and returns the batch with its contexts plus the stored
traces whose context changed (their followers: the turn after an edited or deleted one). The writer writes
them in the same commit, re-embedding only those whose embedding text changed. A table made before the
context columns existed gains them here, on its first write.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import numpy as np

from retrieval.store.context import (KEY_CONTEXT, ContextSetting, ThreadKey, Turn, by_thread, contexts,
                                     read_setting, thread_key, thread_order, thread_order_key)
from retrieval.store.rows import from_row, ids_filter, missing_columns, sql_quote
from retrieval.store.thread_cache import ThreadCache
from retrieval.types import MemoryTrace

NAMES_PER_QUERY = 2_000


@dataclass
class Plan:
    """What one write stores: `batch` with contexts, `followers` (stored traces whose context changed), and the
    stored vector of each follower whose embedding text did not change (no re-embedding)."""

    batch: list[MemoryTrace]
    followers: list[MemoryTrace] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    after: dict[ThreadKey, list[Any]] | None = None  # every touched thread as the write leaves it (`ThreadCache`)


def vector_metadata(tbl: Any, vector: str = "vector") -> dict[str, str]:
    meta = tbl.schema.field(vector).metadata or {}
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in meta.items()}


def setting_of(handle: Any) -> ContextSetting:
    """The context setting the table records (as the table is checked out: an as-of store reads its version's),
    or what a new table will record."""
    tbl = handle.table()
    if tbl is None:
        return handle.new_context
    if not handle.columns.native:
        return ContextSetting()
    return read_setting(vector_metadata(tbl, handle.columns.vector))


def ensure_columns(handle: Any, tbl: Any) -> None:
    """Give a table made before the context columns those columns (null for its rows), once; rebind the map."""
    missing = missing_columns(tbl)
    if missing:
        tbl.add_columns(missing)
    if handle.columns.native:
        handle.columns = handle.columns.bind(tbl.schema)


def stored_threads(handle: Any, ids: Iterable[str]) -> set[ThreadKey]:
    """The threads the stored traces with `ids` belong to."""
    tbl, ids = handle.table(), list(ids)
    if tbl is None or not ids or "thread" not in tbl.schema.names:
        return set()
    rows = tbl.search().where(ids_filter(ids)).select(["scope", "scope_id", "thread"]).limit(None).to_arrow()
    return {(r["scope"], r["scope_id"], r["thread"]) for r in rows.to_pylist() if r["thread"] is not None}


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored trace as its thread's context reads it (`store/context.py` `Turn`): no vector, none of the fields
    the context never reads, so reading a thread costs a few columns, not a whole trace per row."""

    id: str
    content: str
    scope: str
    scope_id: str
    thread: str | None
    position: int | None
    created_at: datetime
    is_active: bool
    context: str | None
    context_sides: str | None


STORED = tuple(f.name for f in fields(Stored))
ID, POSITION, CREATED_AT, ACTIVE = (STORED.index(n) for n in ("id", "position", "created_at", "is_active"))


def _stored(row: dict) -> Stored:
    at = row["created_at"]
    return Stored(**{**row, "created_at": at if at.tzinfo else at.replace(tzinfo=UTC)})


def _scan(tbl: Any, where: str) -> list[Stored]:
    return [_stored(r) for r in tbl.search().where(where).select(list(STORED)).limit(None).to_arrow().to_pylist()]


def _members(tbl: Any, names: Sequence[str], keys: set[ThreadKey]) -> list[Stored]:
    """The stored traces of the threads `keys` (whose thread names are `names`): one scan per many threads."""
    out = []
    for start in range(0, len(names), NAMES_PER_QUERY):  # exact keys kept below
        where = "thread IN (" + ", ".join(sql_quote(n) for n in names[start:start + NAMES_PER_QUERY]) + ")"
        out += [t for t in _scan(tbl, where) if thread_key(t) in keys]
    return out


def thread_rows(handle: Any, keys: Iterable[ThreadKey], ids: Sequence[str] = (),
                cache: ThreadCache | None = None) -> tuple[list[Stored], set[ThreadKey], set[ThreadKey]]:
    """Every stored trace of the threads `keys` and of the threads the stored traces `ids` belong to (no vectors,
    only what a context reads) except those of the threads `cache` holds at the table's version, the threads of
    those `ids`, and the threads to take from `cache.threads` instead (those it holds: never copied or regrouped
    here, a writer continuing its threads holds them all). Usually one scan: the ids ride along, or the cache knows
    every stored id (no scan for them at all)."""
    tbl, keys = handle.table(), set(keys)
    if tbl is None or (not keys and not ids) or "thread" not in tbl.schema.names:
        return [], set(), set()
    held = cache.usable(handle) if cache is not None else {}
    known = _known_ids(tbl, cache)
    fresh = {k for k in keys if k not in held}
    names = sorted({k[2] for k in fresh})
    if known is not None:  # which ids are stored, and where: the writer knows the table at this version
        owned = {k for i in ids if (k := known.get(i)) is not None}
        out = _members(tbl, names, fresh)
    elif len(names) <= NAMES_PER_QUERY and len(ids) <= NAMES_PER_QUERY:
        where = [f"thread IN ({', '.join(sql_quote(n) for n in names)})"] if names else []
        got = _scan(tbl, " OR ".join(where + ([ids_filter(ids)] if ids else [])))
        wanted = set(ids)
        owned = {k for t in got if t.id in wanted and (k := thread_key(t)) is not None}
        out = [t for t in got if thread_key(t) in fresh]
    else:
        owned = stored_threads(handle, ids)
        out = _members(tbl, names, fresh)
    extra = owned - keys  # a thread a stored id leaves (its followers there change)
    kept = {k for k in keys | extra if k in held}
    fresh_extra = extra - kept
    return out + _members(tbl, sorted({k[2] for k in fresh_extra}), fresh_extra), owned, kept


def _known_ids(tbl: Any, cache: ThreadCache | None) -> dict[str, ThreadKey | None] | None:
    """Every stored id → its thread, as the writer's `cache` knows them at the table's version (call after
    `usable`); read in one narrow scan when it does not yet and the table is small enough to keep them; None when
    it cannot know (no cache, a large table, an id stored twice)."""
    if cache is None or cache.version is None:
        return None
    if cache.ids is None and tbl.count_rows() <= cache.max_rows:
        cols = tbl.search().select(["id", "scope", "scope_id", "thread"]).limit(None).to_arrow().to_pydict()
        cache.learn_ids(cols["id"], [(a, b, c) if c is not None else None
                                     for a, b, c in zip(cols["scope"], cols["scope_id"], cols["thread"])])
    return cache.ids


def rows_with_vectors(handle: Any, ids: Sequence[str]) -> list[tuple[MemoryTrace, np.ndarray]]:
    tbl = handle.table()
    if tbl is None or not ids:
        return []
    q = tbl.search().where(ids_filter(ids)).select(handle.columns.select(True)).limit(None)
    return [(from_row(r), np.asarray(r["vector"], dtype=np.float32)) for r in q.to_arrow().to_pylist()]


def _with(t: MemoryTrace, ctx: tuple[str | None, str | None]) -> MemoryTrace:
    """`t` holding the context `ctx` (itself when it already does: no copy per unchanged trace). A field-for-field
    copy with the two derived fields set: what `dataclasses.replace` gives (every other field is already as
    `__post_init__` leaves it), at a fraction of its cost per trace."""
    if (t.context, t.context_sides) == ctx:
        return t
    new = object.__new__(type(t))
    new.__dict__.update(t.__dict__, context=ctx[0], context_sides=ctx[1])
    return new


def plan(handle: Any, batch: Sequence[MemoryTrace], removed: Iterable[str] = (), setting: ContextSetting | None = None,
         keys: Iterable[ThreadKey] = (), cache: ThreadCache | None = None) -> Plan:
    """Contexts for `batch` and the stored traces whose context the write changes (`removed` ids leave); with a
    `cache`, the threads it holds are not read again, and `Plan.after` gives it the threads as written."""
    setting = setting if setting is not None else setting_of(handle)
    removed = set(removed)
    none = (None, None)
    if not setting.on:  # a setting change rewrites every row, so none holds a context while it is off
        return Plan([_with(t, none) for t in batch])
    touched = set(keys) | {k for t in batch if (k := thread_key(t)) is not None}
    rows, owned, kept = thread_rows(handle, touched, [t.id for t in batch] + sorted(removed), cache)  # ids: left
    gone = {t.id for t in batch} | removed
    olds = by_thread(t for t in rows if t.id not in gone)
    held = cache.threads if cache is not None else {}
    raw = {key: [r for r in held[key] if r[ID] not in gone] if key in owned else held[key]  # only a thread holding
           for key in sorted(kept)}  # a stored id of the write can lose a trace to it
    appends = not removed and not owned and not setting.next  # no stored trace replaced or removed, none looks ahead
    w = _Written(setting)
    for key, added in _by_key(olds, raw, by_thread(batch)):
        if key not in raw:
            w.thread(key, olds.get(key, []), added)
        elif not (appends and w.appended(key, raw[key], added)):  # a held thread only added to: its new turns only
            w.thread(key, [Stored(*r) for r in raw[key]], added)
    out = Plan([_with(t, w.computed.get(t.id, none)) for t in batch])
    order = {t.id: i for i, t in reversed(list(enumerate(w.read)))} if w.moved else {}  # followers as threads were read
    for t, vec in sorted(rows_with_vectors(handle, sorted(w.moved)), key=lambda tv: order[tv[0].id]):
        new = _with(t, w.computed.get(t.id, none))
        if new is t:
            continue
        out.followers.append(new)
        if new.text_for("dense") == t.text_for("dense"):
            out.vectors[t.id] = vec  # no re-embedding for these
    if cache is not None:
        out.after = w.after(touched | owned, out)
    return out


def _by_key(olds: dict[ThreadKey, Any], raw: dict[ThreadKey, Any], news: dict[ThreadKey, list[MemoryTrace]]):
    """Every thread a write touches (read, held or written to), with its new traces."""
    return [(key, news.get(key, [])) for key in dict.fromkeys([*olds, *raw, *news])]


class _Written:
    """The contexts of one write, thread by thread: every trace's (`computed`), the stored traces whose context
    changes (`moved`), and what each thread holds after the write (`after`, for the writer's `ThreadCache`)."""

    def __init__(self, setting: ContextSetting):
        self.setting = setting
        self.computed: dict[str, tuple[str | None, str | None]] = {}
        self.moved: set[str] = set()
        self.read: list[Stored] = []  # the stored traces of every thread recomputed whole, as read
        self.groups: dict[ThreadKey, list[Any]] = {}  # each such thread: its stored traces, then its new ones
        self.appends: dict[ThreadKey, tuple[list[tuple], list[MemoryTrace]]] = {}  # a held thread only added to

    def thread(self, key: ThreadKey, old: list[Stored], added: list[MemoryTrace]) -> None:
        """Every context of the thread recomputed."""
        group = self.groups[key] = [*old, *added]
        self.read += old
        self.computed.update(contexts(group, self.setting))
        self.moved.update(t.id for t in old if self.computed[t.id] != (t.context, t.context_sides))

    def appended(self, key: ThreadKey, old: list[tuple], new: list[MemoryTrace]) -> bool:
        """The contexts of a held thread's `new` traces when they all come after its `old` rows (held in thread
        order, `ThreadCache`), read from the last `window` active old ones alone (a window looks only back here):
        a held thread holds the contexts its last write computed, and turns after it change none. False when some
        new trace does not come after them all (or there is none)."""
        if not new or old and min(map(thread_order_key, new)) <= _row_order(old[-1]):
            return False
        tail: list[Turn] = []
        for r in reversed(old):
            if len(tail) == self.setting.window:
                break
            if r[ACTIVE]:
                tail.append(Stored(*r))
        self.computed.update(contexts([*tail[::-1], *new], self.setting, only={t.id for t in new}))
        self.appends[key] = (old, new)
        return True

    def after(self, keys: set[ThreadKey], p: Plan) -> dict[ThreadKey, list[tuple]]:
        """The threads `keys` as the write `p` leaves them, each in thread order, as rows (`as_row`); written
        traces as `p` writes them."""
        written = {t.id: t for t in p.batch}
        written.update((t.id, t) for t in p.followers)
        out: dict[ThreadKey, list[tuple]] = {k: [] for k in keys}
        for key, (old, new) in self.appends.items():
            out[key] = [*old, *(as_row(written[t.id]) for t in thread_order(new))]
        for key, group in self.groups.items():
            out[key] = sorted((as_row(written[t.id]) if t.id in written else _row(t) for t in group), key=_row_order)
        return out


def as_row(t: MemoryTrace) -> tuple:
    """A trace as the table will hold it (creation time in UTC), as a row of `Stored`'s fields: the form a writer's
    `ThreadCache` holds its threads in — a plain tuple of strings, numbers and a datetime, which the collector
    stops walking (a kept `Stored` object it would walk on every full collection)."""
    return (t.id, t.content, t.scope, t.scope_id, t.thread, t.position, t.created_at.astimezone(UTC), t.is_active,
            t.context, t.context_sides)


def _row(t: Any) -> tuple:
    return tuple(getattr(t, name) for name in STORED)


def _row_order(r: tuple) -> tuple[bool, int, datetime, str]:
    """`context.thread_order_key` of a row."""
    return (r[POSITION] is None, r[POSITION] or 0, r[CREATED_AT], r[ID])


def recorded(handle: Any) -> str | None:
    tbl = handle.table()
    return vector_metadata(tbl, handle.columns.vector).get(KEY_CONTEXT) if tbl is not None else None


__all__ = ["Plan", "Stored", "ensure_columns", "plan", "rows_with_vectors", "setting_of", "stored_threads",
           "thread_rows"]
