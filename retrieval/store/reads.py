"""Reading traces by id, scope and substring, and streaming them out (`StoreReads`, a part of MemoryStore).

Every filter runs inside LanceDB (no Python scan of every row): the Corpus browse pushes its scope
and substring filters down and sorts only the matching ids (one Arrow column) before fetching a page.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from retrieval.store.duplicates import duplicate_ids, resolve
from retrieval.store.rows import from_row
from retrieval.types import MemoryTrace, Scope, indexed_text

if TYPE_CHECKING:
    from retrieval.store.handle import TableHandle
    from retrieval.store.row_copy import RowCopy

SCAN_BATCH = 50_000


class StoreReads:
    """Every read of a store's rows; filters are built from the handle's bound column map."""

    def __init__(self, handle: TableHandle, copy: RowCopy):
        self._handle = handle
        self._copy = copy

    def where(self, scopes: Sequence[Scope] | None = None, active_only: bool = False,
               *extra: str | None) -> str | None:
        parts = []
        sf = self._handle.columns.scope_filter(scopes)
        if sf:
            parts.append(f"({sf})")
        active = self._handle.columns.active_filter() if active_only else None
        if active:
            parts.append(active)
        parts += [f"({e})" for e in extra if e]
        return " AND ".join(parts) or None

    def count(self, scope: Scope | None = None, active_only: bool = False) -> int:
        tbl = self._handle.table()
        if tbl is None:
            return 0
        where = self.where([scope] if scope is not None else None, active_only)
        return tbl.count_rows(where) if where else tbl.count_rows()

    def _scope_column_pairs(self) -> list[tuple[str, str]]:
        tbl = self._handle.table()
        if tbl is None or tbl.count_rows() == 0:
            return []
        cols = self._handle.columns
        sel = {k: f"`{getattr(cols, k)}`" for k in ("scope", "scope_id") if getattr(cols, k)} if not cols.native \
            else ["scope", "scope_id"]
        if not sel:
            return [(cols.default_scope, cols.default_scope_id)] * tbl.count_rows()
        data = tbl.search().select(sel).limit(None).to_arrow()
        rows = [cols.normalize({"id": "", **r}) for r in data.to_pylist()] if not cols.native else None
        if rows is not None:
            return [(r["scope"], r["scope_id"]) for r in rows]
        return list(zip(data["scope"].to_pylist(), data["scope_id"].to_pylist()))

    def scopes(self) -> list[Scope]:
        return list(self.scope_counts())

    def scope_counts(self) -> dict[Scope, int]:
        cache = self._copy.current()
        if cache is not None:  # a million rows: no Python pass over every scope column
            return {Scope(*k): v for k, v in sorted(cache.scope_counts().items())}
        out: dict[tuple[str, str], int] = {}
        for pair in self._scope_column_pairs():
            out[pair] = out.get(pair, 0) + 1
        return {Scope(*k): v for k, v in sorted(out.items())}

    def fetch_rows(self, where: str | None, with_vectors: bool, limit: int | None = None) -> list[dict]:
        tbl = self._handle.table()
        if tbl is None:
            return []
        q = tbl.search().select(self._handle.columns.select(with_vectors))
        if where:
            q = q.where(where)
        # an id another writer stored twice reads as one row, the same one for every reader (store/duplicates.py)
        return resolve(self._handle.columns.normalize(r) for r in q.limit(limit).to_arrow().to_pylist())

    def get(self, ids: Sequence[str]) -> list[MemoryTrace]:
        """Traces for `ids` in the given order; unknown ids are skipped; an id stored twice reads as its winner."""
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        if not ids:
            return []
        cache = self._copy.current()
        rows = cache.rows(ids) if cache is not None else self.fetch_rows(self._handle.columns.ids_filter(ids), False)
        found = {r["id"]: from_row(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def get_with_vectors(self, ids: Sequence[str], scopes: Sequence[Scope] | None = None,
                         active_only: bool = True) -> dict[str, tuple[MemoryTrace, np.ndarray]]:
        ids = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not ids:
            return {}
        cache = self._copy.current()
        if cache is None:
            rows = self.fetch_rows(self.where(scopes, active_only, self._handle.columns.ids_filter(ids)), True)
            return {r["id"]: (from_row(r), np.asarray(r["vector"], dtype=np.float32)) for r in rows}
        # Filter on the copy, then read only the vectors from LanceDB (two columns, not nineteen).
        allowed = None if scopes is None else {(s.scope, s.scope_id) for s in scopes}
        rows = [r for r in cache.rows(ids) if (not active_only or r["is_active"])
                and (allowed is None or (r["scope"], r["scope_id"]) in allowed)]
        if not rows:
            return {}
        by_id = cache.exact_vectors([r["id"] for r in rows])
        return {r["id"]: (from_row(r), by_id[r["id"]]) for r in rows if r["id"] in by_id}

    def browse(self, scope: Scope | None = None, contains: str | None = None, limit: int = 200,
               offset: int = 0) -> list[MemoryTrace]:
        """Traces for the Corpus page, sorted by id; `contains` is a case-insensitive substring of the
        text or the id. Filtered inside LanceDB; only the matching ids are sorted here."""
        tbl = self._handle.table()
        if tbl is None or limit <= 0:
            return []
        import pyarrow.compute as pc

        where = self.where([scope] if scope is not None else None, False,
                            self._handle.columns.text_filter(contains) if contains else None)
        q = tbl.search().select({"id": f"`{self._handle.columns.id}`"})
        ids = (q.where(where) if where else q).limit(None).to_arrow()["id"]
        page = pc.take(ids, pc.sort_indices(ids))[offset:offset + limit].to_pylist()
        return self.get([str(i) for i in page])

    def all_traces(self) -> list[MemoryTrace]:
        return [from_row(r) for r in self.fetch_rows(None, False)]

    def scan_text(self, batch_size: int = SCAN_BATCH, active_only: bool = True
                  ) -> Iterator[tuple[list[str], list[str], list[Scope]]]:
        """`(ids, texts, scopes)` per batch of (active) rows, streamed: what BM25 needs, nothing more (each
        text is what the row contributes to BM25: `retrieval.types.indexed_text`)."""
        tbl = self._handle.table()
        if tbl is None:
            return
        cols = self._handle.columns
        wanted = ("id", "content", "scope", "scope_id") + tuple(c for c in ("context", "context_sides")
                                                               if cols.native and c in cols.extras)
        mapped = cols.select(False)
        sel: list[str] | dict[str, str] = list(wanted)
        if not cols.native and isinstance(mapped, dict):
            sel = {k: mapped[k] for k in wanted if k in mapped}
        q = tbl.search().select(sel)
        where = self.where(None, active_only)
        if where:
            q = q.where(where)
        memo: dict[tuple[str, str], Scope] = {}
        dups = set(duplicate_ids(tbl)) if cols.native else set()
        held: list[dict] = []  # rows of ids stored twice: their winners come last, one per id

        def emit(rows: list[dict]):
            scopes = []
            for r in rows:
                key = (r["scope"], r["scope_id"])
                s = memo.get(key)
                if s is None:
                    s = memo[key] = Scope(*key)
                scopes.append(s)
            return ([r["id"] for r in rows],
                    [indexed_text(r["content"] or "", r.get("context"), r.get("context_sides"), "bm25") for r in rows],
                    scopes)

        if dups:
            q = q.select(list(dict.fromkeys([*wanted, "last_accessed_at", "created_at", "is_active"])))
        for batch in q.limit(None).to_batches(batch_size):
            rows = batch.to_pylist()
            if not cols.native:
                rows = [cols.normalize(r) for r in rows]
            if dups:
                held += [r for r in rows if r["id"] in dups]
                rows = [r for r in rows if r["id"] not in dups]
            yield emit(rows)
        if held:
            yield emit(resolve(held))
