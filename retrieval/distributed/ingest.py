"""`python -m retrieval ingest FILE --ray [ADDRESS]`: embed on Ray workers, write rows Ray-side.

The file is parsed on the driver (the project's loaders); the rows travel to `workers` Ray tasks (each worker
process loads the model once) and `lance_ray.write_lance` writes them with the table's schema, ceil(N / workers)
rows per fragment (so `reembed --ray` later gets one fragment per worker).

Ids already in the store: the same as a normal ingest, an upsert. When none of the file's ids is stored the
rows are appended Ray-side in one commit. When some are, the embedded rows go to a staging table first and one
`merge_insert` on `id` from the driver replaces the stored ones and adds the rest (one commit; the staging table
is dropped, and a staging table a crash left is dropped by the next run). Ids repeated in the file: the last
wins, as in the normal path. A writer on another machine that inserts one of these ids between our id check
and our commit leaves that id stored twice, as two concurrent normal upserts on object storage would (Lance
accepts both commits); resolving such duplicates is the readers' rule, not this module's.

The store's identity is honoured: an embedder named on the command line must be the one the store records
(`check_embedder`, the same refusal as the normal ingest); a new store records the embedder that built it.
BM25, facts and audit are not written row by row here: they catch up from the table when the store is opened.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from retrieval.distributed.cluster import dataset_uri, fragment_ids, ray_session, require_ray
from retrieval.distributed.embed import embed_rows, scalar_table
from retrieval.store.identity import check_embedder
from retrieval.store.memory import MemoryStore
from retrieval.store.threads import setting_of
from retrieval.store.rows import ids_filter
from retrieval.types import MemoryTrace
from retrieval.workspace.audit import AuditLog, parts_of, scopes_of

log = logging.getLogger(__name__)

STAGING_SUFFIX = "__ray_ingest"
ID_CHUNK = 2000


@dataclass(frozen=True)
class RayIngestReport:
    written: int
    replaced: int  # of `written`, ids that were already stored (an upsert)
    duplicates: tuple[str, ...]  # ids repeated in the input (last kept)
    workers: int
    fragments: int  # new fragments the Ray write made
    version: int  # the table version after the commit
    seconds: float
    embedder: str


def _last_wins(traces: list[MemoryTrace]) -> tuple[list[MemoryTrace], tuple[str, ...]]:
    unique: dict[str, MemoryTrace] = {}
    dups: list[str] = []
    for t in traces:
        if not isinstance(t, MemoryTrace):
            raise ValueError(f"ray_ingest takes MemoryTrace objects, got {type(t).__name__}")
        t.validate()
        if t.id in unique:
            dups.append(t.id)
            del unique[t.id]
        unique[t.id] = t
    return list(unique.values()), tuple(sorted(set(dups)))


def stored_ids(tbl: Any, ids: list[str]) -> set[str]:
    """Which of `ids` the table holds (looked up in chunks: a filter list stays small)."""
    found: set[str] = set()
    for i in range(0, len(ids), ID_CHUNK):
        chunk = ids[i:i + ID_CHUNK]
        rows = tbl.search().where(ids_filter(chunk)).select(["id"]).limit(None).to_arrow()
        found.update(rows.column("id").to_pylist())
    return found


def _check_identity(store: MemoryStore) -> None:
    """The store's embedder (named or recorded) must be the one the table records now (another writer may have
    re-embedded it since it was opened): the same refusal as the normal ingest."""
    ident = store.identity()
    if ident is not None and ident.embedder is not None:
        check_embedder(ident, store.embedder, store.display_uri)


def _open(uri: str, embedder: Any, table: str, batch: list[MemoryTrace]) -> tuple[MemoryStore, Any]:
    store = MemoryStore(uri, embedder=embedder, table=table)  # a named embedder is checked on open
    store.check_writable()
    if setting_of(store).on and any(t.thread is not None for t in batch):  # before anything is written
        raise ValueError(f"store {store.display_uri!r} reads traces in their context and this batch has threads: "
                         "their contexts are assembled by the normal ingest only, so nothing was written; ingest "
                         "them without --ray, or turn context off first (`python -m retrieval context --off`)")
    tbl = store.table(create=True)  # a new store records the embedder that builds it
    _check_identity(store)
    return store, tbl


def _embedded(ray: Any, rows: Any, store: MemoryStore, schema: Any, workers: int, batch_size: int) -> Any:
    ds = ray.data.from_arrow(rows).repartition(workers)
    kw = {"name": getattr(store.embedder, "name", None), "dim": store.dim, "schema": schema}
    return ds.map_batches(embed_rows, fn_kwargs=kw, batch_size=batch_size, batch_format="pyarrow",
                          compute=ray.data.TaskPoolStrategy(size=workers), num_cpus=1)


def _upsert_from_staging(store: MemoryStore, tbl: Any, write: Any) -> None:
    """Write the rows to a staging table (Ray-side), then one merge_insert on id into the store's table."""
    staging = store.table_name + STAGING_SUFFIX
    if staging in store.db.table_names():
        log.warning("dropping a staging table %s left by an interrupted Ray ingest", staging)
        store.db.drop_table(staging)
    try:
        import pyarrow as pa

        write(dataset_uri(store, staging), "create")
        staged = store.db.open_table(staging)
        _check_identity(store)  # just before the one commit
        reader = pa.RecordBatchReader.from_batches(tbl.schema, staged.search().limit(None).to_batches(8192))
        tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(reader)
    finally:
        if staging in store.db.table_names():
            store.db.drop_table(staging)


def ray_ingest(uri: str, traces: list[MemoryTrace], *, embedder: Any = None, address: str | None = None,
               workers: int = 2, table: str = "traces", batch_size: int = 256, actor: str = "ray") -> RayIngestReport:
    """Embed and write `traces` into the store at `uri` on Ray (upsert by id); see the module docstring."""
    _, lance_ray = require_ray(workers)
    t0 = time.perf_counter()
    batch, dups = _last_wins(list(traces))
    if not batch:
        raise ValueError("no trace to ingest; nothing was written")
    store, tbl = _open(uri, embedder, table, batch)
    schema = tbl.schema
    before = fragment_ids(store)
    replaced = stored_ids(tbl, [t.id for t in batch])
    per = max(1, math.ceil(len(batch) / workers))
    with ray_session(address, workers) as ray:
        ds = _embedded(ray, scalar_table(batch, schema), store, schema, workers, batch_size)

        def write(target: str, mode: str) -> None:
            lance_ray.write_lance(ds, target, mode=mode, schema=schema, min_rows_per_file=per,
                                  max_rows_per_file=per, storage_options=store.storage_options)

        if replaced:
            _upsert_from_staging(store, tbl, write)
        else:
            write(dataset_uri(store), "append")
    version = store.version()
    fragments = len(fragment_ids(store) - before) if not replaced else 0
    AuditLog(store.uri, storage_options=store.storage_options).record(
        actor, "ingest", len(batch), scopes_of(batch), [t.id for t in batch], detail=f"ray, {workers} worker(s)",
        version=version, parts=parts_of(batch))
    return RayIngestReport(written=len(batch), replaced=len(replaced), duplicates=dups, workers=workers,
                           fragments=fragments, version=version, seconds=time.perf_counter() - t0,
                           embedder=str(getattr(store.embedder, "name", None)))

