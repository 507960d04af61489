"""Changing the store's context setting through the Workspace (SPEC §12: the one write path): refused in demo
mode and for a visitor who may not write every scope, the rows brought in step (store/recontext.py), BM25
rebuilt from them with progress, an audit entry naming the commit (the other commits it made: maintenance).
As the analyser change (`Workspace.set_analyzer`)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from retrieval.access import Access
from retrieval.sparse.build import Opened, build_bm25, open_sparse
from retrieval.store.context import ContextSetting
from retrieval.store.recontext import set_context as set_store_context
from retrieval.workspace.guard import authorise_store_wide


def set_context(ws: Any, setting: ContextSetting | None, progress: Callable[[int, int], None] | None = None, *,
                undo: bool = False, access: Access | None = None, actor: str = "local") -> dict:
    """Returns {"from", "to", "rewritten", "reembedded"} (descriptions of the settings, rows rewritten)."""
    ws._check_writable("undoing the context setting" if undo else "changing the context setting")
    authorise_store_wide(access, "changing the context setting")
    if setting is None and not undo:
        raise ValueError("give a context setting, or undo the last one")
    with ws.store.write_lock():
        ws._catch_up()
        out = set_store_context(ws.store, setting, progress, undo=undo)
        if ws.sparse == "bm25":
            ws._install(Opened(build_bm25(ws.store, progress=progress), ws.store.version(), True))
        else:  # LanceDB's FTS indexes the content column: context does not reach it
            ws._install(open_sparse(ws.store, ws.sparse, None))
        who = access.user if access is not None else actor
        # one entry per table version (SPEC §18): this one names the commit that rewrote the rows (or recorded the
        # setting); the others it made (columns added to an older table, the setting recorded) change no row and
        # are recorded as maintenance by the catch-up that follows, not left for a later one
        ws._committed(out.get("version"), who, "context", ws.store.count(), detail=f"{out['from']} -> {out['to']}")
    return out
