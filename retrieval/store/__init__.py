"""The dense side (SPEC §2): `MemoryStore`, traces and their vectors in a LanceDB table.

`memory` is the store itself; `rows` the Arrow schema, trace <-> row conversion and quoted SQL
filters; `reads` and `writes` its read and write paths; `ann` the IVF index and query plan;
`row_copy`, `spill` and `dense` the in-memory row copy that serves large stores; `cognitive` the
AgentOS cognitive score; `identity` what built a store (embedder, analyser); `lock` the writers'
lock; `remote` object-store options; `columns` reading a foreign table through a column map;
`reembed` replacing every vector with another embedder's.
"""
from retrieval.store.memory import MemoryStore
from retrieval.store.rows import ids_filter, scope_filter, sql_quote

__all__ = ["MemoryStore", "ids_filter", "scope_filter", "sql_quote"]
