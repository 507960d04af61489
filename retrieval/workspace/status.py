"""What a store is, as `Workspace.status()` reports it (the Home page, `python -m retrieval status`): rows, BM25
documents, facts, scopes, the ANN index, whether BM25 and facts are in step with the table, versions and tags."""
from __future__ import annotations

import logging
from typing import Any

from retrieval.access import for_visitor  # re-exported: the projection lives with the access rules
from retrieval.sparse.build import sparse_status

log = logging.getLogger(__name__)
__all__ = ["for_visitor", "status_of"]


def status_of(ws: Any) -> dict[str, Any]:
    """`ws` a `Workspace` (its public face: root, store, bm25, facts, facts_pending, bm25_version, read_only,
    sparse). A local path that does not
    exist is reported as such (`exists: False`) and is not created."""
    root = ws.root
    if root is not None and not root.exists():
        return {"uri": ws.store.display_uri, "exists": False, "traces": 0, "bm25_documents": 0, "facts": 0,
                "scopes": {}, "ann_index": False, "ann_type": None, "unindexed_rows": 0, "in_step": True,
                "bm25_in_step": True, "table_version": 0, "bm25_table_version": 0, "facts_pending": 0,
                "read_only": False}
    state = ws.store.index_state()
    bm25 = ws.bm25
    try:
        n_facts = ws.facts.count()
    except Exception as exc:  # status must render even when the fact table is unreadable
        log.warning("fact count failed: %s", exc)
        n_facts = 0
    version = ws.store.version()
    pending = ws.facts_pending
    bm25_in_step = version == ws.bm25_version and len(bm25) == ws.store.count(active_only=True)
    return {
        "uri": ws.store.display_uri,
        "exists": True,
        "traces": state["rows"],
        "bm25_documents": len(bm25),
        "facts": n_facts,
        "scopes": {str(k): v for k, v in ws.store.scope_counts().items()},
        "ann_index": state["ann_index"],
        "ann_type": state["ann_type"],
        "unindexed_rows": state["unindexed_rows"],
        "in_step": bm25_in_step and pending == 0,
        "bm25_in_step": bm25_in_step,
        "table_version": version, "version": version, "tags": ws.store.tags(),  # SPEC §16
        "bm25_table_version": ws.bm25_version,
        "facts_pending": pending,
        "read_only": ws.read_only,
        **sparse_status(ws.store, ws.sparse),
        "context": _context(ws.store),
    }


def _context(store: Any) -> str:
    """The recorded context setting in words (store/context.py), or why it cannot be read."""
    from retrieval.store.threads import setting_of

    try:
        return setting_of(store).describe()
    except Exception as exc:  # status must render whatever the table's metadata holds
        log.warning("context setting unreadable: %s", exc)
        return f"unreadable ({type(exc).__name__})"
