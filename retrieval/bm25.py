"""Incremental, vectorised BM25 (SPEC §3).

Score: Σ_{t in query tokens} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)),
idf = ln(1 + (N − df + 0.5)/(df + 0.5)) (Robertson & Zaragoza 2009, the Lucene "+1" form,
which keeps idf positive so "shares a term" ⇔ "score > 0").

Layout: one posting list per term as two numpy arrays (doc slot, term frequency). Adds go to a
pending buffer that is merged into the posting lists on the next search, so adding a document
never rebuilds anything; removal filters only the posting lists of that document's terms.
N, df and avgdl are global to the index (as in AgentOS); a scope filter is applied after scoring.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .types import Scope

# A compact English stopword list (the union of the classic SMART/Lucene short lists).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just let ll me more most mustn my myself
    no nor not now of off on once only or other ought our ours ourselves out over own re same shan
    she should shouldn so some such than that the their theirs them themselves then there these they
    this those through to too under until up ve very was wasn we were weren what when where which
    while who whom why will with won would wouldn you your yours yourself yourselves""".split()
)

_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)  # runs of Unicode letters or digits

Tokenizer = Callable[[str], list[str]]


def default_tokenizer(text: str) -> list[str]:
    """Lowercase, split on anything not a letter or digit, drop 1-char tokens and stopwords.

    `"INV-8842"` → `["inv", "8842"]`. No stemming (SPEC §3).
    """
    return [t for t in _TOKEN_RE.findall(text.lower()) if len(t) >= 2 and t not in STOPWORDS]


_UNSCOPED = -1


class BM25Index:
    """BM25 over documents added one at a time or in bulk; search in milliseconds at 100k docs."""

    def __init__(self, k1: float = 1.2, b: float = 0.75, tokenizer: Tokenizer | None = None):
        if not k1 >= 0:
            raise ValueError(f"k1 must be >= 0, got {k1!r}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b!r}")
        self.k1 = float(k1)
        self.b = float(b)
        self.tokenizer: Tokenizer = tokenizer or default_tokenizer
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        # term id -> doc slots (int32) and term frequencies, with spare capacity so that appends
        # are amortised O(1); only the first _plen[tid] entries are live.
        self._post_docs: list[np.ndarray] = []
        self._post_tf: list[np.ndarray] = []
        self._plen: list[int] = []
        self._df = np.zeros(0, dtype=np.int64)
        # Pending postings, merged lazily: flat (term id, slot, tf) triples.
        # Pending postings (numpy chunks), merged on the next search: (term ids, slots, tfs).
        self._pend: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # Per slot
        self._ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._doc_len = np.zeros(0, dtype=np.float64)
        self._scope_code = np.zeros(0, dtype=np.int32)
        self._doc_terms: list[np.ndarray | None] = []  # slot -> unique term ids (for removal/explain)
        self._doc_tfs: list[np.ndarray | None] = []
        self._scopes: dict[Scope, int] = {}
        self._scope_list: list[Scope] = []
        self._total_len = 0.0
        # Saturated tf per posting, tf·(k1+1)/(tf + k1·(1−b+b·dl/avgdl)), cached per term; any add or
        # remove changes avgdl, so the cache is keyed by a version bumped on every write.
        self._version = 0
        self._sat: dict[int, tuple[int, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"BM25Index(k1={self.k1}, b={self.b}, docs={len(self)})"

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot

    # ------------------------------------------------------------------ writing
    def add_document(self, id: str, text: str, scope: Scope | None = None) -> None:
        self.add_documents([(id, text, scope)])

    def add_documents(self, docs: Iterable[tuple[str, str] | tuple[str, str, Scope | None]]) -> int:
        """Add `(id, text[, scope])` tuples; re-adding an id replaces it. Returns the count added."""
        n = 0
        for doc in docs:
            doc_id, text = doc[0], doc[1]
            scope = doc[2] if len(doc) > 2 else None
            if not isinstance(doc_id, str) or not doc_id:
                raise ValueError(f"document id must be a non-empty string, got {doc_id!r}")
            if scope is not None and not isinstance(scope, Scope):
                raise ValueError(f"document {doc_id!r}: scope must be a Scope or None, got {scope!r}")
            if doc_id in self._slot:
                self.remove_document(doc_id)
            self._append(doc_id, text or "", scope)
            n += 1
        self._version += 1
        return n

    def _append(self, doc_id: str, text: str, scope: Scope | None) -> None:
        counts = Counter(self.tokenizer(text))
        slot = len(self._ids)
        self._ids.append(doc_id)
        self._slot[doc_id] = slot
        if slot >= len(self._doc_len):
            grow = max(1024, len(self._doc_len))
            self._doc_len = np.concatenate([self._doc_len, np.zeros(grow)])
            self._scope_code = np.concatenate([self._scope_code, np.full(grow, _UNSCOPED, np.int32)])
        length = float(sum(counts.values()))
        self._doc_len[slot] = length
        self._total_len += length
        if scope is None:
            code = _UNSCOPED
        else:
            code = self._scopes.get(scope)
            if code is None:
                code = self._scopes[scope] = len(self._scope_list)
                self._scope_list.append(scope)
        self._scope_code[slot] = code
        tids = np.empty(len(counts), dtype=np.int64)
        tfs = np.empty(len(counts), dtype=np.float64)
        vocab = self._vocab
        for i, (term, tf) in enumerate(counts.items()):
            tid = vocab.get(term)
            if tid is None:
                tid = vocab[term] = len(self._terms)
                self._terms.append(term)
                self._post_docs.append(np.zeros(0, dtype=np.int32))
                self._post_tf.append(np.zeros(0, dtype=np.float64))
                self._plen.append(0)
            tids[i] = tid
            tfs[i] = tf
        if len(self._terms) > len(self._df):
            self._df = np.concatenate([self._df, np.zeros(len(self._terms) - len(self._df) + 1024, np.int64)])
        np.add.at(self._df, tids, 1)
        self._doc_terms.append(tids)
        self._doc_tfs.append(tfs)
        self._pend.append((tids, np.full(len(tids), slot, dtype=np.int32), tfs))

    def remove_document(self, id: str) -> bool:
        """Remove a document; returns False when the id is unknown. No rebuild."""
        slot = self._slot.pop(id, None)
        if slot is None:
            return False
        self._flush()
        tids = self._doc_terms[slot]
        for tid in tids.tolist():
            n = self._plen[tid]
            docs, tfs = self._post_docs[tid], self._post_tf[tid]
            keep = docs[:n] != slot
            m = int(keep.sum())
            docs[:m], tfs[:m] = docs[:n][keep], tfs[:n][keep]
            self._plen[tid] = m
        np.subtract.at(self._df, tids, 1)
        self._total_len -= self._doc_len[slot]
        self._doc_len[slot] = 0.0
        self._ids[slot] = None
        self._doc_terms[slot] = None
        self._doc_tfs[slot] = None
        self._version += 1
        return True

    def _flush(self) -> None:
        """Merge pending postings into the per-term arrays (one sort, one concat per touched term)."""
        if not self._pend:
            return
        t = np.concatenate([c[0] for c in self._pend])
        d = np.concatenate([c[1] for c in self._pend])
        f = np.concatenate([c[2] for c in self._pend])
        self._pend = []
        order = np.argsort(t, kind="stable")
        t, d, f = t[order], d[order], f[order]
        starts = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        ends = np.r_[starts[1:], len(t)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            tid = int(t[s])
            n, add = self._plen[tid], e - s
            docs, tfs = self._post_docs[tid], self._post_tf[tid]
            if n + add > len(docs):  # grow geometrically
                cap = max(n + add, 2 * len(docs), 4)
                docs = np.concatenate([docs[:n], np.empty(cap - n, np.int32)])
                tfs = np.concatenate([tfs[:n], np.empty(cap - n, np.float64)])
                self._post_docs[tid], self._post_tf[tid] = docs, tfs
            docs[n:n + add] = d[s:e]
            tfs[n:n + add] = f[s:e]
            self._plen[tid] = n + add

    # ------------------------------------------------------------------ reading
    @property
    def avgdl(self) -> float:
        return self._total_len / len(self) if len(self) else 0.0

    def idf(self, term: str) -> float:
        tid = self._vocab.get(term)
        df = int(self._df[tid]) if tid is not None else 0
        return math.log(1.0 + (len(self) - df + 0.5) / (df + 0.5))

    def _allowed_codes(self, scopes: Sequence[Scope] | None) -> np.ndarray | None:
        if scopes is None:
            return None
        codes = [self._scopes[s] for s in scopes if s is not None and s in self._scopes]
        return np.asarray(codes, dtype=np.int32)

    def _score_all(self, tokens: Sequence[str]) -> np.ndarray:
        """Dense score vector over slots for a token list (repeated tokens count again)."""
        self._flush()
        n_slots = len(self._ids)
        scores = np.zeros(n_slots, dtype=np.float64)
        n = len(self)
        if n == 0:
            return scores
        avgdl = self.avgdl or 1.0
        k1, b = self.k1, self.b
        for term, qtf in Counter(tokens).items():
            tid = self._vocab.get(term)
            if tid is None:
                continue
            df = int(self._df[tid])
            if df == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            n_post = self._plen[tid]
            docs = self._post_docs[tid][:n_post]
            cached = self._sat.get(tid)
            if cached is None or cached[0] != self._version:
                tf = self._post_tf[tid][:n_post]
                sat = tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * self._doc_len[docs] / avgdl))
                self._sat[tid] = (self._version, sat)
            else:
                sat = cached[1]
            scores[docs] += (qtf * idf) * sat
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
        scores = self._score_all(tokens)
        cand = np.flatnonzero(scores > 0)
        allowed = self._allowed_codes(scopes)
        if allowed is not None:
            cand = cand[np.isin(self._scope_code[cand], allowed)]
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
            # Everything tied with the k-th score stays in, so the id tie-break is exact.
            kth = np.partition(cs, len(cs) - top_k)[len(cs) - top_k]
            keep = cs >= kth
            cand, cs = cand[keep], cs[keep]
        # Everything tied with the k-th score is still here, so sorting by (score desc, id asc) is exact.
        hits = sorted(zip(cand.tolist(), cs.tolist()), key=lambda h: (-h[1], self._ids[h[0]]))[:top_k]
        return [(self._ids[slot], score) for slot, score in hits]

    def score(self, query: str, id: str) -> float:
        return sum(self.explain(query, id).values())

    def scores_for(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        """Exact BM25 score of each known id (unknown ids skipped), the query tokenized once."""
        counts = Counter(self.tokenizer(query or ""))
        return {i: sum(self._contributions(counts, self._slot[i]).values()) for i in ids if i in self._slot}

    def explain(self, query: str, id: str) -> dict[str, float]:
        """Per query term contribution to `id`'s score (0.0 for terms the document lacks).

        A repeated query term appears once with its contributions summed. Unknown id → KeyError.
        """
        slot = self._slot.get(id)
        if slot is None:
            raise KeyError(f"document {id!r} is not in the BM25 index")
        return self._contributions(Counter(self.tokenizer(query or "")), slot)

    def _contributions(self, counts: Counter, slot: int) -> dict[str, float]:
        doc_tf = dict(zip(self._doc_terms[slot].tolist(), self._doc_tfs[slot].tolist()))
        n, avgdl = len(self), self.avgdl or 1.0
        dl = self._doc_len[slot]
        out: dict[str, float] = {}
        for term, qtf in counts.items():
            tid = self._vocab.get(term)
            tf = doc_tf.get(tid, 0.0) if tid is not None else 0.0
            if tf == 0:
                out[term] = 0.0
                continue
            df = int(self._df[tid])
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            out[term] = qtf * idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * dl / avgdl))
        return out

    def scope_of(self, id: str) -> Scope | None:
        slot = self._slot[id]
        code = int(self._scope_code[slot])
        return None if code == _UNSCOPED else self._scope_list[code]

    def ids(self) -> list[str]:
        return [i for i in self._ids if i is not None]

    def stats(self) -> dict[str, float | int]:
        self._flush()
        return {
            "documents": len(self),
            "vocabulary": int(np.count_nonzero(self._df[: len(self._terms)])),
            "postings": int(sum(self._plen)),
            "avgdl": round(self.avgdl, 3),
            "scopes": len(self._scope_list),
            "k1": self.k1,
            "b": self.b,
        }

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        """Write the index to one `.npz` file (atomically: a crash never leaves half a file)."""
        self._flush()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        live = [s for s, i in enumerate(self._ids) if i is not None]
        ids = [self._ids[s] for s in live]
        lens = np.asarray([len(self._doc_terms[s]) for s in live], dtype=np.int64)
        tids = np.concatenate([self._doc_terms[s] for s in live]) if live else np.zeros(0, np.int64)
        tfs = np.concatenate([self._doc_tfs[s] for s in live]) if live else np.zeros(0)
        meta = {
            "format": 1,
            "k1": self.k1,
            "b": self.b,
            "custom_tokenizer": self.tokenizer is not default_tokenizer,
            "terms": self._terms,
            "ids": ids,
            "scopes": [[s.scope, s.scope_id] for s in self._scope_list],
        }
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(
            tmp,
            meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
            lens=lens,
            tids=tids,
            tfs=tfs,
            doc_len=self._doc_len[live],
            scope_code=self._scope_code[live],
        )
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path, tokenizer: Tokenizer | None = None) -> "BM25Index":
        path = Path(path)
        try:
            data = np.load(path)
            meta = json.loads(bytes(data["meta"]).decode())
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{path} is not a BM25 index saved by BM25Index.save ({exc}); rebuild it") from exc
        idx = cls(k1=meta["k1"], b=meta["b"], tokenizer=tokenizer)
        idx._terms = list(meta["terms"])
        idx._vocab = {t: i for i, t in enumerate(idx._terms)}
        idx._scope_list = [Scope(a, b) for a, b in meta["scopes"]]
        idx._scopes = {s: i for i, s in enumerate(idx._scope_list)}
        ids = list(meta["ids"])
        lens, tids, tfs = data["lens"], data["tids"].astype(np.int64), data["tfs"].astype(np.float64)
        n = len(ids)
        idx._ids = ids
        idx._slot = {d: i for i, d in enumerate(ids)}
        idx._doc_len = data["doc_len"].astype(np.float64).copy()
        idx._scope_code = data["scope_code"].astype(np.int32).copy()
        idx._total_len = float(idx._doc_len.sum())
        bounds = np.r_[0, np.cumsum(lens)]
        idx._doc_terms = [tids[bounds[i] : bounds[i + 1]] for i in range(n)]
        idx._doc_tfs = [tfs[bounds[i] : bounds[i + 1]] for i in range(n)]
        idx._df = np.bincount(tids, minlength=len(idx._terms) + 1024).astype(np.int64)
        idx._post_docs = [np.zeros(0, dtype=np.int32) for _ in idx._terms]
        idx._post_tf = [np.zeros(0, dtype=np.float64) for _ in idx._terms]
        idx._plen = [0] * len(idx._terms)
        slots = np.repeat(np.arange(n, dtype=np.int32), lens)
        idx._pend = [(tids, slots, tfs)]
        idx._flush()
        return idx
