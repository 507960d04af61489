"""The sparse side's backends and how a store opens one.

`build` chooses and builds the backend a store records (`bm25`: our index, exact and explainable;
`fts`: LanceDB's native full-text search); `fts` adapts LanceDB FTS to the reader the search phase
calls (`search(query, top_k, scopes)`).
"""
from retrieval.sparse.build import SPARSE_BACKENDS, build_bm25, check_sparse, open_sparse, set_analyzer, sparse_status
from retrieval.sparse.fts import LanceFtsSparse

__all__ = ["LanceFtsSparse", "SPARSE_BACKENDS", "build_bm25", "check_sparse", "open_sparse", "set_analyzer",
           "sparse_status"]
