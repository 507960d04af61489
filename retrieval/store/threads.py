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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from retrieval.store.context import (KEY_CONTEXT, ContextSetting, ThreadKey, by_thread, contexts, read_setting,
                                     thread_key)
from retrieval.store.rows import from_row, ids_filter, missing_columns, sql_quote
from retrieval.types import MemoryTrace

NAMES_PER_QUERY = 2_000


@dataclass
class Plan:
    """What one write stores: `batch` with contexts, `followers` (stored traces whose context changed), and the
    stored vector of each follower whose embedding text did not change (no re-embedding)."""

    batch: list[MemoryTrace]
    followers: list[MemoryTrace] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


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


def thread_rows(handle: Any, keys: Iterable[ThreadKey]) -> list[MemoryTrace]:
    """Every stored trace of the threads `keys` (no vectors: most are only read, never rewritten)."""
    tbl, keys = handle.table(), sorted(keys)
    if tbl is None or not keys or "thread" not in tbl.schema.names:
        return []
    wanted, names = set(keys), sorted({k[2] for k in keys})
    out = []
    for start in range(0, len(names), NAMES_PER_QUERY):  # one scan per many threads; exact keys kept below
        where = "thread IN (" + ", ".join(sql_quote(n) for n in names[start:start + NAMES_PER_QUERY]) + ")"
        q = tbl.search().where(where).select(handle.columns.select(False)).limit(None)
        out += [t for t in map(from_row, q.to_arrow().to_pylist()) if thread_key(t) in wanted]
    return out


def rows_with_vectors(handle: Any, ids: Sequence[str]) -> list[tuple[MemoryTrace, np.ndarray]]:
    tbl = handle.table()
    if tbl is None or not ids:
        return []
    q = tbl.search().where(ids_filter(ids)).select(handle.columns.select(True)).limit(None)
    return [(from_row(r), np.asarray(r["vector"], dtype=np.float32)) for r in q.to_arrow().to_pylist()]


def plan(handle: Any, batch: Sequence[MemoryTrace], removed: Iterable[str] = (),
         setting: ContextSetting | None = None, keys: Iterable[ThreadKey] = ()) -> Plan:
    """Contexts for `batch` and the stored traces whose context the write changes (`removed` ids leave)."""
    setting = setting if setting is not None else setting_of(handle)
    removed = set(removed)
    if not setting.on:  # a setting change rewrites every row, so none holds a context while it is off
        return Plan([replace(t, context=None, context_sides=None) for t in batch])
    touched = set(keys) | {k for t in batch if (k := thread_key(t)) is not None}
    touched |= stored_threads(handle, [t.id for t in batch] + sorted(removed))
    new_ids = {t.id for t in batch}
    stored = [t for t in thread_rows(handle, touched) if t.id not in new_ids and t.id not in removed]
    members = stored + list(batch)
    computed: dict[str, tuple[str | None, str | None]] = {}
    for group in by_thread(members).values():
        computed.update(contexts(group, setting))
    out = Plan([replace(t, context=computed.get(t.id, (None, None))[0],
                        context_sides=computed.get(t.id, (None, None))[1]) for t in batch])
    keep = []
    for t in stored:
        ctx, sides = computed.get(t.id, (None, None))
        if (ctx, sides) == (t.context, t.context_sides):
            continue
        new = replace(t, context=ctx, context_sides=sides)
        out.followers.append(new)
        if new.text_for("dense") == t.text_for("dense"):
            keep.append(t.id)
    out.vectors.update({t.id: v for t, v in rows_with_vectors(handle, keep)})  # no re-embedding for these
    return out


def recorded(handle: Any) -> str | None:
    tbl = handle.table()
    return vector_metadata(tbl, handle.columns.vector).get(KEY_CONTEXT) if tbl is not None else None


__all__ = ["Plan", "ensure_columns", "plan", "rows_with_vectors", "setting_of", "stored_threads", "thread_rows"]
