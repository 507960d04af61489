"""Incremental, vectorised, thread-safe BM25 (SPEC §3); the formula lives in `bm25/formula.py`.

Layout: one posting list per term as two numpy arrays (doc slot, term frequency) in an append-only
`Arena` (retrieval.bm25.snapshot) shared by every version of the index. A version (`BM25Snapshot`) is the arena
plus small per-version numpy arrays (live slots, df, posting lengths) and N/total length; it is never changed
after it is published. A write batch builds the next version — new postings go past every published
posting length, a removal only clears the slot in the next version's live mask — and swaps it in
under a short lock (copy-on-write, as Lucene's segment readers do). Readers take the current
version with one attribute read and never see a half-applied batch. Dead slots are compacted away
into a fresh arena once they outnumber the live ones, so updates cost amortised O(batch).
By default N, df and avgdl are global to the index (as in AgentOS) and a scope filter is applied after
scoring; with `statistics="scope"` a scoped read uses the statistics of the scopes it reads
(`bm25/scoped.py`), and `reader(scopes, "scope")` gives any caller that view.
"""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from retrieval.bm25.persist import load_index, save_index
from retrieval.bm25.scoped import check_statistics
from retrieval.bm25.snapshot import BM25Snapshot
from retrieval.bm25.versions import Prepared, build_snapshot, empty_snapshot, next_version
from retrieval.bm25.tokenizer import (STOPWORDS, TOKENIZER_VERSION, LineTokens, Tokenizer, default_tokenizer,
                                      normalize_text, reads_by_line, tokenizer_id)
from retrieval.types import Scope

__all__ = ["BM25Index", "BM25Snapshot", "STOPWORDS", "TOKENIZER_VERSION", "default_tokenizer", "normalize_text",
           "tokenizer_id"]


Doc = tuple[str, str] | tuple[str, str, Scope | None]


class BM25Index:
    """BM25 over documents added one at a time or in batches; search in milliseconds at 100k docs.

    Safe to share between threads: writes are serialised and published whole; reads use the
    current `snapshot()`. Hold one snapshot for every read of one query.
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, tokenizer: Tokenizer | None = None,
                 statistics: str = "store"):
        if not isinstance(k1, (int, float)) or not 0 <= k1 < float("inf"):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1!r}")
        if not isinstance(b, (int, float)) or not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b!r}")
        self.k1, self.b = float(k1), float(b)
        self.tokenizer: Tokenizer = tokenizer or default_tokenizer
        self.statistics = check_statistics(statistics)  # store | scope: what a scoped read is scored with
        self.source: dict | None = None  # what a loaded file says it was derived from (Workspace)
        self._lock = threading.Lock()  # serialises writers only; readers never take it
        # what a write tokenises its documents with: line by line, remembering lines, when that gives the same tokens
        # (a document read in its context repeats its neighbours' texts, themselves documents)
        self._tokenize: Tokenizer = LineTokens(self.tokenizer) if reads_by_line(self.tokenizer) else self.tokenizer
        self._snap = empty_snapshot(self.k1, self.b, self.tokenizer)

    def __repr__(self) -> str:
        return f"BM25Index(k1={self.k1}, b={self.b}, docs={len(self)}, statistics={self.statistics!r})"

    def snapshot(self) -> BM25Snapshot:
        """The current immutable version (search, scores_for, explain, `in`, len, stats)."""
        return self._snap

    def reader(self, scopes: Sequence[Scope] | None = None, statistics: str | None = None) -> BM25Snapshot:
        """The current version as a query over `scopes` reads it: scoped statistics (and only those
        scopes' documents) when `statistics` — else this index's setting — is `scope` and the query is
        scoped; the whole version otherwise. Hold it for every read of one query."""
        mode = self.statistics if statistics is None else check_statistics(statistics)
        snap = self._snap
        return snap.scoped(scopes) if mode == "scope" and scopes is not None else snap

    # Reads: each is one call on the current version, so it never mixes two versions.
    def __len__(self) -> int:
        return len(self._snap)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._snap

    @property
    def avgdl(self) -> float:
        return self._snap.avgdl

    def idf(self, term: str) -> float:
        return self._snap.idf(term)

    def search(self, query: str, top_k: int = 10, scopes: Sequence[Scope] | None = None) -> list[tuple[str, float]]:
        return self.reader(scopes).search(query, top_k, scopes)

    def score(self, query: str, id: str, scopes: Sequence[Scope] | None = None) -> float:
        return self.reader(scopes).score(query, id)

    def scores_for(self, query: str, ids: Iterable[str], scopes: Sequence[Scope] | None = None) -> dict[str, float]:
        return self.reader(scopes).scores_for(query, ids)

    def explain(self, query: str, id: str, scopes: Sequence[Scope] | None = None) -> dict[str, float]:
        return self.reader(scopes).explain(query, id)

    def explain_terms(self, query: str, id: str, scopes: Sequence[Scope] | None = None) -> list[dict[str, Any]]:
        return self.reader(scopes).explain_terms(query, id)

    def explain_terms_for(self, query: str, ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        return self._snap.explain_terms_for(query, ids)

    def query_idf(self, query: str) -> tuple[dict[str, float], int]:
        return self._snap.query_idf(query)

    def stats(self) -> dict[str, float | int]:
        return self._snap.stats()

    # ------------------------------------------------------------------ writing
    def add_document(self, id: str, text: str, scope: Scope | None = None) -> None:
        self.add_documents([(id, text, scope)])

    def add_documents(self, docs: Iterable[Doc]) -> int:
        """Add `(id, text[, scope])` tuples as one batch; re-adding an id replaces it. Returns the count."""
        docs = list(docs)
        adds = [(d[0], d[1], d[2] if len(d) > 2 else None) for d in docs]
        self._apply(adds, [])
        return len(docs)

    def remove_document(self, id: str) -> bool:
        """Remove a document; returns False when the id is unknown. No rebuild."""
        return self.remove_documents([id]) == 1

    def remove_documents(self, ids: Iterable[str]) -> int:
        """Remove documents as one batch; returns how many were in the index."""
        return self._apply([], list(ids))

    def update(self, adds: Iterable[tuple[str, str, Scope | None]], removes: Iterable[str]) -> int:
        """One batch, published whole: `(id, text, scope)` added or replaced, `removes` ids removed. Returns the
        number of documents after it (the Workspace's catch-up from one table version to another)."""
        self._apply(list(adds), list(removes))
        return len(self)

    def sync(self, traces: Iterable, *, complete: bool = False) -> int:
        """Mirror stored traces (each as `text_for("bm25")`: its text and, when the store's context setting
        feeds BM25, its context) as one atomic batch: active ones (re)added with their scope, inactive
        ones removed; with `complete=True` every other document is removed too (a full re-sync).

        Repeated ids: the last wins, as in the store. An unchanged document is left as it is.
        Returns the number of documents after the batch.
        """
        latest = {t.id: t for t in traces}
        self._apply([(t.id, t.text_for("bm25"), t.scope_key) for t in latest.values() if t.is_active],
                    [t.id for t in latest.values() if not t.is_active], complete)
        return len(self)

    def _apply(self, adds: list[tuple[str, str, Scope | None]], removes: list[str], complete: bool = False) -> int:
        """Validate and tokenize outside the lock; build and publish the next version under it."""
        prepared: Prepared = {}
        for doc_id, text, scope in adds:
            if not isinstance(doc_id, str) or not doc_id:
                raise ValueError(f"document id must be a non-empty string, got {doc_id!r}")
            if scope is not None and not isinstance(scope, Scope):
                raise ValueError(f"document {doc_id!r}: scope must be a Scope or None, got {scope!r}")
            if text is not None and not isinstance(text, str):
                raise ValueError(f"document {doc_id!r}: text must be a string, got {type(text).__name__}")
            prepared.pop(doc_id, None)  # the last occurrence wins, in its batch position
            prepared[doc_id] = (Counter(self._tokenize(text or "")), scope)
        removes = [i for i in removes if isinstance(i, str) and i not in prepared]
        with self._lock:
            if complete:
                removes = [i for i in self._snap.live_ids() if i not in prepared]
            self._snap, removed = next_version(self._snap, prepared, removes)
        return removed

    # ------------------------------------------------------------------ persistence
    def save(self, path, source: dict | None = None) -> None:
        """Write the current version to one `.npz` file atomically; `source` records what it was
        derived from (the Workspace stores the LanceDB table version)."""
        save_index(self._snap, path, tokenizer_id(self.tokenizer), source)

    @classmethod
    def load(cls, path, tokenizer: Tokenizer | None = None) -> BM25Index:
        """Load a saved index. A missing, truncated or foreign file, or one saved with another
        tokenizer, raises ValueError (the caller rebuilds)."""
        meta, rows = load_index(path, tokenizer_id(tokenizer or default_tokenizer))
        idx = cls(k1=meta["k1"], b=meta["b"], tokenizer=tokenizer)  # statistics: the store's setting (Workspace)
        idx._snap = build_snapshot(idx.k1, idx.b, idx.tokenizer, meta["terms"], rows, 0)
        idx.source = meta.get("source")
        return idx
