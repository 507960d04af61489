"""The LanceDB plumbing under `JudgmentStore`: one connection, tables opened lazily, reads that see the latest
commit, upserts by a key column, and the columns later versions added (old tables gain them on their first write).

A damaged table is one clear `JudgmentStoreError` naming the table and the repair, never LanceDB's raw error; a
commit lost to another process writing at once is said as that (try again), never as a damaged table.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from retrieval.judgments.model import scope_text
from retrieval.store.remote import StoreLocationError, open_db, redact_uri, storage_options_from_env
from retrieval.types import Scope

if TYPE_CHECKING:
    from lancedb.db import DBConnection

    from retrieval.access import Access
    from retrieval.workspace.audit import AuditLog

LOCK = threading.RLock()

# Columns added after the first release: the SQL that fills them on a table written before (a grade without a
# rater is the grader's kind, "human"; without a content hash its freshness is unknown, never stale).
ADDED_COLUMNS: dict[str, dict[str, str]] = {
    "judgments": {"rater": "grader", "content_hash": "CAST('' AS STRING)", "note": "CAST('' AS STRING)",
                  "prompt_version": "CAST('' AS STRING)", "created_at": "updated_at"},
    "snapshots": {"scopes": "CAST(NULL AS STRING)"},  # unknown for a run stored before: read from its payload
}


class JudgmentStoreError(RuntimeError):
    """A judgments, cases or snapshots table exists but cannot be read or written."""


MIGRATE_TRIES = 5
# What LanceDB says when another process committed first (a concurrent add of the same column, a preempted commit):
# a race to read the table again after, never a damaged table.
RACED = ("retryable commit conflict", "preempted by concurrent transaction")


def raced(exc: BaseException) -> bool:
    """Whether `exc` is LanceDB losing a commit race to another writer (not a damaged table): a commit conflict, or
    a column another process added first ("Column scopes already exists")."""
    text = str(exc).lower()
    return any(r in text for r in RACED) or ("column" in text and "already exists" in text)


def _checkout_latest(tbl) -> None:
    """Read the table's latest version (a connection that re-reads on every read does so anyway)."""
    with contextlib.suppress(Exception):  # already at the latest: nothing to move to
        tbl.checkout_latest()


def schemas():
    import pyarrow as pa

    s, i, f = pa.string(), pa.int64(), pa.float64()
    return {
        "judgments": pa.schema([("key", s), ("scope", s), ("query", s), ("query_key", s), ("trace_id", s),
                                ("grade", i), ("grader", s), ("source", s), ("updated_at", f), ("rater", s),
                                ("content_hash", s), ("note", s), ("prompt_version", s), ("created_at", f)]),
        "cases": pa.schema([("key", s), ("case_name", s), ("qid", s), ("query", s), ("scope", s), ("note", s),
                            ("position", i), ("scale", s), ("case_note", s), ("created_at", f)]),
        "snapshots": pa.schema([("id", s), ("case_name", s), ("created_at", f), ("label", s), ("config", s),
                                ("metrics", s), ("payload", s), ("elapsed_ms", f), ("scopes", s)]),
        "case_settings": pa.schema([("case_name", s), ("settings", s), ("updated_at", f)]),
        "query_notes": pa.schema([("key", s), ("scope", s), ("query", s), ("query_key", s), ("note", s),
                                  ("author", s), ("updated_at", f)]),
    }


class Tables:
    """Lazily opened tables of one store URI (`uri`, `storage_options`) and its audit log."""

    def __init__(self, uri: str = "data/lancedb", *, storage_options: Mapping[str, str] | None = None,
                 audit: AuditLog | None = None):
        self.uri = str(uri)
        self.display_uri = redact_uri(self.uri)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self._db: DBConnection | None = None
        self._tables: dict[str, object] = {}
        self._migrated: set[str] = set()
        self._audit = audit

    @property
    def audit(self) -> AuditLog:
        """The store's audit log (grades, cases and snapshots are writes too)."""
        if self._audit is None:
            from retrieval.workspace.audit import AuditLog

            self._audit = AuditLog(self.uri, storage_options=self.storage_options)
        return self._audit

    def record_write(self, access: Access | None, action: str, count: int, scopes: Iterable[Scope | None],
                detail: str = "", who: str = "") -> None:
        """One audit entry naming who wrote (`identity.audit_actor`: the sign-in, else `who`, else `local`).
        `scopes` names the scope of each item written (a grade, a case query), so the entry's part in each scope
        is known when `count` is their number, or 0 (a setting, a note: nothing counted in any scope)."""
        from retrieval.judgments.identity import audit_actor
        from retrieval.workspace.audit import ScopePart, parts_counted

        labels = [scope_text(s) for s in scopes]
        parts = (parts_counted(labels) if count == len(labels) else
                 [ScopePart(s, 0) for s in sorted(set(labels))] if count == 0 else None)
        self.audit.record(audit_actor(access, who), action, count, sorted(set(labels)), [], detail=detail,
                          parts=parts)

    def _broken(self, name: str, exc: BaseException) -> JudgmentStoreError:
        why = (str(exc).strip().splitlines() or [""])[0][:240]
        if raced(exc):  # another process committed first: nothing is damaged, and nothing is to be moved aside
            return JudgmentStoreError(
                f"another process wrote the {name} table of {self.display_uri} at the same moment and this write "
                f"was not saved ({type(exc).__name__}: {why}); try it again")
        return JudgmentStoreError(
            f"the {name} table of {self.display_uri} is unreadable ({type(exc).__name__}: {why}); grades, cases "
            f"and snapshots are off until it is repaired: move {name}.lance aside (the traces are not affected)")

    def _table(self, name: str, create: bool = False):
        with LOCK:
            if name not in self._tables:
                try:
                    if self._db is None:
                        self._db = open_db(self.uri, self.storage_options, consistent=True)
                    if name in self._db.list_tables().tables:
                        self._tables[name] = self._db.open_table(name)
                    elif create:
                        self._tables[name] = self._db.create_table(name, schema=schemas()[name], exist_ok=True)
                        self._migrated.add(name)
                    else:
                        return None
                except StoreLocationError:
                    raise
                except Exception as exc:  # a damaged table: one clear error, never LanceDB's raw one
                    raise self._broken(name, exc) from exc
            return self._tables[name]

    def _run(self, name: str, op, create: bool = False):
        """`op(table)`, with any LanceDB failure on a damaged table made a `JudgmentStoreError`."""
        tbl = self._table(name, create)
        if tbl is None:
            return None
        try:
            return op(tbl)
        except (ValueError, KeyError, TypeError):
            raise
        except Exception as exc:
            raise self._broken(name, exc) from exc

    def _migrate(self, name: str) -> None:
        """Give a table written by an older version the columns added since (on the first write only: a
        read-only visitor never changes the store). Idempotent and safe when several processes make their first
        write at once: one adds the columns, the others' adds conflict (or find them already there), so each reads
        the latest version again and goes on once the columns are there (`MIGRATE_TRIES` times at most)."""
        if name in self._migrated or name not in ADDED_COLUMNS:
            return
        with LOCK:
            tbl = self._table(name)
            for _ in range(MIGRATE_TRIES):
                try:
                    missing = self._missing(name, tbl)
                    if not missing:
                        break
                    tbl.add_columns(missing)
                    break
                except Exception as exc:  # a race is read again; anything else is a damaged table
                    if not raced(exc):
                        raise self._broken(name, exc) from exc
                    _checkout_latest(tbl)
            else:
                if self._run(name, lambda t: self._missing(name, t)):
                    raise JudgmentStoreError(
                        f"the {name} table of {self.display_uri} could not gain its new columns: other processes "
                        f"kept writing it ({MIGRATE_TRIES} tries); nothing was saved, try again")
            self._migrated.add(name)

    @staticmethod
    def _missing(name: str, tbl) -> dict[str, str]:
        names = set(tbl.schema.names)
        return {c: sql for c, sql in ADDED_COLUMNS[name].items() if c not in names}

    def has_column(self, name: str, column: str) -> bool:
        """Whether table `name` exists with `column` (a table written by an older version may lack it)."""
        tbl = self._table(name)
        return tbl is not None and column in self._run(name, lambda t: t.schema.names)

    def table_rows(self, name: str, where: str | None = None) -> list[dict]:
        def read(tbl):
            q = tbl.search()
            return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

        return self._run(name, read) or []

    def table_rows_columns(self, name: str, columns: Sequence[str], where: str | None = None) -> list[dict]:
        def read(tbl):
            q = tbl.search().select(list(columns))
            return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

        return self._run(name, read) or []

    def upsert_rows(self, name: str, key: str, rows: list[dict]) -> int:
        if not rows:
            return 0
        rows = list({r[key]: r for r in rows}.values())  # the last row of a key wins
        with LOCK:
            self._table(name, create=True)
            self._migrate(name)
            self._run(name, lambda tbl: tbl.merge_insert(key).when_matched_update_all()
                      .when_not_matched_insert_all().execute(rows), create=True)
        return len(rows)

    def delete_rows(self, name: str, where: str) -> None:
        with LOCK:
            self._run(name, lambda tbl: tbl.delete(where))
