"""Facts follow the traces table per trace id and content (SPEC §18), whoever wrote the rows.

A small table `fact_sources` (trace id, content hash) beside the facts says which version of each trace the facts
were extracted from (the hash of the trace's own fields, `derived.own_hash`: a context change never re-extracts).
It is written after the facts, so a crash at any point leaves it behind the facts, never ahead. `reconcile`
compares it with a version of the table: traces whose hash differs (new, edited, activated) are
extracted again (an idempotent upsert that also drops their facts the new text no longer gives), traces no longer
active (deleted, deactivated) lose their facts, and any fact whose source trace is gone goes too (an orphan left by
a writer that never ran the extractor, or by a crash). Running it twice changes nothing; any process may run it.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.store.remote import open_db
from retrieval.workspace.derived import own_hash

log = logging.getLogger(__name__)

TABLE = "fact_sources"
CHUNK = 2_000


def _schema():
    import pyarrow as pa

    return pa.schema([pa.field("trace_id", pa.string()), pa.field("hash", pa.string())])


class FactSources:
    """trace id → the content hash its facts were extracted from."""

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None):
        self.uri, self.storage_options = uri, storage_options
        self._tbl: Any = None

    def _table(self, create: bool) -> Any:
        if self._tbl is None:
            db = open_db(self.uri, self.storage_options, consistent=True)
            if TABLE in db.table_names():
                self._tbl = db.open_table(TABLE)
            elif create:
                self._tbl = db.create_table(TABLE, schema=_schema(), exist_ok=True)
        return self._tbl

    def read(self) -> dict[str, str]:
        tbl = self._table(create=False)
        if tbl is None:
            return {}
        data = tbl.search().select(["trace_id", "hash"]).limit(None).to_arrow()
        return dict(zip(data.column("trace_id").to_pylist(), data.column("hash").to_pylist()))

    def mark(self, hashes: Mapping[str, str]) -> None:
        if not hashes:
            return
        import pyarrow as pa

        rows = pa.Table.from_pylist([{"trace_id": i, "hash": h} for i, h in hashes.items()], schema=_schema())
        tbl = self._table(create=True)
        tbl.merge_insert("trace_id").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    def drop(self, ids: Iterable[str]) -> None:
        from retrieval.store.rows import sql_quote

        ids = sorted(set(ids))
        tbl = self._table(create=False)
        for start in range(0, len(ids), CHUNK):
            if tbl is not None:
                tbl.delete("trace_id IN (" + ", ".join(sql_quote(i) for i in ids[start:start + CHUNK]) + ")")


@dataclass(frozen=True)
class FactsSync:
    extracted: int = 0  # traces whose facts were extracted again
    removed: int = 0  # traces whose facts went
    new_facts: int = 0
    warnings: tuple[str, ...] = ()


def fact_source_ids(facts: Any) -> set[str]:
    """Every trace id some stored fact names as a source."""
    tbl = facts._table(create=False)
    if tbl is None:
        return set()
    col = tbl.search().select(["source_trace_ids"]).limit(None).to_arrow().column("source_trace_ids")
    return {i for ids in col.to_pylist() for i in (ids or ())}


def sync(store: Any, facts: Any, sources: FactSources, extractor: Any, hashes: Mapping[str, str],
         todo: list[str], gone: list[str], version: int | None = None) -> FactsSync:
    """Extract the facts of `todo` (active at `version`, hashes given), drop those of `gone`, then mark them."""
    from retrieval.facts import extract_for_traces
    from retrieval.store.rows import from_row, ids_filter
    from retrieval.workspace.derived import pinned

    tbl = pinned(store, version)
    n, warnings = 0, list[str]()
    for start in range(0, max(len(todo), 1 if gone else 0), CHUNK):
        part = todo[start:start + CHUNK]
        rows = tbl.search().where(ids_filter(part)).limit(None).to_arrow().to_pylist() if part else []
        from retrieval.store.duplicates import resolve

        traces = [from_row(r) for r in resolve(rows) if r.get("is_active")]
        k, w = extract_for_traces(facts, extractor, traces, replace_ids=part + (gone if start == 0 else []))
        n, warnings = n + k, warnings + list(w)
        sources.mark({i: own_hash(hashes[i]) for i in part if i in hashes})
    sources.drop(gone)
    return FactsSync(len(todo), len(gone), n, tuple(warnings))


def reconcile(store: Any, facts: Any, sources: FactSources, extractor: Any, hashes: Mapping[str, str],
              version: int) -> FactsSync:
    """Bring the facts in step with the table at `version` (`hashes`: its active ids → content hash)."""
    done = sources.read()
    todo = sorted(i for i, h in hashes.items() if done.get(i) != own_hash(h))
    gone = sorted((set(done) | fact_source_ids(facts)) - set(hashes))
    if not todo and not gone:
        return FactsSync()
    log.warning("facts: %d trace(s) to extract, %d to drop, to match table version %d", len(todo), len(gone), version)
    return sync(store, facts, sources, extractor, hashes, todo, gone, version)


def pending(facts: Any, sources: FactSources, hashes: Mapping[str, str]) -> int:
    """How many traces' facts are not in step with `hashes` (new, edited, or gone)."""
    done = sources.read()
    behind = sum(done.get(i) != own_hash(h) for i, h in hashes.items())
    return behind + len((set(done) | fact_source_ids(facts)) - set(hashes))
