"""Audit log of every write: who, when, what, how many traces — a LanceDB table `audit`
beside `traces` in the same store.

`Workspace.ingest/delete/set_active` call `AuditLog.record` after their commit, with the write lock
held. Recording never raises: a failed audit write is logged, and the trace write it describes
stands (the traces are the truth; the log describes them).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from retrieval.store.remote import open_db, redact_uri, storage_options_from_env

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

log = logging.getLogger(__name__)

TABLE = "audit"
ACTIONS = ("ingest", "delete", "activate", "deactivate", "reembed", "analyzer", "statistics", "facts", "grade", "case",
           "snapshot", "context")
MAX_IDS = 20  # ids kept per entry (the count is exact; the ids are a sample)


@dataclass(frozen=True)
class AuditEntry:
    at: datetime
    actor: str
    action: str
    traces: int
    scopes: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    detail: str = ""


def _schema():
    import pyarrow as pa

    return pa.schema([("at", pa.timestamp("us", tz="UTC")), ("actor", pa.string()), ("action", pa.string()),
                      ("traces", pa.int64()), ("scopes", pa.list_(pa.string())), ("ids", pa.list_(pa.string())),
                      ("detail", pa.string())])


class AuditLog:
    """Append-only entries in the store's `audit` table; newest first when read."""

    def __init__(self, uri: str, clock=None, *, storage_options: Mapping[str, str] | None = None):
        self.uri = str(uri)
        self.display_uri = redact_uri(self.uri)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self.clock = clock or (lambda: datetime.now(UTC))
        self._db: DBConnection | None = None
        self._tbl: Table | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AuditLog(uri={self.display_uri!r}, table={TABLE!r})"

    def _table(self, create: bool):
        with self._lock:
            if self._tbl is None:
                self._db = self._db or open_db(self.uri, self.storage_options, consistent=True)
                if TABLE in self._db.table_names():
                    self._tbl = self._db.open_table(TABLE)
                elif create:
                    self._tbl = self._db.create_table(TABLE, schema=_schema(), exist_ok=True)
            return self._tbl

    def record(self, actor: str, action: str, traces: int, scopes: Iterable[str] = (), ids: Iterable[str] = (),
               detail: str = "") -> AuditEntry | None:
        """Append one entry; returns it, or None when it could not be written (logged)."""
        if action not in ACTIONS:
            raise ValueError(f"audit action {action!r} is not one of {', '.join(ACTIONS)}")
        entry = AuditEntry(at=self.clock(), actor=str(actor or "unknown")[:200], action=action, traces=int(traces),
                           scopes=tuple(sorted({str(s) for s in scopes})), ids=tuple(list(ids)[:MAX_IDS]),
                           detail=str(detail)[:500])
        try:
            self._table(create=True).add([{**entry.__dict__, "scopes": list(entry.scopes), "ids": list(entry.ids)}])
        except Exception as exc:  # the write it describes is committed; never undo or hide it
            log.warning("could not record %s by %s in the audit log at %s: %s", action, actor, self.display_uri, exc)
            return None
        return entry

    def entries(self, limit: int = 100, scopes: Iterable[str] | None = None) -> list[AuditEntry]:
        """Newest first. With `scopes`, only entries that touched nothing outside them (what a visitor
        limited to those scopes may see); entries with no scope recorded are left out then."""
        try:
            tbl = self._table(create=False)
            rows = tbl.search().limit(None).to_arrow().to_pylist() if tbl is not None else []
        except Exception as exc:
            log.warning("could not read the audit log at %s: %s", self.display_uri, exc)
            return []
        allowed = None if scopes is None else {str(s) for s in scopes}
        out = [AuditEntry(at=r["at"], actor=r["actor"], action=r["action"], traces=r["traces"],
                          scopes=tuple(r["scopes"] or ()), ids=tuple(r["ids"] or ()), detail=r["detail"] or "")
               for r in rows]
        if allowed is not None:
            out = [e for e in out if e.scopes and set(e.scopes) <= allowed]
        out.sort(key=lambda e: e.at, reverse=True)
        return out[:limit]


def scopes_of(traces: Iterable) -> list[str]:
    """`kind:id` labels of the traces' scopes (MemoryTrace-like objects)."""
    return sorted({f"{t.scope}:{t.scope_id}" for t in traces})
