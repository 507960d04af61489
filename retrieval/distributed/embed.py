"""What runs inside the Ray workers: the store's embedder (built once per worker process from the recorded
identity, never shipped pickled) turning `content` into the `vector` column of the traces table's schema.

Vectors are checked as the normal write path checks them (`store.writes.check_vectors`): NaN, infinite or
all-zero vectors fail the job, so nothing is committed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from retrieval.cache import ProcessCache
from retrieval.store.identity import StoreIdentity, embedder_for
from retrieval.store.rows import to_row
from retrieval.store.writes import check_vectors
from retrieval.types import MemoryTrace, indexed_text

EMBEDDERS: ProcessCache[tuple[str | None, int], Any] = ProcessCache("this worker's embedders by (name, dim)")


@dataclass(frozen=True)
class _Ref:
    id: str


def worker_embedder(name: str | None, dim: int) -> Any:
    """The store's embedder in this worker process: loaded once, reused by every batch."""
    return EMBEDDERS.get_or_build((name, dim), lambda: _checked_embedder(name, dim))


def _checked_embedder(name: str | None, dim: int) -> Any:
    emb = embedder_for(StoreIdentity(name, dim))
    if int(emb.dim) != dim:
        raise ValueError(f"embedder {name!r} on this worker makes {emb.dim}-d vectors, the store holds {dim}-d")
    return emb


def vector_array(texts: list[str], ids: list[str], name: str | None, dim: int) -> Any:
    """The texts' vectors as an Arrow fixed-size list column (float32 × dim)."""
    import pyarrow as pa

    emb = worker_embedder(name, dim)
    vecs = np.asarray(emb.embed(texts), dtype=np.float32)
    if vecs.shape != (len(texts), dim):
        raise ValueError(f"embedder returned shape {vecs.shape}, expected ({len(texts)}, {dim})")
    check_vectors(vecs, cast(list[MemoryTrace], [_Ref(i) for i in ids]), emb)
    return pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), type=pa.float32()), dim)


def embed_rows(batch: Any, name: str | None, dim: int, schema: Any) -> Any:
    """A `map_batches` function: scalar columns in, rows in the traces table's exact schema out. A task, not an
    actor: it fuses with the write into one task per block, and Ray reuses worker processes, so each worker
    still loads the model once (`worker_embedder`)."""
    import pyarrow as pa

    vec = vector_array(batch.column("content").to_pylist(), batch.column("id").to_pylist(), name, dim)
    cols = [vec if f.name == "vector" else batch.column(f.name).cast(f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


class EmbedColumn:
    """An `add_columns` transform: a RecordBatch of `id`, `content` (and `context`, `context_sides` where the table
    has them) in, one vector column named `column` out."""

    def __init__(self, name: str | None, dim: int, column: str = "vector"):
        self.name, self.dim, self.column = name, dim, column

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        texts = batch.column("content").to_pylist()
        if "context" in batch.schema.names:  # what the row gives the embedding (`types.indexed_text`), as normal
            texts = [indexed_text(t, c, s, "dense") for t, c, s in zip(texts, batch.column("context").to_pylist(),
                                                                        batch.column("context_sides").to_pylist())]
        vec = vector_array(texts, batch.column("id").to_pylist(), self.name, self.dim)
        return pa.RecordBatch.from_arrays([vec], schema=pa.schema([pa.field(self.column, vec.type)]))


def scalar_table(traces: list[MemoryTrace], schema: Any) -> Any:
    """The traces' rows without vectors, typed by `schema` (the table's) minus its vector column."""
    import pyarrow as pa

    none = np.zeros(0, dtype=np.float32)
    rows = [{k: v for k, v in to_row(t, none).items() if k != "vector"} for t in traces]
    return pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name != "vector"]))
