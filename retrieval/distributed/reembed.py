"""`python -m retrieval reembed --embedder SPEC --ray [ADDRESS]`: re-embed every trace on Ray workers.

The same promise as the normal re-embed (retrieval/store/reembed.py): all or nothing, identity updated.
1. The table's scalar columns, as of the version read, are copied Ray-side into a staging table
   (`<table>__reembed`, the normal path's name: a staging table a crash left is dropped by either path),
   ceil(N / workers) rows per fragment.
2. `lance_ray.add_columns` adds the new `vector` column to the staging table, one worker per fragment, each
   loading the new embedder once.
3. The staging table must hold every row; then, if the store's table has not moved since step 1, its rows are
   replaced by the staging rows in one overwrite commit (streamed by the driver) whose schema records the new identity
   (embedder, dim; analyzer and BM25 statistics kept). A table that moved (another writer committed meanwhile)
   is left untouched and the call fails, naming both versions: run it again.
The old vectors stay in the table's history (as-of reads). Indexes (id, ANN) are rebuilt after, as normally.
The check-then-swap in step 3 holds the store's write lock, which serialises it against this machine's writers;
a writer on another machine committing in the instant between the check and the swap would lose that commit.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any

from retrieval.distributed.cluster import dataset_uri, fragment_ids, ray_session, require_ray
from retrieval.distributed.embed import EmbedColumn
from retrieval.store.identity import StoreIdentity
from retrieval.store.memory import MemoryStore
from retrieval.store.reembed import STAGING_SUFFIX
from retrieval.store.context import KEY_CONTEXT
from retrieval.store.rows import CONTEXT_COLUMNS, SCALAR_COLUMNS, schema
from retrieval.store.threads import recorded
from retrieval.workspace.audit import AuditLog

log = logging.getLogger(__name__)


def _new_schema(ident: StoreIdentity, store: MemoryStore) -> Any:
    sch = schema(ident.dim)
    kept = {KEY_CONTEXT: recorded(store)} if recorded(store) else {}  # the context setting stays the store's
    return sch.set(sch.get_field_index("vector"), sch.field("vector").with_metadata({**ident.metadata(), **kept}))


def _stage(store: MemoryStore, lance_ray: Any, staging: str, version: int, per: int, new: StoreIdentity,
           workers: int, batch_size: int) -> None:
    """Steps 1 and 2: the staging table with the new vectors."""
    opts = store.storage_options
    have = [c for c in CONTEXT_COLUMNS if c in store.table().schema.names]  # an older table lacks them
    scalars = lance_ray.read_lance(dataset_uri(store), columns=list(SCALAR_COLUMNS) + have, storage_options=opts,
                                   dataset_options={"version": version})
    lance_ray.write_lance(scalars, dataset_uri(store, staging), mode="create", min_rows_per_file=per,
                          max_rows_per_file=per, storage_options=opts)
    log.info("staged the rows in %d fragment(s)", len(fragment_ids(store, staging)))
    lance_ray.add_columns(dataset_uri(store, staging), transform=EmbedColumn(new.embedder, new.dim),
                          read_columns=["id", "content", *(c for c in ("context", "context_sides") if c in have)],
                          concurrency=workers, batch_size=batch_size,
                          storage_options=opts)


def _swap(store: MemoryStore, staging: str, version: int, total: int, new: StoreIdentity) -> None:
    """Step 3: one overwrite commit of the store's table from the staging table, if nothing moved.

    The rows stream through the driver (Lance cannot overwrite a table with another schema from fragments
    written elsewhere: lance_ray's overwrite checks the new fragments against the old schema)."""
    import pyarrow as pa

    staged = store.db.open_table(staging)
    if staged.count_rows() != total:
        raise ValueError(f"staging table holds {staged.count_rows()} rows, expected {total}; store unchanged")
    sch = _new_schema(new, store)

    def batches():
        for b in staged.search().limit(None).to_batches(8192):  # an older table's rows: no context columns
            yield pa.RecordBatch.from_arrays([b.column(f.name).cast(f.type) if f.name in b.schema.names
                                              else pa.nulls(b.num_rows, f.type) for f in sch], schema=sch)

    with store.write_lock():
        now = store.version()
        if now != version:
            raise ValueError(f"store {store.display_uri!r} moved from table version {version} to {now} while "
                             "re-embedding (another writer committed); nothing was changed: run reembed again")
        store.table().add(pa.RecordBatchReader.from_batches(sch, batches()), mode="overwrite")  # the one swap


def _reindex(store: MemoryStore, embedder: Any) -> None:
    store.adopt_embedder(embedder)
    store.ann.forget()
    tbl = store.table()
    tbl.checkout_latest()
    try:
        tbl.create_scalar_index("id", index_type="BTREE", replace=True)
    except Exception as exc:  # an optimisation; searching works without it
        log.warning("could not index id: %s", exc)
    store.writes.maintain_index()


def ray_reembed(uri: str, embedder: Any, *, address: str | None = None, workers: int = 2, table: str = "traces",
                batch_size: int = 1024, actor: str = "ray") -> dict:
    """Re-embed the store at `uri` with `embedder` on Ray; returns {"rows", "from", "to", "seconds", "version"}."""
    _, lance_ray = require_ray(workers)
    t0 = time.perf_counter()
    store = MemoryStore(uri, table=table)  # opened as recorded, not checked: it is about to change
    store.check_writable()
    if store.table() is None:
        raise ValueError(f"store {store.display_uri!r} has no table {table!r} to re-embed")
    old = store.identity()
    assert old is not None
    new = StoreIdentity(getattr(embedder, "name", None), int(embedder.dim), old.analyzer, old.statistics)
    version = store.version()
    total = store.table().count_rows()
    if total == 0:
        raise ValueError(f"store {store.display_uri!r} holds no trace: re-embed it without --ray")
    staging, per = store.table_name + STAGING_SUFFIX, max(1, math.ceil(total / workers))
    if staging in store.db.table_names():
        log.warning("dropping a staging table %s left by an interrupted re-embed", staging)
        store.db.drop_table(staging)
    with ray_session(address, workers):
        try:
            _stage(store, lance_ray, staging, version, per, new, workers, batch_size)
            _swap(store, staging, version, total, new)
            swapped = store.version()  # the commit this entry audits (the indices after it are maintenance)
        finally:
            if staging in store.db.table_names():
                store.db.drop_table(staging)
    _reindex(store, embedder)
    out = {"rows": total, "from": old.describe(), "to": new.describe(), "seconds": time.perf_counter() - t0,
           "version": store.version()}
    AuditLog(store.uri, storage_options=store.storage_options).record(
        actor, "reembed", total, [], [], detail=f"{out['from']} -> {out['to']} (ray, {workers} worker(s))",
        version=swapped)
    return out
