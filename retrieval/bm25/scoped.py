"""BM25 statistics of a set of scopes: one version read as if it held only those scopes' documents.

A store-wide index computes idf from N and df over every document and length norms from the
store's avgdl, so a scoped search is scored with numbers that depend on other scopes' documents:
they leak (a word only another user wrote has df > 0 here) and move (another user's upload shifts
this user's scores). `BM25Snapshot.scoped` makes a version of the same arena whose statistics are,
for the scopes it reads,

    N      = live documents in those scopes
    df(t)  = live documents in those scopes that contain t
    avgdl  = their total length ÷ N

and which holds only those documents: a search, a score, an explanation or a membership test of a
document outside them sees nothing. Exact, like the store-wide plans (`bm25/topk.py` runs unchanged
on these numbers). df is counted per query term on first use and cached in the view; views are
cached per scope set on their version (`BM25Snapshot.scoped`), so repeated queries pay once.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from retrieval.bm25.arena import PostingRuns
from retrieval.types import Scope

STATISTICS = ("store", "scope")  # N/df/avgdl over every document (the seed's) | over the scopes a query reads


def check_statistics(name: str) -> str:
    if name not in STATISTICS:
        raise ValueError(f"BM25 statistics {name!r} is not one of {', '.join(STATISTICS)} "
                         "(store: over every document, as AgentOS; scope: over the scopes a query reads)")
    return name


class ScopeDf:
    """df per term id over a fixed ascending array of live slots, counted on first use (an array-like
    for the plans: `len` is the vocabulary size, `[tid]` the count)."""

    def __init__(self, postings: PostingRuns, plen: np.ndarray, n_terms: int, slots: np.ndarray):
        self._postings, self._plen, self._slots, self._n = postings, plen, slots, n_terms
        self._cache: dict[int, int] = {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, tid: int) -> int:
        tid = int(tid)
        hit = self._cache.get(tid)
        if hit is None:  # two readers may both count; the values are equal
            hit = self._cache[tid] = self._count(tid)
        return hit

    def _count(self, tid: int) -> int:
        n, slots = int(self._plen[tid]), self._slots
        if n == 0 or len(slots) == 0:
            return 0
        docs = self._postings.get(tid, n)[0]  # ascending slots, dead ones included; `slots` holds live ones only
        if n <= len(slots):
            pos = np.minimum(np.searchsorted(slots, docs), len(slots) - 1)
            return int(np.count_nonzero(slots[pos] == docs))
        pos = np.minimum(np.searchsorted(docs, slots), n - 1)
        return int(np.count_nonzero(docs[pos] == slots))


def scope_codes(known: Mapping[Scope, int], n_scopes: int, scopes: Sequence[Scope]) -> np.ndarray:
    """The codes (ascending) of the `scopes` a version knows — `known` maps scope → code, codes below
    `n_scopes` exist in it; an unknown scope holds no document."""
    return np.asarray(sorted({known[s] for s in scopes if s in known and known[s] < n_scopes}), np.int32)
