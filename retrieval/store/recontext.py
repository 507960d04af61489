"""Changing a store's context setting in place: every thread's contexts recomputed, the rows whose context
changed rewritten (re-embedded only when their embedding text changed) in one commit, then the setting
recorded with the one it replaced (one undo). The caller rebuilds BM25 from the rows (they carry it)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from retrieval.store.context import KEY_CONTEXT, KEY_CONTEXT_PREVIOUS, ContextSetting, by_thread, contexts
from retrieval.store.records import field_metadata, undo_record, write_record
from retrieval.store.rows import from_row
from retrieval.store.threads import Plan, ensure_columns, setting_of
from retrieval.types import MemoryTrace

Progress = Callable[[int, int], None]


def _threaded_rows(store: Any) -> list[tuple[MemoryTrace, np.ndarray]]:
    """Every row that has a thread or still carries a context (with its vector)."""
    tbl = store.table()
    q = tbl.search().where("thread IS NOT NULL OR context IS NOT NULL").select(store.columns.select(True))
    return [(from_row(r), np.asarray(r["vector"], dtype=np.float32)) for r in q.limit(None).to_arrow().to_pylist()]


def replan(store: Any, setting: ContextSetting) -> Plan:
    """The rows whose context changes under `setting` (as `Plan.followers`, stored vectors kept where the
    embedding text stays the same)."""
    stored = _threaded_rows(store)
    computed: dict[str, tuple[str | None, str | None]] = {}
    for group in by_thread(t for t, _ in stored).values():
        computed.update(contexts(group, setting))
    out = Plan([])
    for t, vec in stored:
        ctx, sides = computed.get(t.id, (None, None))
        if (ctx, sides) != (t.context, t.context_sides):
            new = replace(t, context=ctx, context_sides=sides)
            out.followers.append(new)
            if new.text_for("dense") == t.text_for("dense"):
                out.vectors[t.id] = vec
    return out


def set_context(store: Any, setting: ContextSetting | None, progress: Progress | None = None, *,
                undo: bool = False) -> dict:
    """Record `setting` (or, with `undo`, the one the current replaced) and bring every row in step with it.
    Returns {"from", "to", "rewritten", "reembedded", "version"} (`version`: the commit that rewrote the rows, else
    the one that recorded the setting; None for a store without a table). ValueError when there is nothing to
    undo."""
    store.check_writable()
    with store.write_lock():
        before = setting_of(store)
        if store.table() is None:  # an empty store: what its table will record
            if undo or setting is None:
                raise ValueError(f"store {store.display_uri!r} has no context setting to undo")
            store.new_context = setting
            return {"from": before.describe(), "to": setting.describe(), "rewritten": 0, "reembedded": 0,
                    "version": None}
        if undo:
            previous = field_metadata(store).get(KEY_CONTEXT_PREVIOUS)
            if not field_metadata(store).get(KEY_CONTEXT):
                raise ValueError(f"store {store.display_uri!r} has no context setting to undo")
            setting = ContextSetting.from_text(previous)
        assert setting is not None
        tbl = store.table()
        ensure_columns(store, tbl)
        p = replan(store, setting)
        rows = store.writes.embed_rows(p, progress)
        committed = None
        if rows:
            with store.row_copy.write(tbl) as change:
                tbl.merge_insert("id").when_matched_update_all().execute(rows)
                change["upserts"] = rows
                committed = store.writes.last_commit = int(tbl.version)
        elif progress:
            progress(0, 0)
        if undo:
            undo_record(store, KEY_CONTEXT, KEY_CONTEXT_PREVIOUS, "context setting")
        else:
            write_record(store, KEY_CONTEXT, KEY_CONTEXT_PREVIOUS, setting.to_text(), "a context setting")
    return {"from": before.describe(), "to": setting.describe(), "rewritten": len(rows),
            "reembedded": len(rows) - len(p.vectors),
            "version": committed if committed is not None else store.version()}


__all__ = ["replan", "set_context"]
