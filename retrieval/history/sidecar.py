"""BM25 as of a version from the saved sidecar of another version, plus the rows that differ.

Building BM25 from 100k rows tokenizes every text (tens of seconds on two cores); the sidecar beside a
store holds the index of one version (usually the newest), and two versions of a table mostly share
their rows. So: load the sidecar, read `(id, content, scope)` of the active rows at both versions (two
Arrow scans, no tokenizing), remove what is not active at the wanted version and (re)add what differs.
The result holds exactly the documents a build from that version's rows holds, so its N, df, avgdl and
scores are the same (the differential test in tests/test_asof.py checks it). Nothing is written.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import make_tokenizer
from retrieval.store.versions import list_versions
from retrieval.types import Scope, indexed_text

log = logging.getLogger(__name__)

Row = tuple[str, str, str]  # BM25 text, scope, scope_id


def load_sidecar(path: Path | None, table: str, analyzer: str) -> tuple[BM25Index, int] | None:
    """The saved index and the table version it was built from (None when absent, unusable, or of
    another table or analyser)."""
    if path is None or not path.is_file():
        return None
    try:
        idx = BM25Index.load(path, tokenizer=make_tokenizer(analyzer))
    except ValueError as exc:
        log.info("as-of read ignores the sidecar: %s", exc)
        return None
    src = idx.source or {}
    version = src.get("table_version")
    if not isinstance(version, int) or src.get("table", table) != table:
        return None
    return idx, version


def active_rows(tbl: Any) -> dict[str, Row]:
    """id → (BM25 text, scope, scope_id) of the active rows of a (checked-out) native table; the text is what the
    row contributes to BM25 (`indexed_text`: its content, and its context when that version's rows say so)."""
    ctx = [c for c in ("context", "context_sides") if c in tbl.schema.names]  # an older version lacks them
    data = tbl.search().where("is_active").select(["id", "content", "scope", "scope_id", *ctx]).limit(None).to_arrow()
    n = data.num_rows
    context = data["context"].to_pylist() if ctx else [None] * n
    sides = data["context_sides"].to_pylist() if ctx else [None] * n
    texts = [indexed_text(c or "", x, s, "bm25") for c, x, s in zip(data["content"].to_pylist(), context, sides)]
    return dict(zip(data["id"].to_pylist(), zip(texts, data["scope"].to_pylist(), data["scope_id"].to_pylist())))


def diffed(idx: BM25Index, saved_version: int, view: Any) -> tuple[BM25Index, str, dict[str, tuple[int, int]]] | None:
    """`idx` (the sidecar's index at `saved_version`) moved to the version `view` (an AsOfStore) reads, where
    it came from, and per scope label how many documents were (re)added and removed to get there (a visitor
    limited to some scopes is told only about theirs); None when that version is no longer stored or the
    table is not native."""
    if not view.columns.native or saved_version not in dict(list_versions(view.table())):
        return None
    other = view.db.open_table(view.table_name)
    other.checkout(saved_version)
    then, saved = active_rows(view.table()), active_rows(other)
    removes = [i for i in saved if i not in then]
    adds = [(i, row[0] or "", Scope(row[1], row[2])) for i, row in then.items() if saved.get(i) != row]
    idx.remove_documents(removes)
    idx.add_documents(adds)
    moved: dict[str, list[int]] = {}
    for _, _, scope in adds:
        moved.setdefault(str(scope), [0, 0])[0] += 1
    for i in removes:
        moved.setdefault(str(Scope(saved[i][1], saved[i][2])), [0, 0])[1] += 1
    return idx, f"the sidecar of version {saved_version}", {k: (a, r) for k, (a, r) in sorted(moved.items())}
