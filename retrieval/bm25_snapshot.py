"""One immutable version of a BM25 index (`BM25Snapshot`) over an append-only `Arena`.

The arena is shared by every version of one index: nothing a published version can read (postings
below its lengths, slots below its slot count) is ever overwritten, so a version stays valid while
writers build the next one. Scoring uses the one formula in `bm25_scoring`.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np

from . import bm25_scoring as scoring
from .bm25_tokenizer import Tokenizer
from .types import Scope

_UNSCOPED = -1
_EMPTY_I = np.zeros(0, dtype=np.int64)


def _grow(arr: np.ndarray, need: int, fill=0) -> np.ndarray:
    """`arr` itself when it holds `need` entries, else a geometrically larger copy (same prefix)."""
    if need <= len(arr):
        return arr
    out = np.full(max(need, 2 * len(arr), 1024), fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def _pad(arr: np.ndarray, n: int, fill=0) -> np.ndarray:
    """A private copy of `arr` with exactly `n` entries (the next version's per-version array)."""
    out = np.full(n, fill, dtype=arr.dtype)
    out[: min(n, len(arr))] = arr[:n]
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
            return _UNSCOPED
        code = self.scopes.get(scope)
        if code is None:
            self.scope_list.append(scope)
            code = self.scopes[scope] = len(self.scope_list) - 1
        return code

    def new_slot(self, doc_id: str, tids: np.ndarray, tfs: np.ndarray, code: int) -> int:
        slot = len(self.ids)
        self.prev = _grow(self.prev, slot + 1, -1)
        self.doc_len = _grow(self.doc_len, slot + 1)
        self.scope_code = _grow(self.scope_code, slot + 1, _UNSCOPED)
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


class BM25Snapshot:
    """One immutable version of a `BM25Index`: every read of one query sees the same documents."""

    def __init__(self, arena: Arena, k1: float, b: float, tokenizer: Tokenizer, live: np.ndarray,
                 df: np.ndarray, plen: np.ndarray, n_docs: int, total_len: float, version: int):
        self._a, self.k1, self.b, self.tokenizer = arena, k1, b, tokenizer
        self._live, self._df, self._plen = live, df, plen
        self._n_slots, self._n_terms = len(live), len(df)
        self._n_docs, self._total_len, self.version = n_docs, total_len, version
        self._n_scopes = len(arena.scope_list)
        self._sat: dict[int, np.ndarray] = {}  # saturated tf per posting (0 for dead slots), per term

    def __repr__(self) -> str:
        return f"BM25Snapshot(version={self.version}, docs={self._n_docs})"

    def __len__(self) -> int:
        return self._n_docs

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._slot_of(doc_id) is not None

    def _slot_of(self, doc_id: str) -> int | None:
        a = self._a
        s = a.latest.get(doc_id)
        while s is not None and s >= self._n_slots:  # re-added after this version: walk back
            p = int(a.prev[s])
            s = p if p >= 0 else None
        return s if s is not None and self._live[s] else None

    def _tid(self, term: str) -> int | None:
        tid = self._a.vocab.get(term)
        return tid if tid is not None and tid < self._n_terms else None

    @property
    def avgdl(self) -> float:
        return self._total_len / self._n_docs if self._n_docs else 0.0

    def idf(self, term: str) -> float:
        tid = self._tid(term)
        return float(scoring.idf(self._n_docs, int(self._df[tid]) if tid is not None else 0))

    def _score_all(self, counts: Counter) -> np.ndarray:
        """Dense score vector over slots (a repeated query token counts again)."""
        scores = np.zeros(self._n_slots, dtype=np.float64)
        if self._n_docs == 0:
            return scores
        a = self._a
        avgdl = scoring.safe_avgdl(self._total_len, self._n_docs)
        for term, qtf in counts.items():
            tid = self._tid(term)
            if tid is None or self._df[tid] == 0:
                continue
            n = int(self._plen[tid])
            docs = a.post_docs[tid][:n]
            sat = self._sat.get(tid)
            if sat is None:  # two readers may both compute it; the values are equal
                sat = scoring.saturation(a.post_tf[tid][:n], a.doc_len[docs], avgdl, self.k1, self.b)
                sat = self._sat[tid] = np.where(self._live[docs], sat, 0.0)
            scores[docs] += (qtf * scoring.idf(self._n_docs, int(self._df[tid]))) * sat
        return scores

    def search(self, query: str, top_k: int = 10, scopes: Sequence[Scope] | None = None) -> list[tuple[str, float]]:
        """Top-k `(id, score)` of documents sharing a query term; score desc, ties id asc.

        `scopes=None` searches everything; a list returns only documents added with one of
        those scopes (an unscoped document never matches a scoped search).
        """
        if top_k <= 0:
            return []
        tokens = self.tokenizer(query or "")
        if not tokens:
            return []
        scores = self._score_all(Counter(tokens))
        cand = np.flatnonzero(scores > 0)
        if scopes is not None:
            sc = self._a.scopes
            codes = [sc[s] for s in scopes if s in sc and sc[s] < self._n_scopes]
            cand = cand[np.isin(self._a.scope_code[cand], np.asarray(codes, dtype=np.int32))]
        if len(cand) == 0:
            return []
        cs = scores[cand]
        if len(cand) > 4096 and top_k < 256:
            # Cheap pre-filter: a threshold from a strided sample. If at least top_k candidates
            # clear it, the true top-k all do (the k-th largest is >= it), so the result is exact.
            sample = cs[:: len(cs) // 2048]
            thr = np.partition(sample, len(sample) - 8)[len(sample) - 8]
            keep = cs >= thr
            if int(keep.sum()) >= top_k:
                cand, cs = cand[keep], cs[keep]
        if len(cand) > top_k:
            # Everything tied with the k-th score stays in, so the id tie-break below is exact.
            kth = np.partition(cs, len(cs) - top_k)[len(cs) - top_k]
            keep = cs >= kth
            cand, cs = cand[keep], cs[keep]
        ids = self._a.ids
        hits = sorted(zip(cand.tolist(), cs.tolist()), key=lambda h: (-h[1], ids[h[0]]))[:top_k]
        return [(ids[slot], score) for slot, score in hits]

    def score(self, query: str, id: str) -> float:
        return sum(self.explain(query, id).values())

    def scores_for(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        """Exact BM25 score of each known id (unknown ids skipped), the query tokenized once."""
        counts = Counter(self.tokenizer(query or ""))
        slots = {i: self._slot_of(i) for i in ids if isinstance(i, str)}
        return {i: sum(self._contributions(counts, s).values()) for i, s in slots.items() if s is not None}

    def explain(self, query: str, id: str) -> dict[str, float]:
        """Per query term contribution to `id`'s score (0.0 for terms the document lacks).

        A repeated query term appears once with its contributions summed. Unknown id → KeyError.
        """
        slot = self._slot_of(id) if isinstance(id, str) else None
        if slot is None:
            raise KeyError(f"document {id!r} is not in the BM25 index")
        return self._contributions(Counter(self.tokenizer(query or "")), slot)

    def _contributions(self, counts: Counter, slot: int) -> dict[str, float]:
        a = self._a
        doc_tf = dict(zip(a.doc_terms[slot].tolist(), a.doc_tfs[slot].tolist()))
        avgdl = scoring.safe_avgdl(self._total_len, self._n_docs)
        out: dict[str, float] = {}
        for term, qtf in counts.items():
            tid = self._tid(term)
            tf = doc_tf.get(tid, 0.0) if tid is not None else 0.0
            out[term] = 0.0 if tf == 0 else float(scoring.term_score(
                qtf, self._n_docs, int(self._df[tid]), tf, a.doc_len[slot], avgdl, self.k1, self.b))
        return out

    def stats(self) -> dict[str, float | int]:
        return {
            "documents": self._n_docs,
            "vocabulary": int(np.count_nonzero(self._df)),
            "postings": int(self._df.sum()),  # each live document holds one posting per distinct term
            "avgdl": round(self.avgdl, 3),
            "scopes": self._n_scopes,
            "k1": self.k1,
            "b": self.b,
            "version": self.version,
        }

    def live_docs(self):
        """(id, term ids, tfs, doc length, scope) per live document, in slot order (for saving)."""
        a = self._a
        for s in np.flatnonzero(self._live).tolist():
            code = int(a.scope_code[s])
            yield a.ids[s], a.doc_terms[s], a.doc_tfs[s], float(a.doc_len[s]), (
                None if code == _UNSCOPED else a.scope_list[code])

    @property
    def terms(self) -> list[str]:
        return self._a.terms[: self._n_terms]


def empty_snapshot(k1: float, b: float, tokenizer: Tokenizer) -> BM25Snapshot:
    return BM25Snapshot(Arena([], []), k1, b, tokenizer, np.zeros(0, bool), _EMPTY_I, _EMPTY_I, 0, 0.0, 0)


Prepared = dict[str, tuple[Counter, "Scope | None"]]


def next_version(cur: BM25Snapshot, adds: Prepared, removes: Sequence[str]) -> tuple[BM25Snapshot, int]:
    """The version after removing `removes` and (re)adding `adds` (id -> token counts, scope).

    Call with the index's writer lock held: it appends to the shared arena (past every published
    length) and returns a new version, leaving `cur` untouched. An unchanged document is skipped so
    that re-ingest causes no churn. Returns (version, how many of `removes` were live).
    """
    a = cur._a
    encoded = []
    for doc_id, (counts, scope) in adds.items():
        tids = np.fromiter((a.term_id(t) for t in counts), dtype=np.int64, count=len(counts))
        tfs = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        encoded.append((doc_id, tids, tfs, a.scope_id(scope)))
    # Slots past cur's count that a failed batch may have left in the arena stay dead.
    live = _pad(cur._live, len(a.ids) + len(encoded), False)
    df, plen = _pad(cur._df, len(a.terms)), _pad(cur._plen, len(a.terms))
    n_docs, total, removed = cur._n_docs, cur._total_len, 0

    def drop(slot: int) -> None:
        nonlocal n_docs, total
        live[slot] = False
        df[a.doc_terms[slot]] -= 1  # term ids are unique per document
        n_docs -= 1
        total -= float(a.doc_len[slot])

    for doc_id in removes:
        slot = cur._slot_of(doc_id)
        if slot is not None and live[slot]:
            drop(slot)
            removed += 1
    pend_t, pend_d, pend_f = [], [], []
    for doc_id, tids, tfs, code in encoded:
        old = cur._slot_of(doc_id)
        if (old is not None and int(a.scope_code[old]) == code and np.array_equal(a.doc_terms[old], tids)
                and np.array_equal(a.doc_tfs[old], tfs)):
            continue
        if old is not None:
            drop(old)
        slot = a.new_slot(doc_id, tids, tfs, code)
        live[slot] = True
        df[tids] += 1
        n_docs += 1
        total += float(tfs.sum())
        pend_t.append(tids)
        pend_d.append(np.full(len(tids), slot, np.int32))
        pend_f.append(tfs)
    if pend_t:
        a.append_postings(plen, np.concatenate(pend_t), np.concatenate(pend_d), np.concatenate(pend_f))
    nxt = BM25Snapshot(a, cur.k1, cur.b, cur.tokenizer, live[: len(a.ids)], df, plen, n_docs, total,
                       cur.version + 1)
    if len(a.ids) - n_docs > max(4096, n_docs):  # mostly dead slots: move the live ones to a fresh arena
        nxt = build_snapshot(cur.k1, cur.b, cur.tokenizer, nxt.terms, list(a.scope_list), list(nxt.live_docs()),
                             nxt.version)
    return nxt, removed


def build_snapshot(k1: float, b: float, tokenizer: Tokenizer, terms: Sequence[str], scope_list: Sequence[Scope],
                   docs: Sequence[tuple], version: int) -> BM25Snapshot:
    """Bulk-build a version from `(id, term ids, tfs, doc length, scope)` rows; unused terms dropped."""
    all_t = np.concatenate([d[1] for d in docs]) if docs else _EMPTY_I
    used = np.unique(all_t)
    remap = np.full(len(terms) + 1, -1, np.int64)
    remap[used] = np.arange(len(used))
    a = Arena([terms[i] for i in used.tolist()], [])
    for s in scope_list:  # keep scope codes stable across a compaction
        a.scope_id(s)
    pend_t, pend_d, pend_f = [], [], []
    for doc_id, tids, tfs, _dl, scope in docs:
        tids = remap[np.asarray(tids, np.int64)]
        slot = a.new_slot(doc_id, tids, np.asarray(tfs, np.float64), a.scope_id(scope))
        pend_t.append(tids)
        pend_d.append(np.full(len(tids), slot, np.int32))
        pend_f.append(a.doc_tfs[slot])
    plen = np.zeros(len(used), np.int64)
    df = plen.copy()
    if pend_t:
        t = np.concatenate(pend_t)
        df = np.bincount(t, minlength=len(used)).astype(np.int64)
        a.append_postings(plen, t, np.concatenate(pend_d), np.concatenate(pend_f))
    n = len(docs)
    return BM25Snapshot(a, k1, b, tokenizer, np.ones(n, bool), df, plen, n, float(a.doc_len[:n].sum()), version)
