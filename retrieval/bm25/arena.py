"""Append-only storage shared by the versions of one BM25 index (see `bm25/snapshot.py`).

Nothing a published version can read — postings below its per-term lengths, slots below its slot
count, term ids below its vocabulary size — is ever overwritten; growth copies into new arrays and
leaves the old ones to the readers that hold them.

Compact at scale: every document's (term id, tf) pairs live in two flat arrays (int32, float32)
indexed by a slot pointer array, not one numpy object per document, and the postings are a few runs of
arrays grouped by term (`PostingRuns`, below): an index built in bulk (a loaded sidecar, a compaction)
is one run, and each write appends one. A million documents of ~40 distinct terms take ~0.7 GB instead of ~2.5 GB
(docs/BENCHMARKS.md, Scale).
"""
from __future__ import annotations

import numpy as np

from retrieval.types import Scope

UNSCOPED = -1
TID = np.int32  # term ids and posting slots: 2**31 distinct terms / documents per index
TF = np.float32  # term frequencies are counts, exact in float32 up to 2**24
MERGE_RATIO = 2  # merge the newest run into the one before while that one is at most this many times its size
_NO_DOCS, _NO_TFS = np.zeros(0, TID), np.zeros(0, TF)


# ---------------------------------------------------------------- postings as runs (`PostingRuns`)
# Every term's postings, appended a write at a time in one vectorised step (held by an `Arena`).
#
# A write's postings form one run: its (term, slot, tf) triples sorted by term, slots ascending within a term (a
# write's new slots come after every older one), with the offsets of each of its distinct terms. A term's postings
# are its slices of every run in order: ascending slots, as the top-k plans and the scoped df read them. Runs are
# merged when the one before the newest is at most twice its size (so at most about log2(postings) runs stay), in
# one vectorised pass that keeps that order; a term's postings joined across runs are remembered until the runs
# change. Nothing a published version can read changes: a version reads the first `plen[term]` postings of each
# term, and later writes only add postings after them. Before this, a write appended to one array per distinct term
# (a Python step per term: 110k of them for 20k documents read in their context).


class Run:
    """Postings of some writes: `docs`/`tfs` grouped by term (ascending term ids `terms`, the postings of
    `terms[i]` at `starts[i]:starts[i + 1]`), slots ascending within a term."""

    __slots__ = ("terms", "starts", "docs", "tfs")

    def __init__(self, terms: np.ndarray, starts: np.ndarray, docs: np.ndarray, tfs: np.ndarray):
        self.terms, self.starts, self.docs, self.tfs = terms, starts, docs, tfs

    @classmethod
    def grouped(cls, t: np.ndarray, d: np.ndarray, f: np.ndarray) -> Run:
        """A run of triples already sorted by term (slots ascending within a term)."""
        if len(t) == 0:
            return cls(np.zeros(0, TID), np.zeros(1, np.int64), _NO_DOCS, _NO_TFS)
        first = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        return cls(np.ascontiguousarray(t[first], TID), np.r_[first, len(t)].astype(np.int64),
                   np.ascontiguousarray(d, TID), np.ascontiguousarray(f, TF))

    def __len__(self) -> int:
        return len(self.docs)

    def counts(self) -> np.ndarray:
        return np.diff(self.starts)

    def slice(self, tid: int) -> tuple[np.ndarray, np.ndarray] | None:
        i = int(np.searchsorted(self.terms, tid))
        if i == len(self.terms) or self.terms[i] != tid:
            return None
        s, e = int(self.starts[i]), int(self.starts[i + 1])
        return self.docs[s:e], self.tfs[s:e]


def merge(older: Run, newer: Run) -> Run:
    """One run holding both, each term's postings of `older` before those of `newer` (vectorised, no sort)."""
    terms = np.union1d(older.terms, newer.terms).astype(TID)
    n_old, n_new = np.zeros(len(terms), np.int64), np.zeros(len(terms), np.int64)
    at_old, at_new = np.searchsorted(terms, older.terms), np.searchsorted(terms, newer.terms)
    n_old[at_old], n_new[at_new] = older.counts(), newer.counts()
    starts = np.r_[0, np.cumsum(n_old + n_new)]
    # each posting's place: its term's start in the merged run (+ the older run's count for the newer's) + its rank
    # within its term in its own run
    pos_old = np.repeat(starts[at_old] - older.starts[:-1], older.counts()) + np.arange(len(older))
    pos_new = np.repeat(starts[at_new] + n_old[at_new] - newer.starts[:-1], newer.counts()) + np.arange(len(newer))
    docs, tfs = np.empty(len(older) + len(newer), TID), np.empty(len(older) + len(newer), TF)
    docs[pos_old], tfs[pos_old] = older.docs, older.tfs
    docs[pos_new], tfs[pos_new] = newer.docs, newer.tfs
    return Run(terms, starts.astype(np.int64), docs, tfs)


class PostingRuns:
    """The postings of one arena as runs (the tuple is swapped whole: a reader iterates the one it read)."""

    def __init__(self, runs: tuple[Run, ...] = ()):
        self.runs = runs
        self._joined: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # term -> its postings over `runs` (a prefix)

    @classmethod
    def bulk(cls, docs: np.ndarray, tfs: np.ndarray, df: np.ndarray) -> PostingRuns:
        """One run of postings sorted by term (`df[t]` of them for term t), slots ascending within a term."""
        terms = np.flatnonzero(df).astype(TID)
        starts = np.r_[0, np.cumsum(df[terms])].astype(np.int64)
        return cls((Run(terms, starts, np.ascontiguousarray(docs, TID), np.ascontiguousarray(tfs, TF)),))

    def append(self, t: np.ndarray, d: np.ndarray, f: np.ndarray) -> None:
        """Add (term, slot, tf) triples whose slots come after every stored one; one vectorised step."""
        if len(t) == 0:
            return
        order = np.argsort(t, kind="stable")  # by term; a write's slots ascend, and stay so within a term
        runs = [*self.runs, Run.grouped(t[order], d[order], f[order])]
        while len(runs) > 1 and len(runs[-2]) <= MERGE_RATIO * len(runs[-1]):
            runs[-2:] = [merge(runs[-2], runs[-1])]
        self.runs, self._joined = tuple(runs), {}  # joins over the old runs would keep merged-away runs alive

    def get(self, tid: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The first `n` postings (slots, tfs) of term `tid`, slots ascending. A version asks for at most as many as
        were appended before it was published."""
        if n <= 0:
            return _NO_DOCS, _NO_TFS
        joined = self._joined
        hit = joined.get(tid)
        if hit is None or len(hit[0]) < n:  # two readers may both join; the arrays are equal
            parts = [p for r in self.runs if (p := r.slice(tid)) is not None]
            hit = parts[0] if len(parts) == 1 else (np.concatenate([p[0] for p in parts]),
                                                     np.concatenate([p[1] for p in parts]))
            joined[tid] = hit
        return hit[0][:n], hit[1][:n]

    def postings(self) -> int:
        return sum(len(r) for r in self.runs)


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
        them into `plen` (the next version's posting length per term, updated in place): one run (`PostingRuns`)."""
        if len(t) == 0:
            return
        self.postings.append(t, d, f)
        plen += np.bincount(t, minlength=len(plen))
