"""One immutable version of a BM25 index (`BM25Snapshot`) over an append-only `Arena`.

The arena is shared by every version of one index: nothing a published version can read (postings
below its lengths, slots below its slot count) is ever overwritten, so a version stays valid while
writers build the next one (`bm25/versions.py`). Scoring uses the one formula in `bm25/formula.py`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

import retrieval.bm25.formula as scoring
from retrieval.cache import BoundedCache
from retrieval.bm25.arena import Arena
from retrieval.bm25.scoped import ScopeDf, scope_codes
from retrieval.bm25.topk import Postings, TopK
from retrieval.bm25.tokenizer import Tokenizer
from retrieval.types import Scope

_EMPTY_I = np.zeros(0, dtype=np.int64)
SCOPED_VIEWS = 64  # scope sets whose statistics a version keeps (least recently used dropped)


class BM25Snapshot:
    """One immutable version of a `BM25Index`: every read of one query sees the same documents."""

    def __init__(self, arena: Arena, k1: float, b: float, tokenizer: Tokenizer, live: np.ndarray,
                 df: np.ndarray, plen: np.ndarray, n_docs: int, total_len: float, version: int,
                 within: tuple[tuple[Scope, ...], np.ndarray] | None = None):
        self._a, self.k1, self.b, self.tokenizer = arena, k1, b, tokenizer
        self._live, self._df, self._plen = live, df, plen
        self._n_slots, self._n_terms = len(live), len(df)
        self._n_docs, self._total_len, self.version = n_docs, total_len, version
        self._n_scopes = len(arena.scope_list)
        self._plans = TopK(Postings(arena, live, df, plen, n_docs, len(live), total_len, k1, b, self._tid),
                           cache_saturation=within is None)
        # A scoped view (`scoped`): its scopes and their arena codes; None = the whole version.
        self.scopes: tuple[Scope, ...] | None = within[0] if within else None
        self._within: np.ndarray | None = within[1] if within else None
        # the scoped views of this version, owned by it (gone with it): SCOPED_VIEWS scope sets at most
        self.scoped_views: BoundedCache[tuple, BM25Snapshot] = BoundedCache(SCOPED_VIEWS)

    @property
    def statistics(self) -> str:
        """`store` (N/df/avgdl over every document of this version) or `scope` (a `scoped` view)."""
        return "store" if self._within is None else "scope"

    def scoped(self, scopes: Sequence[Scope]) -> BM25Snapshot:
        """This version read with the N, df and avgdl of `scopes`, holding only their documents
        (`bm25/scoped.py`); cached per scope set."""
        if self._within is not None:
            raise ValueError("this snapshot is already scoped; scope the store-wide snapshot instead")
        key = tuple(sorted(set(scopes), key=str))
        return self.scoped_views.get_or_build(key, lambda: self._scoped_view(key))

    def _scoped_view(self, scopes: tuple[Scope, ...]) -> BM25Snapshot:
        codes = scope_codes(self._a.scopes, len(self._a.scope_list), scopes)
        slots = self.scope_slots(codes)
        total = float(np.sum(self._a.doc_len[slots], dtype=np.float64)) if len(slots) else 0.0
        df = ScopeDf(self._a.postings, self._plen, len(self._df), slots)
        return BM25Snapshot(self._a, self.k1, self.b, self.tokenizer, self._live, df,  # type: ignore[arg-type]
                            self._plen, len(slots), total, self.version, within=(scopes, codes))

    def scope_slots(self, codes: np.ndarray) -> np.ndarray:
        """Live slots (ascending) whose scope code is one of `codes`."""
        return self._plans.scope_slots(codes) if len(codes) else _EMPTY_I

    def __repr__(self) -> str:
        scoped = "" if self.scopes is None else f", scopes={[str(x) for x in self.scopes]}"
        return f"BM25Snapshot(version={self.version}, docs={self._n_docs}{scoped})"

    def __len__(self) -> int:
        return self._n_docs

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.slot_of(doc_id) is not None

    def slot_of(self, doc_id: str) -> int | None:
        a = self._a
        s = a.latest.get(doc_id)
        while s is not None and s >= self._n_slots:  # re-added after this version: walk back
            p = int(a.prev[s])
            s = p if p >= 0 else None
        if s is None or not self._live[s]:
            return None
        return s if self._within is None or int(self._a.scope_code[s]) in self._within else None

    @property
    def arena(self) -> Arena:
        """The append-only storage this version reads (shared with every version of its index)."""
        return self._a

    def per_version(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, float]:
        """This version's own arrays and totals — (live, df, plen, documents, total length) — that the next version
        starts from (`bm25/versions.py` copies them; nothing here is written)."""
        return self._live, self._df, self._plen, self._n_docs, self._total_len

    def _tid(self, term: str) -> int | None:
        tid = self._a.vocab.get(term)
        return tid if tid is not None and tid < self._n_terms else None

    @property
    def avgdl(self) -> float:
        return self._total_len / self._n_docs if self._n_docs else 0.0

    def idf(self, term: str) -> float:
        tid = self._tid(term)
        return float(scoring.idf(self._n_docs, int(self._df[tid]) if tid is not None else 0))

    def search(self, query: str, top_k: int = 10, scopes: Sequence[Scope] | None = None) -> list[tuple[str, float]]:
        """Top-k `(id, score)` of documents sharing a query term; score desc, ties id asc.

        `scopes=None` searches everything; a list returns only documents added with one of
        those scopes (an unscoped document never matches a scoped search). A scoped view searches
        inside its scopes (`scopes` may narrow them, never widen).
        """
        if top_k <= 0:
            return []
        if self.scopes is not None:
            scopes = list(self.scopes) if scopes is None else [x for x in scopes if x in self.scopes]
        tokens = self.tokenizer(query or "")
        if not tokens or self._n_docs == 0:
            return []
        codes = None
        if scopes is not None:
            sc = self._a.scopes
            codes = np.asarray([sc[s] for s in scopes if s in sc and sc[s] < self._n_scopes], dtype=np.int32)
        cand, cs = self._plans.candidates(self._plans.query_terms(Counter(tokens)), top_k, codes)
        if len(cand) == 0:
            return []
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
        counts = Counter(self.tokenizer(query or ""))
        return self._plans.canonical_sum(counts, self.explain(query, id))

    def scores_for(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        """Exact BM25 score of each known id (unknown ids skipped), the query tokenized once."""
        counts = Counter(self.tokenizer(query or ""))
        slots = {i: self.slot_of(i) for i in ids if isinstance(i, str)}
        return {i: self._plans.canonical_sum(counts, self._contributions(counts, s)) for i, s in slots.items()
                if s is not None}

    def explain(self, query: str, id: str) -> dict[str, float]:
        """Per query term contribution to `id`'s score (0.0 for terms the document lacks).

        A repeated query term appears once with its contributions summed. Unknown id → KeyError.
        """
        slot = self.slot_of(id) if isinstance(id, str) else None
        if slot is None:
            raise KeyError(f"document {id!r} is not in the BM25 index")
        return self._contributions(Counter(self.tokenizer(query or "")), slot)

    def _contributions(self, counts: Counter, slot: int) -> dict[str, float]:
        a = self._a
        # only the query's terms are looked up in the document: the cost per document does not grow with its length
        # (a document indexed with its context holds several turns' words)
        terms, tfs = a.doc_terms(slot), a.doc_tfs(slot)
        avgdl = scoring.safe_avgdl(self._total_len, self._n_docs)
        out: dict[str, float] = {}
        for term, qtf in counts.items():
            tid = self._tid(term)
            at = np.flatnonzero(terms == tid) if tid is not None else np.zeros(0, np.int64)
            tf = tfs[at[0]].item() if len(at) else 0.0
            out[term] = 0.0 if tf == 0 else float(scoring.term_score(
                qtf, self._n_docs, int(self._df[tid]), tf, a.doc_len[slot], avgdl, self.k1, self.b))
        return out

    def explain_terms(self, query: str, id: str) -> list[dict[str, Any]]:
        """Each query term's score tree for `id`, as Elasticsearch's explain shows it.

        Per term: `qtf` (times in the query), `tf`, `df`, `idf`, `doc_len`, `avgdl`, `k1`, `b`, the
        length norm `1 − b + b·dl/avgdl`, `saturation` and `score = qtf·idf·saturation`. The scores sum
        to the document's BM25 score. Unknown id → KeyError.
        """
        slot = self.slot_of(id) if isinstance(id, str) else None
        if slot is None:
            raise KeyError(f"document {id!r} is not in the BM25 index")
        return self._tree(Counter(self.tokenizer(query or "")), slot)

    def explain_terms_for(self, query: str, ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """`explain_terms` of every id of `ids` this version holds (the others left out), the query read once."""
        counts = Counter(self.tokenizer(query or ""))
        slots = {i: self.slot_of(i) for i in dict.fromkeys(ids) if isinstance(i, str)}
        return {i: self._tree(counts, slot) for i, slot in slots.items() if slot is not None}

    def query_idf(self, query: str) -> tuple[dict[str, float], int]:
        """Each query term's idf in this version — terms no document holds left out — and its document count."""
        n = len(self)
        if n == 0:
            return {}, 0
        ceiling = float(scoring.idf(n, 1))  # a term in one document
        terms = {t: float(self.idf(t)) for t in dict.fromkeys(self.tokenizer(query))}
        return {t: v for t, v in terms.items() if v <= ceiling + 1e-12}, n

    def reader(self, scopes: Sequence[Scope] | None = None, statistics: str | None = None) -> BM25Snapshot:
        """This version as a query over `scopes` reads it (`BM25Index.reader`): scoped statistics when
        `statistics` is `scope` and the query is scoped, this version otherwise."""
        return self.scoped(scopes) if statistics == "scope" and scopes is not None and self._within is None else self

    def _tree(self, counts: Counter, slot: int) -> list[dict[str, Any]]:
        a = self._a
        doc_tf = dict(zip(a.doc_terms(slot).tolist(), a.doc_tfs(slot).tolist()))
        avgdl = scoring.safe_avgdl(self._total_len, self._n_docs)
        dl = float(a.doc_len[slot])
        rows = []
        for term, qtf in counts.items():
            tid = self._tid(term)
            tf = float(doc_tf.get(tid, 0.0)) if tid is not None else 0.0
            df = int(self._df[tid]) if tid is not None else 0
            idf = float(scoring.idf(self._n_docs, df))
            sat = float(scoring.saturation(tf, dl, avgdl, self.k1, self.b)) if tf else 0.0
            rows.append({"term": term, "qtf": qtf, "tf": tf, "df": df, "idf": idf, "doc_len": dl, "avgdl": avgdl,
                         "k1": self.k1, "b": self.b, "norm": 1.0 - self.b + self.b * dl / avgdl,
                         "saturation": sat, "score": qtf * idf * sat, "backend": "bm25"})
        return rows

    def stats(self) -> dict[str, Any]:
        if self._within is None:
            vocabulary, postings = int(np.count_nonzero(self._df)), int(self._df.sum())
        else:  # each live document holds one posting per distinct term
            tids = self._a.rows(self._plans.scope_slots(self._within))[1]
            vocabulary, postings = int(len(np.unique(tids))), int(len(tids))
        return {"documents": self._n_docs, "vocabulary": vocabulary, "postings": postings,
                "avgdl": round(self.avgdl, 3), "scopes": self._n_scopes if self._within is None else len(self._within),
                "k1": self.k1, "b": self.b, "version": self.version, "statistics": self.statistics}

    def live_ids(self) -> list[str]:
        ids = self._a.ids
        slots = np.flatnonzero(self._live) if self._within is None else self._plans.scope_slots(self._within)
        return [ids[s] for s in slots.tolist()]

    def live_rows(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[Scope]]:
        """Every live document in slot order, flat (saving, compaction): (ids, lengths, term ids, tfs,
        scope codes into the returned scope list, -1 unscoped), gathered vectorised."""
        a = self._a
        slots = np.flatnonzero(self._live)
        lens, tids, tfs = a.rows(slots)
        codes = a.scope_code[slots]
        used = np.unique(codes[codes >= 0])
        remap = np.full(len(a.scope_list) + 1, -1, np.int32)  # the last entry maps UNSCOPED (-1) to -1
        remap[used] = np.arange(len(used), dtype=np.int32)
        ids = a.ids
        return ([ids[s] for s in slots.tolist()], lens, tids, tfs, remap[codes],
                [a.scope_list[c] for c in used.tolist()])

    @property
    def terms(self) -> list[str]:
        return self._a.terms[: self._n_terms]
