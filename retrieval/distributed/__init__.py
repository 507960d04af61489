"""Distributed ingest and re-embedding on Ray Data with `lance-ray` (the optional extra `pip install '.[ray]'`).

Ray workers embed traces (the store's recorded embedder, loaded once per worker) and write rows with the traces
table's exact schema straight into the LanceDB table (`lance_ray.write_lance`, one fragment per worker's share);
re-embedding stages the new vectors with `lance_ray.add_columns` and swaps them in with one overwrite commit.
Ingest never takes the app's lock (re-embedding holds it only around its check-then-swap): BM25, facts and audit
are derived from the table's versions and catch up when a store is opened.

`cluster` starts or joins a Ray cluster (a local one binds to loopback only); `embed` is what runs inside the
workers; `ingest` the `ingest --ray` path; `reembed` the `reembed --ray` path.
Importing this package imports no Ray: every function loads it when called, with an install hint.
"""
from retrieval.distributed.cluster import INSTALL_HINT, ray_session, require_ray
from retrieval.distributed.ingest import RayIngestReport, ray_ingest
from retrieval.distributed.reembed import ray_reembed

__all__ = ["INSTALL_HINT", "RayIngestReport", "ray_ingest", "ray_reembed", "ray_session", "require_ray"]
