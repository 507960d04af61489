"""Every term's postings, appended a write at a time in one vectorised step (`PostingRuns`, held by an `Arena`).

A write's postings form one run: its (term, slot, tf) triples sorted by term, slots ascending within a term (a
write's new slots come after every older one), with the offsets of each of its distinct terms. A term's postings
are its slices of every run in order: ascending slots, as the top-k plans and the scoped df read them. Runs are
merged when the one before the newest is at most twice its size (so at most about log2(postings) runs stay), in
one vectorised pass that keeps that order; a term's postings joined across runs are remembered until the runs
change. Nothing a published version can read changes: a version reads the first `plen[term]` postings of each
term, and later writes only add postings after them. Before this, a write appended to one array per distinct term
(a Python step per term: 110k of them for 20k documents read in their context).
"""
from __future__ import annotations

import numpy as np

TID = np.int32  # term ids and posting slots (as arena.py)
TF = np.float32
MERGE_RATIO = 2  # merge the newest run into the one before while that one is at most this many times its size
_NO_DOCS, _NO_TFS = np.zeros(0, TID), np.zeros(0, TF)


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
