"""Sparse search on LanceDB's native full-text index: for stores too big to hold BM25 in memory, or remote.

The same read interface the pipeline uses on BM25 (`search` with a scope filter, `scores_for`,
`explain_terms`, `in`, `len`, `snapshot()`), plus no-op write hooks so a Workspace can keep it in
step the way it keeps BM25 (LanceDB indexes its own rows; new rows are found at once as an
unindexed tail, folded in by `optimize()` once it grows).

Scores are LanceDB's BM25 (its own k1/b and statistics), not ours; the query is first run through
the store's analyzer so both backends search the same terms. Explanations are best-effort: LanceDB
returns only a document's score, so each term's share is that term searched alone against that one
document (BM25 is a sum over terms, so the rows add up); tf, df, idf and the length norm are not
exposed and are None in the rows.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence

from retrieval.bm25.tokenizer import make_tokenizer
from retrieval.store.versions import optimize
from retrieval.types import Scope

log = logging.getLogger(__name__)

BACKEND = "lancedb-fts"
NOTE = "LanceDB full-text search returns only the score; tf, df, idf and length norm are not exposed"
OPTIMIZE_TAIL = 10_000  # unindexed rows a search scans flat before the tail is folded in


def fts_config(analyzer: str):
    from lancedb.index import FTS

    return FTS(stem=analyzer == "english-stem", language="English", remove_stop_words=True, lower_case=True,
               ascii_folding=True, with_position=False)


class LanceFtsSparse:
    """Sparse reads on a MemoryStore's table through LanceDB's FTS index (built when missing)."""

    backend = BACKEND
    source = None

    def __init__(self, store, analyzer: str | None = None):
        self.store = store
        ident = store.identity()
        self.analyzer = analyzer or (ident.analyzer if ident is not None else "plain")
        self.tokenizer = make_tokenizer(self.analyzer)
        self._ready = False

    def __repr__(self) -> str:
        return f"LanceFtsSparse(uri={self.store.display_uri!r}, analyzer={self.analyzer!r})"

    def snapshot(self) -> LanceFtsSparse:
        return self  # LanceDB reads a consistent table version per query

    def reader(self, scopes: Sequence[Scope] | None = None, statistics: str | None = None) -> LanceFtsSparse:  # noqa: ARG002
        """LanceDB's FTS keeps its own store-wide statistics: a query reads it as it is."""
        return self

    def query_idf(self, query: str) -> tuple[dict[str, float], int]:  # noqa: ARG002
        """LanceDB's FTS keeps no idf this process can read: `({}, 0)`."""
        return {}, 0

    @property
    def _text(self) -> str:
        return self.store.columns.text

    def _tbl(self):
        tbl = self.store.table()
        if tbl is not None and not self._ready:
            self.ensure_index(tbl)
        return tbl

    def ensure_index(self, tbl=None, replace: bool = False) -> bool:
        """Build the FTS index on the text column when it has none (a read-only table must have one)."""
        tbl = tbl or self.store.table()
        if tbl is None:
            return False
        has = any(self._text in list(getattr(i, "columns", [])) and "FTS" in str(getattr(i, "index_type", "")).upper()
                  for i in tbl.list_indices())
        if not has or replace:
            if self.store.read_only:
                raise ValueError(f"table {self.store.table_name!r} has no full-text index on {self._text!r} and is "
                                 "read-only here; create one with LanceDB, or use the in-memory BM25 (--sparse bm25)")
            with self.store.write_lock():
                tbl.create_index(self._text, config=fts_config(self.analyzer), replace=True)
        self._ready = True
        return True

    def _query(self, query: str) -> str:
        return " ".join(self.tokenizer(query or ""))

    def _run(self, text: str, where: str | None, limit: int) -> list[tuple[str, float]]:
        tbl = self._tbl()
        if tbl is None or not text or limit <= 0:
            return []
        q = tbl.search(text, query_type="fts", fts_columns=self._text)
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select({"id": f"`{self.store.columns.id}`", "_score": "_score"}).limit(limit).to_arrow()
        out = [(str(i), float(s)) for i, s in zip(rows["id"].to_pylist(), rows["_score"].to_pylist())]
        out.sort(key=lambda h: (-h[1], h[0]))
        return out

    # ------------------------------------------------------------------ reads (the pipeline's interface)
    def search(self, query: str, top_k: int = 10, scopes: Sequence[Scope] | None = None) -> list[tuple[str, float]]:
        """Top-k `(id, score)` of active documents matching a query term, within `scopes`."""
        return self._run(self._query(query), self.store.reads.where(scopes, True), top_k)

    def scores_for(self, query: str, ids: Iterable[str]) -> dict[str, float]:
        ids = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not ids:
            return {}
        where = self.store.reads.where(None, True, self.store.columns.ids_filter(ids))
        return dict(self._run(self._query(query), where, len(ids)))

    def score(self, query: str, id: str) -> float:
        return self.scores_for(query, [id]).get(id, 0.0)

    def explain_terms(self, query: str, id: str) -> list[dict]:
        """Per query term: LanceDB's score of that term alone for `id` (best-effort; see NOTE)."""
        if id not in self:
            raise KeyError(f"document {id!r} is not in the full-text index")
        rows = []
        for term, qtf in Counter(self.tokenizer(query or "")).items():
            s = self._run(term, self.store.reads.where(None, True, self.store.columns.ids_filter([id])), 1)
            rows.append({"term": term, "qtf": qtf, "tf": None, "df": None, "idf": None, "doc_len": None,
                         "avgdl": None, "k1": None, "b": None, "norm": None, "saturation": None,
                         "score": qtf * (s[0][1] if s else 0.0), "backend": BACKEND, "note": NOTE})
        return rows

    def explain_terms_for(self, query: str, ids: Iterable[str]) -> dict[str, list[dict]]:
        """`explain_terms` of every id of `ids` the index holds (the others left out): one query per term."""
        ids = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        if not ids:
            return {}
        where = self.store.reads.where(None, True, self.store.columns.ids_filter(ids))
        held = set(self.store.get_with_vectors(ids, scopes=None, active_only=True))  # `in self`, in one read
        counts = Counter(self.tokenizer(query or ""))
        per_term = {term: dict(self._run(term, where, len(ids))) for term in counts}
        return {i: [{"term": term, "qtf": qtf, "tf": None, "df": None, "idf": None, "doc_len": None, "avgdl": None,
                     "k1": None, "b": None, "norm": None, "saturation": None,
                     "score": qtf * per_term[term].get(i, 0.0), "backend": BACKEND, "note": NOTE}
                    for term, qtf in counts.items()] for i in ids if i in held}

    def explain(self, query: str, id: str) -> dict[str, float]:
        return {r["term"]: r["score"] for r in self.explain_terms(query, id)}

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False
        tbl = self.store.table()
        return tbl is not None and tbl.count_rows(self.store.reads.where(None, True,
                                                                    self.store.columns.ids_filter([doc_id]))) > 0

    def __len__(self) -> int:
        return self.store.count(active_only=True)

    def stats(self) -> dict:
        tbl = self.store.table()
        state = {"backend": BACKEND, "documents": len(self), "analyzer": self.analyzer, "unindexed_rows": 0}
        for idx in tbl.list_indices() if tbl is not None else []:
            if self._text in list(getattr(idx, "columns", [])) and "FTS" in str(getattr(idx, "index_type", "")).upper():
                state["unindexed_rows"] = int(getattr(tbl.index_stats(idx.name), "num_unindexed_rows", 0) or 0)
        return state

    # ------------------------------------------------------------------ Workspace write hooks
    def sync(self, traces=(), *, complete: bool = False) -> int:  # noqa: ARG002 (the BM25 interface)
        """LanceDB already holds the rows; fold a large unindexed tail into the index."""
        if not self.store.read_only and self.stats()["unindexed_rows"] > OPTIMIZE_TAIL:
            optimize(self.store.table())  # never prunes a tagged version
        return len(self)

    def remove_documents(self, ids) -> int:  # noqa: ARG002 (the BM25 interface)
        return 0  # deletes are LanceDB's own

    def remove_document(self, id) -> bool:  # noqa: ARG002 (the BM25 interface)
        return False

    def save(self, path=None, source=None) -> None:  # noqa: ARG002 (the BM25 interface)
        return None  # nothing beside the data: the index lives in the table
