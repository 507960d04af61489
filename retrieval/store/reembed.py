"""Re-embed every trace of a store with another embedder (SPEC §15), in batches, with progress.

Nothing is lost if it fails midway: the new rows (same ids, text and cognitive fields, new vectors)
are written to a staging table first; the store's table is replaced only once the staging table
is complete, in one atomic LanceDB commit (an overwrite: a new table version with the new schema
and the new identity recorded on it; the old version stays in the table's history). A staging
table left by a crash is dropped by the next run. Indexes (id, ANN, full-text) are rebuilt after.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from retrieval.store.identity import StoreIdentity
from retrieval.store.rows import CONTEXT_COLUMNS, SCALAR_COLUMNS, schema
from retrieval.types import indexed_text
from retrieval.store.context import KEY_CONTEXT
from retrieval.store.threads import recorded

log = logging.getLogger(__name__)

STAGING_SUFFIX = "__reembed"
BATCH = 256


def reembed(store, embedder, progress: Callable[[int, int], None] | None = None, batch_size: int = BATCH) -> dict:
    """Re-embed `store` (a MemoryStore) with `embedder`; returns {"rows", "from", "to", "version"} (`version`: the
    table version of the swap)."""
    import pyarrow as pa

    store.check_writable()
    with store.write_lock():
        tbl = store.table()
        if tbl is None:
            raise ValueError(f"store {store.display_uri!r} has no table {store.table_name!r} to re-embed")
        old = store.identity()
        new = StoreIdentity(getattr(embedder, "name", None), int(embedder.dim), old.analyzer, old.statistics)
        sch = schema(new.dim)
        kept = {KEY_CONTEXT: recorded(store)} if recorded(store) else {}  # the context setting stays the store's
        sch = sch.set(sch.get_field_index("vector"), sch.field("vector").with_metadata({**new.metadata(), **kept}))
        staging_name = store.table_name + STAGING_SUFFIX
        if staging_name in store.db.table_names():
            log.warning("dropping a staging table %s left by an interrupted re-embed", staging_name)
            store.db.drop_table(staging_name)
        staging = store.db.create_table(staging_name, schema=sch)
        total, done = tbl.count_rows(), 0
        try:
            have = [c for c in CONTEXT_COLUMNS if c in tbl.schema.names]  # an older table lacks them
            for batch in tbl.search().select(list(SCALAR_COLUMNS) + have).limit(None).to_batches(batch_size):
                ctx = {c: batch.column(c).to_pylist() if c in have else [None] * batch.num_rows
                       for c in ("context", "context_sides")}
                texts = [indexed_text(t, c, s, "dense") for t, c, s in
                         zip(batch.column("content").to_pylist(), ctx["context"], ctx["context_sides"])]
                vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
                if vecs.shape != (len(texts), new.dim):
                    raise ValueError(f"embedder returned shape {vecs.shape}, expected ({len(texts)}, {new.dim})")
                cols = {name: batch.column(name) if name in SCALAR_COLUMNS or name in have
                        else pa.nulls(batch.num_rows, sch.field(name).type)
                        for name in SCALAR_COLUMNS + CONTEXT_COLUMNS}
                cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), new.dim)
                staging.add(pa.Table.from_pydict(cols, schema=sch))
                done += len(texts)
                if progress:
                    progress(done, total)
            if staging.count_rows() != total:
                raise ValueError(f"staging table holds {staging.count_rows()} rows, expected {total}; store unchanged")
            reader = pa.RecordBatchReader.from_batches(sch, staging.search().limit(None).to_batches(8192))
            tbl.add(reader, mode="overwrite")  # the one atomic swap
            swapped = int(tbl.version)  # the commit that re-embedded (the indexes after it change no row)
        finally:
            store.db.drop_table(staging_name)
        store.adopt_embedder(embedder)
        store.columns = store.columns.bind(tbl.schema)
        store.ann.forget()
        try:
            tbl.create_scalar_index("id", index_type="BTREE", replace=True)
        except Exception as exc:  # an optimisation; searching works without it
            log.warning("could not index id: %s", exc)
        store.writes.maintain_index()
    return {"rows": total, "from": old.describe(), "to": new.describe(), "version": swapped}
