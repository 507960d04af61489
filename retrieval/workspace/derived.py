"""Derived state follows the traces table's versions (SPEC §18): what a version holds, read pinned, and BM25 caught
up by the rows that differ between two versions.

Whoever wrote the table (this app on another machine, an agent's own LanceDB code, a Ray job), the truth is the
table at a version. `read_version` reads one version through a handle checked out at it (so the rows match the
version number, whatever commits land meanwhile), one row per id (store/duplicates.py), and gives each active
row a content hash. BM25 catches up from the version it reflects to another by the ids whose hash differs
(added, changed) or that are gone; it never assumes that its own commit was the next one.

`document_text` is the one place that says which text a row contributes to BM25 (and so to what is compared).
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from retrieval.store.duplicates import duplicate_ids, resolve
from retrieval.types import Scope, indexed_text

log = logging.getLogger(__name__)

COLUMNS = ("id", "content", "scope", "scope_id", "created_at", "last_accessed_at", "is_active")
CONTEXT = ("context", "context_sides")  # read where the table has them (an older one gains them on its next write)
BATCH = 50_000
Progress = Callable[[int, int], None]


def document_text(row: Any) -> str:
    """The text a row (a table row dict or a MemoryTrace) contributes to BM25: its own text and, when the store's
    context setting feeds BM25, the context materialised in the row (`retrieval.types.indexed_text`), so a store
    caught up from the table indexes a row exactly as its writer did."""
    return indexed_text(value(row, "content") or "", value(row, "context"), value(row, "context_sides"), "bm25")


def value(row: Any, key: str) -> Any:
    """A field of a table row (dict; a table without the context columns lacks those) or of a MemoryTrace."""
    return row.get(key) if isinstance(row, dict) else getattr(row, key)


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def row_hash(row: Any) -> str:
    """What BM25 and the facts of a trace depend on: its own text, scope, creation time and whether it is active
    (`own_hash`, what the facts follow), then — only when the row gives BM25 a context — `:` and a hash of the text
    BM25 reads, so a row whose context changed is re-indexed by every catch-up while its facts stay."""
    created = value(row, "created_at")
    content = value(row, "content") or ""
    own = _digest(content, str(value(row, "scope")), str(value(row, "scope_id")),
                  created.isoformat() if created is not None else "", "1" if value(row, "is_active") else "0")
    text = document_text(row)
    return own if text == content else f"{own}:{_digest(text)}"


def own_hash(h: str) -> str:
    """The part of a `row_hash` that a trace's own fields give (what its facts are extracted from)."""
    return h.split(":", 1)[0]


@dataclass
class VersionState:
    """One version of the table: every active id with its content hash; `docs` (id → (text, scope)) only for the
    ids asked for (the changed ones), so a million unchanged texts are never held."""

    version: int
    hashes: dict[str, str]
    docs: dict[str, tuple[str, Scope]] = field(default_factory=dict)
    duplicates: dict[str, int] = field(default_factory=dict)
    rows: int = 0


def pinned(store: Any, version: int | None = None) -> Any:
    """A handle of the store's table checked out at `version` (the newest when None): its own handle, so the
    store's keeps moving."""
    tbl = store.db.open_table(store.table_name)
    if version is None:
        tbl.checkout_latest()
        version = int(tbl.version)
    tbl.checkout(int(version))
    return tbl


def rows_of(tbl: Any, columns: Any = COLUMNS) -> Iterator[list[dict]]:
    """Batches of rows (`columns`), one row per id: an id stored twice comes last, as its winner."""
    dups = set(duplicate_ids(tbl))
    held: list[dict] = []
    names = set(tbl.schema.names)
    columns = [*columns, *(c for c in CONTEXT if c in names and c not in columns)]
    for batch in tbl.search().select(columns).limit(None).to_batches(BATCH):
        rows = batch.to_pylist()
        if dups:
            held += [r for r in rows if r["id"] in dups]
            rows = [r for r in rows if r["id"] not in dups]
        yield rows
    if held:
        yield resolve(held)


def read_version(store: Any, version: int | None = None, wanted: Callable[[str, str], bool] | None = None,
                 progress: Progress | None = None, sink: Callable[[list, list], Any] | None = None) -> VersionState:
    """The table at `version` (newest when None): active ids → hash, and (text, scope) of the active rows for which
    `wanted(id, hash)` is true — kept in `docs`, or, with `sink`, handed over batch by batch as
    `sink([(id, text, scope), …], [])` (a BM25 build that never holds every text)."""
    tbl = pinned(store, version)
    state = VersionState(int(tbl.version), {})
    state.duplicates = duplicate_ids(tbl)
    total, done = tbl.count_rows("is_active = true"), 0  # progress counts the active rows, what BM25 holds
    for rows in rows_of(tbl):
        state.rows += len(rows)
        docs = state.docs if sink is None else {}
        for r in rows:
            if not r["is_active"]:
                continue
            h = state.hashes[r["id"]] = row_hash(r)
            if wanted is not None and wanted(r["id"], h):
                docs[r["id"]] = (document_text(r), Scope(r["scope"], r["scope_id"]))
        if sink is not None and docs:
            sink([(i, text, scope) for i, (text, scope) in docs.items()], [])
        done = len(state.hashes)
        if progress:
            progress(min(done, total), total)
    if progress and total == 0:
        progress(0, 0)
    return state


def all_hashes(store: Any, version: int) -> dict[str, str]:
    """id → row hash of every row (inactive ones too) at `version`, one row per id."""
    return {r["id"]: row_hash(r) for rows in rows_of(pinned(store, version)) for r in rows}


def catch_up(index: Any, before: dict[str, str] | None, after: VersionState) -> tuple[int, int]:
    """Bring `index` (which reflects the version whose hashes are `before`; None: it is empty) to `after` in one
    batch: the ids whose hash differs are (re)added, the ids no longer active removed. Returns (added, removed)."""
    before = before or {}
    adds = [(i, text, scope) for i, (text, scope) in after.docs.items() if before.get(i) != after.hashes[i]]
    removes = [i for i in before if i not in after.hashes]
    index.update(adds, removes)
    return len(adds), len(removes)


def changed(before: dict[str, str] | None) -> Callable[[str, str], bool]:
    """`wanted` for read_version: the ids whose hash differs from `before`."""
    base = before or {}
    return lambda i, h: base.get(i) != h


def own_change(hashes: dict[str, str], rows: list[Any], removed: list[str]) -> tuple[list, list[str]]:
    """This process's own commit (the next version after the one reflected) as BM25 adds and removes, and `hashes`
    moved to it: `rows` (dicts or traces) were written, `removed` ids deleted."""
    adds, removes = [], list(removed)
    for i in removed:
        hashes.pop(i, None)
    for r in rows:
        i = str(value(r, "id"))
        if value(r, "is_active"):
            hashes[i] = row_hash(r)
            adds.append((i, document_text(r), Scope(str(value(r, "scope")), str(value(r, "scope_id")))))
        else:
            hashes.pop(i, None)
            removes.append(i)
    return adds, removes
