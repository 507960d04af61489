"""The checks every Workspace write makes with the store's write lock held, before anything is
written: may this writer touch every trace the write affects (the stored trace of each id as well as
the new one), and is the store still the one this Workspace opened (same embedder, same analyser).

Ids are global and every write is an upsert on `id`, so checking only the scopes a writer names
would let an upload reusing another scope's id move that trace into the writer's scope and
overwrite it. A refusal names the ids but never the scope that holds them.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from retrieval.access import Access, AccessDenied, check_write
from retrieval.types import MemoryTrace, Scope

LOOKUP_BATCH = 1_000  # ids per look-up: a 100k-trace upload never becomes one 100k-id filter


def authorise(access: Access | None, store: Any, new: Iterable[MemoryTrace] = (), ids: Iterable[str] = ()) -> None:
    """Raise `ReadOnlyError` / `AccessDenied` unless `access` may write the scopes of the `new`
    traces and of the stored traces that the new ids and `ids` name. `None` is local use: allowed."""
    if access is None:
        return
    new = list(new)
    check_write(access, {Scope(t.scope, t.scope_id) for t in new})
    wanted = list(dict.fromkeys([*(t.id for t in new), *ids]))
    if access.scopes is None or not wanted:
        return
    taken = sorted(t.id for n in range(0, len(wanted), LOOKUP_BATCH) for t in store.get(wanted[n:n + LOOKUP_BATCH])
                   if not access.sees(Scope(t.scope, t.scope_id)))
    if taken:
        shown = ", ".join(repr(i) for i in taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise AccessDenied(f"nothing was written: the id(s) {shown} belong to traces you may not change; "
                           "give your traces other ids")


def authorise_store_wide(access: Access | None, action: str) -> None:
    """Re-embedding or changing the analyser rewrites every scope: only unrestricted writers."""
    if access is None:
        return
    check_write(access, ())
    if access.scopes is not None:
        raise AccessDenied(f"nothing was changed: {action} rewrites every scope of the store, and "
                           f"{access.user} may write only some of them")


def check_same_store(store: Any, analyzer: str | None) -> None:
    """Refuse to write when another process changed the store's identity since this one opened it:
    a re-embed to another model (the new rows would carry the old model's vectors) or another
    analyser (this process's BM25 would index them with the old one)."""
    from retrieval.store.identity import check_embedder

    ident = store.identity()
    if ident is None:
        return
    try:
        check_embedder(ident, store.embedder, store.display_uri)
    except ValueError as exc:
        raise ValueError(f"nothing was written: the store changed under this process ({exc}); "
                         "reopen it (restart the app or the command) to write with its new embedder") from None
    if analyzer is not None and ident.analyzer and ident.analyzer != analyzer:
        raise ValueError(f"nothing was written: the store's BM25 analyser changed to {ident.analyzer!r} in "
                         f"another process (this one indexes with {analyzer!r}); reopen it to write")
