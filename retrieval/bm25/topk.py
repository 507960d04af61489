"""Exact BM25 top-k without scoring every posting (`TopK`, the plans a `BM25Snapshot` searches with).

Three plans, all exact and all summing a document's term scores in one canonical order (largest
possible contribution first, then term id) so that every plan — and `score`/`scores_for` — gives
the same float for the same document:

- a small scope (at most SCOPE_EXACT_MAX live documents) is scored document by document: binary
  search of each term's slot-sorted postings for the scope's slots, no pass over the index;
- otherwise terms are scored in that order into a dense vector (MaxScore, Turtle & Flood 1995):
  once the k-th best partial score θ beats R, the most the unscored terms could still add, no
  document outside the partial candidates can reach the top k, nor one inside with partial < θ − R;
  the few left (at most PRUNE_MAX_SURVIVORS) are scored exactly and the frequent terms' long
  posting lists are never walked;
- else every posting is scored (the exhaustive plan).
Measured at 1M documents in docs/BENCHMARKS.md (Scale).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

import retrieval.bm25.formula as scoring

if TYPE_CHECKING:
    from retrieval.bm25.arena import Arena

PRUNE_MIN_POSTINGS = 50_000  # below this many postings left to score, pruning is not worth a check
PRUNE_MAX_SURVIVORS = 20_000
SCOPE_EXACT_MAX = 50_000

Term = tuple[int, float, int]  # (term id, qtf·idf, posting length)


@dataclass(frozen=True)
class Postings:
    """What the plans read of one BM25 version: its arena and per-version arrays, never changed."""

    arena: Arena
    live: np.ndarray  # live slots of this version
    df: np.ndarray  # document frequency per term id
    plen: np.ndarray  # posting length per term id in this version
    n_docs: int
    n_slots: int
    total_len: float
    k1: float
    b: float
    tid: Callable[[str], int | None]  # a term's id in this version, None when it has none


class TopK:
    """The exact top-k plans over one version's postings, with that version's caches (saturated tf
    per term, live slots per scope set); shared by every reader of the version."""

    def __init__(self, postings: Postings, cache_saturation: bool = True):
        self.p = postings
        # saturated tf per posting (0 for dead slots), per term; a scoped view (many per version, each with its
        # own avgdl) keeps none: its arrays span the whole posting list and would add up across scopes
        self._sat: dict[int, np.ndarray] = {}
        self._cache_sat = cache_saturation
        self._scope_slots: dict[bytes, np.ndarray] = {}  # live slots of a set of scope codes

    def query_terms(self, counts: Counter) -> list[Term]:
        """The query's terms this version holds, in the canonical order every sum uses."""
        out = []
        for term, qtf in counts.items():
            tid = self.p.tid(term)
            if tid is not None and self.p.df[tid] > 0:
                out.append((tid, qtf * scoring.idf(self.p.n_docs, int(self.p.df[tid])), int(self.p.plen[tid])))
        return sorted(out, key=lambda t: (-t[1], t[0]))

    def canonical_sum(self, counts: Counter, contributions: dict[str, float]) -> float:
        """A document's per-term contributions (the snapshot's per-term contributions) summed in the canonical order."""
        term_of = {self.p.tid(t): t for t in counts}
        total = 0.0
        for tid, _w, _n in self.query_terms(counts):
            total += contributions[term_of[tid]]
        return total

    def _saturated(self, tid: int, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """(posting slots, saturated tf — 0 for dead slots) of term `tid` in this version, cached."""
        a = self.p.arena
        docs, tfs = a.postings.get(tid, int(self.p.plen[tid]))
        sat = self._sat.get(tid)
        if sat is None:  # two readers may both compute it; the values are equal
            sat = scoring.saturation(tfs.astype(np.float64), a.doc_len[docs], avgdl, self.p.k1, self.p.b)
            sat = np.where(self.p.live[docs], sat, 0.0)
            if self._cache_sat:
                self._sat[tid] = sat
        return docs, sat

    def _in_scope(self, slots: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
        return slots if codes is None else slots[np.isin(self.p.arena.scope_code[slots], codes)]

    def scope_slots(self, codes: np.ndarray) -> np.ndarray:
        """Live slots (ascending) whose scope is one of `codes`, cached per version."""
        key = np.sort(codes).tobytes()
        slots = self._scope_slots.get(key)
        if slots is None:
            n = self.p.n_slots
            mask = np.isin(self.p.arena.scope_code[:n], codes) & self.p.live
            slots = self._scope_slots[key] = np.flatnonzero(mask)
        return slots

    def candidates(self, terms: list[Term], top_k: int, codes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(slots, exact scores) that hold the top k in scope: every document that could be in it."""
        if not terms:
            return np.zeros(0, np.int64), np.zeros(0)
        avgdl = scoring.safe_avgdl(self.p.total_len, self.p.n_docs)
        postings = sum(t[2] for t in terms)
        if codes is not None:
            slots = self.scope_slots(codes)
            if len(slots) <= SCOPE_EXACT_MAX and len(slots) < postings:
                scores = self._exact(terms, slots, avgdl)
                keep = scores > 0
                return slots[keep], scores[keep]
        bound = [w * (self.p.k1 + 1.0) for _tid, w, _n in terms]
        partial = np.zeros(self.p.n_slots, dtype=np.float64)
        rest, left = sum(bound), postings
        for i, (tid, weight, n) in enumerate(terms):
            docs, sat = self._saturated(tid, avgdl)
            partial[docs] += weight * sat
            rest, left = rest - bound[i], left - n
            if i == len(terms) - 1 or left < PRUNE_MIN_POSTINGS:
                continue
            cand = self._in_scope(np.flatnonzero(partial > 0), codes)
            if len(cand) < top_k:
                continue
            ps = partial[cand]
            theta = np.partition(ps, len(ps) - top_k)[len(ps) - top_k]
            if theta <= rest:
                continue
            keep = cand[ps >= theta - rest - 1e-9 * (1.0 + theta)]
            if len(keep) <= PRUNE_MAX_SURVIVORS:
                return keep, self._exact(terms, keep, avgdl)
        cand = self._in_scope(np.flatnonzero(partial > 0), codes)
        return cand, partial[cand]

    def _exact(self, terms: list[Term], slots: np.ndarray, avgdl: float) -> np.ndarray:
        """Full scores of live `slots` (ascending), summed in canonical order as the dense plan does."""
        a = self.p.arena
        total = np.zeros(len(slots), dtype=np.float64)
        for tid, weight, n in terms:
            docs, tfs = a.postings.get(tid, n)
            pos = np.minimum(np.searchsorted(docs, slots), n - 1)
            hit = docs[pos] == slots
            p = pos[hit]
            sat = np.zeros(len(slots), dtype=np.float64)
            sat[hit] = scoring.saturation(tfs[p].astype(np.float64), a.doc_len[slots[hit]], avgdl,
                                          self.p.k1, self.p.b)
            total += weight * sat
        return total
