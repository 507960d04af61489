"""Append-only storage shared by the versions of one BM25 index (see `bm25/snapshot.py`).

Nothing a published version can read — postings below its per-term lengths, slots below its slot
count, term ids below its vocabulary size — is ever overwritten; growth copies into new arrays and
leaves the old ones to the readers that hold them.

Compact at scale: every document's (term id, tf) pairs live in two flat arrays (int32, float32)
indexed by a slot pointer array, not one numpy object per document, and the postings are a few runs of
arrays grouped by term (`bm25/runs.py`): an index built in bulk (a loaded sidecar, a compaction) is one run,
and each write appends one. A million documents of ~40 distinct terms take ~0.7 GB instead of ~2.5 GB
(docs/BENCHMARKS.md, Scale).
"""
from __future__ import annotations

import numpy as np

from retrieval.bm25.runs import TF, TID, PostingRuns
from retrieval.types import Scope

UNSCOPED = -1
# TID (int32): term ids and posting slots, 2**31 distinct terms / documents per index; TF (float32): term
# frequencies are counts, exact in float32 up to 2**24
__all__ = ["TF", "TID", "UNSCOPED", "Arena", "gather"]


def _grow(arr: np.ndarray, need: int, fill=0) -> np.ndarray:
    """`arr` itself when it holds `need` entries, else a geometrically larger copy (same prefix)."""
    if need <= len(arr):
        return arr
    out = np.full(max(need, 2 * len(arr), 1024), fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def gather(ptr: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, flat positions) of the CSR rows `slots` of pointer array `ptr`, vectorised."""
    starts, lens = ptr[slots], ptr[slots + 1] - ptr[slots]
    total = int(lens.sum())
    if total == 0:
        return lens, np.zeros(0, np.int64)
    offsets = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens)
    return lens, offsets + np.arange(total, dtype=np.int64)


class Arena:
    """Append-only storage shared by the versions of one index. Nothing any published version can
    read (postings below its lengths, slots below its slot count) is ever overwritten."""

    def __init__(self, terms: list[str], scope_list: list[Scope]):
        self.terms = terms
        self.vocab = {t: i for i, t in enumerate(terms)}
        self.postings = PostingRuns()  # every term's postings (slots ascending): `postings.get(term id, n)`
        self.scope_list = scope_list
        self.scopes = {s: i for i, s in enumerate(scope_list)}
        self.ids: list[str] = []  # slot -> id, never cleared (liveness is per version)
        self.latest: dict[str, int] = {}  # id -> newest slot; older slots chain through `prev`
        self.prev = np.zeros(0, np.int64)
        self.doc_len = np.zeros(0, np.float64)
        self.scope_code = np.zeros(0, np.int32)
        # slot -> its unique term ids and tfs (removal, explain, save): rows of a flat CSR
        self.ptr = np.zeros(1, np.int64)
        self.flat_t = np.zeros(0, TID)
        self.flat_f = np.zeros(0, TF)

    @classmethod
    def bulk(cls, terms: list[str], scope_list: list[Scope], ids: list[str], lens: np.ndarray,
             flat_t: np.ndarray, flat_f: np.ndarray, codes: np.ndarray) -> tuple[Arena, np.ndarray, np.ndarray]:
        """An arena holding `ids` as slots 0..n-1 (CSR rows `lens` of `flat_t`/`flat_f`), built
        vectorised. Returns (arena, df, posting lengths). Term ids must be < len(terms)."""
        a = cls(terms, list(scope_list))
        n = len(ids)
        a.ids = list(ids)
        a.latest = dict(zip(a.ids, range(n)))
        a.prev = np.full(n, -1, np.int64)
        a.ptr = np.r_[0, np.cumsum(lens, dtype=np.int64)]
        a.flat_t, a.flat_f = np.ascontiguousarray(flat_t, TID), np.ascontiguousarray(flat_f, TF)
        slot_of = np.repeat(np.arange(n, dtype=TID), lens)
        a.doc_len = np.bincount(slot_of, weights=a.flat_f, minlength=n).astype(np.float64)
        a.scope_code = np.asarray(codes, np.int32)
        df = np.bincount(a.flat_t, minlength=len(terms)).astype(np.int64)
        order = np.argsort(a.flat_t, kind="stable")  # postings by term, slots ascending within a term
        docs = slot_of[order]
        del slot_of  # each temporary goes as soon as it is used: the peak at 1M is ~1 GB, not ~1.5
        tfs = a.flat_f[order]
        del order
        a.postings = PostingRuns.bulk(docs, tfs, df)
        return a, df, df.copy()

    def doc_terms(self, slot: int) -> np.ndarray:
        return self.flat_t[self.ptr[slot]:self.ptr[slot + 1]]

    def doc_tfs(self, slot: int) -> np.ndarray:
        return self.flat_f[self.ptr[slot]:self.ptr[slot + 1]]

    def rows(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lengths, term ids, tfs) of `slots`, concatenated in order (saving, compaction)."""
        lens, pos = gather(self.ptr, np.asarray(slots, np.int64))
        return lens, self.flat_t[pos], self.flat_f[pos]

    def term_id(self, term: str) -> int:
        tid = self.vocab.get(term)
        if tid is None:
            tid = len(self.terms)
            self.terms.append(term)
            self.vocab[term] = tid  # last: a reader that finds the id finds its term
        return tid

    def scope_id(self, scope: Scope | None) -> int:
        if scope is None:
            return UNSCOPED
        code = self.scopes.get(scope)
        if code is None:
            self.scope_list.append(scope)
            code = self.scopes[scope] = len(self.scope_list) - 1
        return code

    def new_slot(self, doc_id: str, tids: np.ndarray, tfs: np.ndarray, code: int) -> int:
        slot = len(self.ids)
        self.prev = _grow(self.prev, slot + 1, -1)
        self.doc_len = _grow(self.doc_len, slot + 1)
        self.scope_code = _grow(self.scope_code, slot + 1, UNSCOPED)
        start = int(self.ptr[slot])
        end = start + len(tids)
        # Grown arrays are published before the pointer that makes the new row visible; a reader
        # holding the old arrays only reads rows below its version's slot count, which both hold.
        self.flat_t, self.flat_f = _grow(self.flat_t, end), _grow(self.flat_f, end)
        self.flat_t[start:end], self.flat_f[start:end] = tids, tfs
        ptr = _grow(self.ptr, slot + 2)
        ptr[slot + 1] = end
        self.ptr = ptr
        self.prev[slot] = self.latest.get(doc_id, -1)
        self.doc_len[slot] = float(np.sum(tfs, dtype=np.float64))
        self.scope_code[slot] = code
        self.ids.append(doc_id)
        self.latest[doc_id] = slot  # last: the chain through `prev` is complete before it is found
        return slot

    def append_postings(self, plen: np.ndarray, t: np.ndarray, d: np.ndarray, f: np.ndarray) -> None:
        """Append (term, slot, tf) triples — slots past every stored one — after each term's postings, and count
        them into `plen` (the next version's posting length per term, updated in place): one run (`bm25/runs.py`)."""
        if len(t) == 0:
            return
        self.postings.append(t, d, f)
        plen += np.bincount(t, minlength=len(plen))
