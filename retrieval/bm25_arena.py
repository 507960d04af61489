"""Append-only storage shared by the versions of one BM25 index (see `bm25_snapshot`).

Nothing a published version can read — postings below its per-term lengths, slots below its slot
count, term ids below its vocabulary size — is ever overwritten; growth copies into new arrays and
leaves the old ones to the readers that hold them.
"""
from __future__ import annotations

import numpy as np

from .types import Scope

UNSCOPED = -1


def _grow(arr: np.ndarray, need: int, fill=0) -> np.ndarray:
    """`arr` itself when it holds `need` entries, else a geometrically larger copy (same prefix)."""
    if need <= len(arr):
        return arr
    out = np.full(max(need, 2 * len(arr), 1024), fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


class Arena:
    """Append-only storage shared by the versions of one index. Nothing any published version can
    read (postings below its lengths, slots below its slot count) is ever overwritten."""

    def __init__(self, terms: list[str], scope_list: list[Scope]):
        self.terms = terms
        self.vocab = {t: i for i, t in enumerate(terms)}
        self.post_docs: list[np.ndarray] = [np.zeros(0, np.int32) for _ in terms]
        self.post_tf: list[np.ndarray] = [np.zeros(0, np.float64) for _ in terms]
        self.scope_list = scope_list
        self.scopes = {s: i for i, s in enumerate(scope_list)}
        self.ids: list[str] = []  # slot -> id, never cleared (liveness is per version)
        self.latest: dict[str, int] = {}  # id -> newest slot; older slots chain through `prev`
        self.prev = np.zeros(0, np.int64)
        self.doc_len = np.zeros(0, np.float64)
        self.scope_code = np.zeros(0, np.int32)
        self.doc_terms: list[np.ndarray] = []  # slot -> unique term ids (removal, explain, save)
        self.doc_tfs: list[np.ndarray] = []

    def term_id(self, term: str) -> int:
        tid = self.vocab.get(term)
        if tid is None:
            tid = len(self.terms)
            self.post_docs.append(np.zeros(0, np.int32))
            self.post_tf.append(np.zeros(0, np.float64))
            self.terms.append(term)
            self.vocab[term] = tid  # last: a reader that finds the id finds its posting arrays
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
        self.prev[slot] = self.latest.get(doc_id, -1)
        self.doc_len[slot] = float(tfs.sum())
        self.scope_code[slot] = code
        self.doc_terms.append(tids)
        self.doc_tfs.append(tfs)
        self.ids.append(doc_id)
        self.latest[doc_id] = slot  # last: the chain through `prev` is complete before it is found
        return slot

    def append_postings(self, plen: np.ndarray, t: np.ndarray, d: np.ndarray, f: np.ndarray) -> None:
        """Append (term, slot, tf) triples past each term's length in `plen` (updated in place)."""
        if len(t) == 0:
            return
        order = np.argsort(t, kind="stable")
        t, d, f = t[order], d[order], f[order]
        starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        ends = np.r_[starts[1:], len(t)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            tid = int(t[s])
            n, add = int(plen[tid]), e - s
            docs, tfs = self.post_docs[tid], self.post_tf[tid]
            if n + add > len(docs):  # grow geometrically into new arrays; old readers keep the old ones
                cap = max(n + add, 2 * len(docs), 4)
                docs = np.concatenate([docs[:n], np.empty(cap - n, np.int32)])
                tfs = np.concatenate([tfs[:n], np.empty(cap - n, np.float64)])
                self.post_docs[tid], self.post_tf[tid] = docs, tfs
            docs[n:n + add] = d[s:e]
            tfs[n:n + add] = f[s:e]
            plen[tid] = n + add
