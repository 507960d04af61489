"""Building the versions of a BM25 index: the first (empty), the next after a write (appended to the shared arena,
past everything a published version reads), and a bulk build from flat rows (a loaded sidecar, a compaction).

A version is a `BM25Snapshot` (`bm25/snapshot.py`, what a search reads); this module makes them and never changes
one. `BM25Index` (`bm25/index.py`) calls it with its writer lock held and swaps the result in.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

from retrieval.bm25.arena import TF, TID, Arena
from retrieval.bm25.snapshot import BM25Snapshot
from retrieval.bm25.tokenizer import Tokenizer
from retrieval.types import Scope

_EMPTY_I = np.zeros(0, dtype=np.int64)


def _pad(arr: np.ndarray, n: int, fill=0) -> np.ndarray:
    """A private copy of `arr` with exactly `n` entries (the next version's per-version array)."""
    out = np.full(n, fill, dtype=arr.dtype)
    out[: min(n, len(arr))] = arr[:n]
    return out


def empty_snapshot(k1: float, b: float, tokenizer: Tokenizer) -> BM25Snapshot:
    return BM25Snapshot(Arena([], []), k1, b, tokenizer, np.zeros(0, bool), _EMPTY_I, _EMPTY_I, 0, 0.0, 0)


Prepared = dict[str, tuple[Counter, "Scope | None"]]


def next_version(cur: BM25Snapshot, adds: Prepared, removes: Sequence[str]) -> tuple[BM25Snapshot, int]:
    """The version after removing `removes` and (re)adding `adds` (id -> token counts, scope).

    Call with the index's writer lock held: it appends to the shared arena (past every published
    length) and returns a new version, leaving `cur` untouched. An unchanged document is skipped so
    that re-ingest causes no churn. Returns (version, how many of `removes` were live).
    """
    a = cur.arena
    encoded = _encode(a, adds)
    cur_live, cur_df, cur_plen, n_docs, total = cur.per_version()
    # Slots past cur's count that a failed batch may have left in the arena stay dead.
    live = _pad(cur_live, len(a.ids) + len(encoded), False)
    df, plen = _pad(cur_df, len(a.terms)), _pad(cur_plen, len(a.terms))
    removed = 0

    def drop(slot: int) -> None:
        nonlocal n_docs, total
        live[slot] = False
        df[a.doc_terms(slot)] -= 1  # term ids are unique per document
        n_docs -= 1
        total -= float(a.doc_len[slot])

    for doc_id in removes:
        slot = cur.slot_of(doc_id)
        if slot is not None and live[slot]:
            drop(slot)
            removed += 1
    pend_t, pend_d, pend_f = [], [], []
    for doc_id, tids, tfs, code in encoded:
        old = cur.slot_of(doc_id)
        if (old is not None and int(a.scope_code[old]) == code and np.array_equal(a.doc_terms(old), tids)
                and np.array_equal(a.doc_tfs(old), tfs)):
            continue
        if old is not None:
            drop(old)
        slot = a.new_slot(doc_id, tids, tfs, code)
        live[slot] = True
        df[tids] += 1
        n_docs += 1
        total += float(np.sum(tfs, dtype=np.float64))
        pend_t.append(tids)
        pend_d.append(np.full(len(tids), slot, np.int32))
        pend_f.append(tfs)
    nxt = BM25Snapshot(a, cur.k1, cur.b, cur.tokenizer, live[: len(a.ids)], df, plen, n_docs, total,
                       cur.version + 1)
    if pend_t:  # last: postings once appended stay, so nothing may fail after them (plen is the version's own array)
        a.append_postings(plen, np.concatenate(pend_t), np.concatenate(pend_d), np.concatenate(pend_f))
    if len(a.ids) - n_docs > max(4096, n_docs):  # mostly dead slots: move the live ones to a fresh arena
        nxt = build_snapshot(cur.k1, cur.b, cur.tokenizer, nxt.terms, nxt.live_rows(), nxt.version)
    return nxt, removed


def _encode(a: Arena, adds: Prepared) -> list[tuple[str, np.ndarray, np.ndarray, int]]:
    """Each document of `adds` as (id, term ids, tfs, scope code), its terms in their counter's order. The whole
    batch's terms are looked up in one pass; a term the arena lacks gets the next id at its first occurrence, as
    looking the terms up one by one would give it (a document read in its context holds several turns' terms)."""
    counters = [counts for counts, _ in adds.values()]
    terms = list(chain.from_iterable(counters))
    tids = list(map(a.vocab.get, terms))
    if None in tids:  # a scan in C, 4x faster than the loop below: a batch of known terms only skips the loop
        for k in [k for k, t in enumerate(tids) if t is None]:
            tids[k] = a.term_id(terms[k])
    flat_t = np.array(tids, dtype=TID)
    flat_f = np.fromiter(chain.from_iterable(c.values() for c in counters), dtype=TF, count=len(terms))
    ends = np.cumsum([len(c) for c in counters]).tolist()
    starts = [0, *ends[:-1]]
    return [(doc_id, flat_t[s:e], flat_f[s:e], a.scope_id(scope))
            for (doc_id, (_, scope)), s, e in zip(adds.items(), starts, ends)]


def build_snapshot(k1: float, b: float, tokenizer: Tokenizer, terms: Sequence[str], rows: tuple,
                   version: int) -> BM25Snapshot:
    """Bulk-build a version from `rows` = (ids, lengths, term ids, tfs, scope codes, scope list) — the
    shape of `live_rows()` and of a loaded sidecar — vectorised; unused terms are dropped."""
    ids, lens, tids, tfs, codes, scope_list = rows
    tids = np.asarray(tids, TID)
    used = np.flatnonzero(np.bincount(tids, minlength=len(terms)))
    if len(used) < len(terms):  # drop unused terms (a compaction); a saved index has none
        remap = np.full(len(terms), -1, TID)
        remap[used] = np.arange(len(used), dtype=TID)
        tids = remap[tids]
    a, df, plen = Arena.bulk([terms[i] for i in used.tolist()], list(scope_list), list(ids),
                             np.asarray(lens, np.int64), tids, tfs, codes)
    n = len(ids)
    return BM25Snapshot(a, k1, b, tokenizer, np.ones(n, bool), df, plen, n, float(a.doc_len.sum()), version)
