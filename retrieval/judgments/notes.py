"""Notes on a query: one free-text note per (scope, query), stored beside the grades (table `query_notes`).

What a grader wants to say about a query as a whole ("ambiguous: two tickets share the number", "the answer is
not in the store") — kept with the grades, read back wherever the query is graded. The grades' rules hold: a
write needs the grade permission and, for a visitor limited to some scopes, a scope of theirs
(`store.check_grading`); it is audited (as a grading write of 0 grades); a damaged table is a
`JudgmentStoreError`. The text is the user's: whoever shows it renders it as text, never Markdown.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.judgments.identity import check_author, writer
from retrieval.judgments.model import parse_scope, query_key, scope_text
from retrieval.judgments.store import check_grading
from retrieval.judgments.tables import Tables
from retrieval.store.rows import sql_quote
from retrieval.types import Scope

if TYPE_CHECKING:
    from retrieval.access import Access

__all__ = ["NOTE_CHARS", "QueryNote", "query_note", "set_query_note"]

NOTE_CHARS = 2000  # a note longer than this is refused (nothing is cut silently)
TABLE = "query_notes"


@dataclass(frozen=True)
class QueryNote:
    scope: Scope | None
    query: str
    text: str
    author: str
    updated_at: float


def _key(scope: Scope | None, query: str) -> str:
    return f"{scope_text(scope)}\x1f{query_key(query)}"


def query_note(tables: Tables, scope: Scope | None, query: str, *, access: Access | None = None) -> QueryNote | None:
    """The note on `query` in `scope` (queries match as grades do: whitespace collapsed, case folded), or None —
    also when `access` may not see `scope` (one answer for "hidden" and "none": no existence oracle)."""
    if access is not None and not access.sees(scope):
        return None
    rows = tables.table_rows(TABLE, f"key = {sql_quote(_key(scope, query))}")
    if not rows:
        return None
    r = rows[0]
    return QueryNote(parse_scope(r["scope"]), r["query"], r["note"], r["author"], float(r["updated_at"]))


def set_query_note(tables: Tables, scope: Scope | None, query: str, text: str, *, access: Access | None = None,
                   author: str = "") -> QueryNote | None:
    """Save the note on a query (blank text removes it); returns what is stored. ValueError for a note over
    `NOTE_CHARS` or no query; `ReadOnlyError` / `AccessDenied` as for a grade — nothing is written then."""
    text = str(text).strip()
    if not str(query).strip():
        raise ValueError("a note needs a query")
    if len(text) > NOTE_CHARS:
        raise ValueError(f"the note has {len(text)} characters; keep it to {NOTE_CHARS} (nothing was saved)")
    check_grading(access, [scope])
    author = check_author(access, author or writer(access))  # who writes (`identity`)
    key = _key(scope, query)
    if not text:
        tables.delete_rows(TABLE, f"key = {sql_quote(key)}")
        tables.record_write(access, "grade", 0, [scope], detail="query note cleared", who=author)
        return None
    note = QueryNote(scope, str(query), text, author, time.time())
    tables.upsert_rows(TABLE, "key", [{"key": key, "scope": scope_text(scope), "query": note.query,
                                   "query_key": query_key(query), "note": text, "author": author,
                                   "updated_at": note.updated_at}])
    tables.record_write(access, "grade", 0, [scope], detail="query note", who=author)
    return note
