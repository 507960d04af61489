"""Audit log of every write: who, when, what, how many traces — a LanceDB table `audit`
beside `traces` in the same store.

every Workspace write (`Workspace._committed`) calls `AuditLog.record` after its commit, with the write lock
held, naming the table version it committed. Recording never raises: a failed audit write is logged,
and the trace write it describes stands (the traces are the truth; the log describes them).

One entry per committed version of the traces table that changed rows (SPEC §18): `reconcile` reads the
table's version list (each version's row counts come with the commit) and records every such version that has
no entry yet as written by an `unknown writer` (an agent's own LanceDB code, a Ray job, a writer killed
between its commit and its audit row), with the rows it added or removed. Two processes may both record one
version; readers keep one entry per version, a named actor before an unknown writer.

A write over several scopes is one entry, with its part in each scope (`ScopePart`: that scope's count and ids,
column `parts`). The unlimited reader sees the whole entry; a visitor limited to some scopes sees, of every entry
that touched one of them, only their part (`project`): their count, their scopes, their ids, nothing that says the
entry touched more. An entry whose split is unknown (an unknown writer's commit, a store-wide write, a row from
before `parts` was recorded) is shown to them only when every scope it names is theirs.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from retrieval.store.remote import open_db, redact_uri, storage_options_from_env

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

log = logging.getLogger(__name__)

TABLE = "audit"
ACTIONS = ("ingest", "delete", "activate", "deactivate", "reembed", "analyzer", "statistics", "facts", "grade", "case",
           "snapshot", "command", "commit", "context")
UNKNOWN = "unknown writer"
MAINTENANCE = "maintenance"  # a commit that changed no row: an index, a compaction, table metadata
MAX_IDS = 20  # ids kept per entry (the count is exact; the ids are a sample)


@dataclass(frozen=True)
class ScopePart:
    """What one write did in one scope: how many traces (or grades, case queries), and up to MAX_IDS ids."""
    scope: str
    traces: int
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditEntry:
    at: datetime
    actor: str
    action: str
    traces: int
    scopes: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    detail: str = ""
    version: int | None = None  # the traces table version this write committed
    parts: tuple[ScopePart, ...] | None = None  # its part in each scope; None when the split is unknown


def _row(e: AuditEntry) -> dict:
    parts = None if e.parts is None else [{"scope": p.scope, "traces": p.traces, "ids": list(p.ids)} for p in e.parts]
    return {**e.__dict__, "scopes": list(e.scopes), "ids": list(e.ids), "parts": parts}


def _entry(r: dict) -> AuditEntry:
    parts = r.get("parts")  # absent from a table written before parts were recorded
    return AuditEntry(at=r["at"], actor=r["actor"], action=r["action"], traces=r["traces"],
                      scopes=tuple(r["scopes"] or ()), ids=tuple(r["ids"] or ()), detail=r["detail"] or "",
                      version=r.get("version"),
                      parts=None if parts is None else tuple(ScopePart(p["scope"], int(p["traces"] or 0),
                                                                       tuple(p["ids"] or ())) for p in parts))


def _parts_type():
    import pyarrow as pa

    return pa.list_(pa.struct([("scope", pa.string()), ("traces", pa.int64()), ("ids", pa.list_(pa.string()))]))


def _schema():
    import pyarrow as pa

    return pa.schema([("at", pa.timestamp("us", tz="UTC")), ("actor", pa.string()), ("action", pa.string()),
                      ("traces", pa.int64()), ("scopes", pa.list_(pa.string())), ("ids", pa.list_(pa.string())),
                      ("detail", pa.string()), ("version", pa.int64()), ("parts", _parts_type())])


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
        self._columns_added = False

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
            if self._tbl is not None and create and not self._columns_added:  # also when a read opened it first
                self._add_missing_columns(self._tbl)
                self._columns_added = True
            return self._tbl

    @staticmethod
    def _add_missing_columns(tbl) -> None:
        """An audit table from before versions (then parts) were recorded gets the column, empty in old rows."""
        import pyarrow as pa

        for name, column in (("version", {"version": "CAST(NULL AS BIGINT)"}),
                             ("parts", pa.field("parts", _parts_type()))):
            if name not in tbl.schema.names:
                try:
                    tbl.add_columns(column)
                except Exception:
                    tbl.checkout_latest()  # another process added it first

    def record(self, actor: str, action: str, traces: int, scopes: Iterable[str] = (), ids: Iterable[str] = (),
               detail: str = "", version: int | None = None, *,
               parts: Iterable[ScopePart] | None = None) -> AuditEntry | None:
        """Append one entry; returns it, or None when it could not be written (logged). `parts`: the write's part
        in each scope (`parts_of`, `parts_counted`); a write in one scope is all in it, so only a write over several
        scopes needs them — without them a limited visitor never sees it (its split is unknown)."""
        import pyarrow as pa

        if action not in ACTIONS:
            raise ValueError(f"audit action {action!r} is not one of {', '.join(ACTIONS)}")
        ids, scope_set = list(ids), {str(s) for s in scopes}
        known = _merged(parts) if parts is not None else None
        scope_set |= {p.scope for p in known or ()}
        if known is None and len(scope_set) == 1:
            known = (ScopePart(next(iter(scope_set)), int(traces), tuple(ids[:MAX_IDS])),)
        entry = AuditEntry(at=self.clock(), actor=str(actor or "unknown")[:200], action=action, traces=int(traces),
                           scopes=tuple(sorted(scope_set)), ids=tuple(ids[:MAX_IDS]), detail=str(detail)[:500],
                           version=None if version is None else int(version), parts=known or None)
        try:
            self._table(create=True).add(pa.Table.from_pylist([_row(entry)], schema=_schema()))
        except Exception as exc:  # the write it describes is committed; never undo or hide it
            log.warning("could not record %s by %s in the audit log at %s: %s", action, actor, self.display_uri, exc)
            return None
        return entry

    def entries(self, limit: int = 100, scopes: Iterable[str] | None = None, *,
                maintenance: bool = False) -> list[AuditEntry]:
        """Newest first, one per write. With `scopes` (a visitor limited to them), each entry that touched one of
        them as `project` shows it: only their part; an entry whose split is unknown only when it touched nothing
        outside them, and never one with no scope recorded. Commits that changed no row (an index, a compaction:
        actor `maintenance`) only with `maintenance=True`."""
        try:
            tbl = self._table(create=False)
            rows = tbl.search().limit(None).to_arrow().to_pylist() if tbl is not None else []
        except Exception as exc:
            log.warning("could not read the audit log at %s: %s", self.display_uri, exc)
            return []
        allowed = None if scopes is None else {str(s) for s in scopes}
        out = one_per_version([_entry(r) for r in rows])
        if not maintenance:
            out = [e for e in out if e.actor != MAINTENANCE]
        if allowed is not None:
            out = [p for p in (project(e, allowed) for e in out) if p is not None]
        out.sort(key=lambda e: e.at, reverse=True)
        return out[:limit]


    def versions(self) -> set[int]:
        """The traces table versions that have an entry."""
        tbl = self._table(create=False)
        if tbl is None or "version" not in tbl.schema.names:
            return set()
        col = tbl.search().where("version IS NOT NULL").select(["version"]).limit(None).to_arrow().column("version")
        return {int(v) for v in col.to_pylist()}

    def reconcile(self, store) -> list[int]:
        """Give every stored version of the traces table (but the oldest, its creation) that has no entry one: an
        unknown writer's commit with the rows it changed, or, when it changed none, a maintenance commit (an index,
        a compaction, table metadata). Returns the versions recorded. Never raises (an unreadable audit is logged;
        the traces stand)."""
        try:
            done = self.versions()
            table = store.table()
            metas = sorted((int(v["version"]), v.get("metadata") or {}) for v in table.list_versions())
        except Exception as exc:
            log.warning("could not reconcile the audit log at %s with the traces table: %s", self.display_uri, exc)
            return []
        added = []
        for (prev, a), (v, b) in zip(metas, metas[1:]):
            if v in done:
                continue
            delta = _num(b, "total_rows") - _num(a, "total_rows")
            if delta:
                actor, n, what = UNKNOWN, abs(delta), f"{delta:+d} rows"
            else:  # same row count: rows rewritten in place, or none changed (counted from the two versions)
                try:
                    n = changed_rows(store, prev, v)
                except Exception as exc:
                    log.warning("could not compare table versions %s and %s: %s", prev, v, exc)
                    continue
                actor, what = (UNKNOWN, f"{n} rows rewritten") if n else (MAINTENANCE, "no row changed")
            if self.record(actor, "commit", n, detail=f"table version {v}: {what}", version=v) is not None:
                added.append(v)
        return added


def _num(meta: dict, key: str) -> int:
    return int(meta.get(key, 0) or 0)


def changed_rows(store, before: int, after: int) -> int:
    """Ids whose row (content, scope, time, active) differs between two versions, or that only one holds."""
    from retrieval.workspace.derived import all_hashes

    a, b = all_hashes(store, before), all_hashes(store, after)
    return sum(a.get(i) != h for i, h in b.items()) + len(set(a) - set(b))


def audited_versions(store) -> list[int]:
    """The versions that must have an entry: every stored version of the traces table but the oldest."""
    return sorted(int(v["version"]) for v in store.table().list_versions())[1:]


def one_per_version(entries: list[AuditEntry]) -> list[AuditEntry]:
    """One entry per traces table version (a named actor before an unknown writer, then the earliest); entries
    without a version (grades, cases, settings) all stay."""
    best: dict[int, AuditEntry] = {}
    for e in entries:
        if e.version is None:
            continue
        cur = best.get(e.version)
        if cur is None or ((cur.actor == UNKNOWN) > (e.actor == UNKNOWN)) or (
                (cur.actor == UNKNOWN) == (e.actor == UNKNOWN) and e.at < cur.at):
            best[e.version] = e
    return [e for e in entries if e.version is None or best[e.version] is e]


def project(entry: AuditEntry, scopes: Iterable[str]) -> AuditEntry | None:
    """What a visitor limited to `scopes` sees of `entry`: its parts in their scopes (their count, their scopes,
    their ids), or None when it touched none of them. An entry whose split is unknown is shown whole when every
    scope it names is theirs, else not at all."""
    allowed = {str(s) for s in scopes}
    if entry.parts is None:
        return entry if entry.scopes and set(entry.scopes) <= allowed else None
    mine = tuple(p for p in entry.parts if p.scope in allowed)
    if not mine:
        return None
    ids = tuple(i for p in mine for i in p.ids)[:MAX_IDS]
    return replace(entry, traces=sum(p.traces for p in mine), scopes=tuple(p.scope for p in mine), ids=ids,
                   parts=mine)


def _merged(parts: Iterable[ScopePart]) -> tuple[ScopePart, ...]:
    """One part per scope, sorted by scope, at most MAX_IDS ids each."""
    out: dict[str, ScopePart] = {}
    for p in parts:
        cur = out.get(str(p.scope), ScopePart(str(p.scope), 0))
        out[cur.scope] = ScopePart(cur.scope, cur.traces + int(p.traces), (cur.ids + tuple(p.ids))[:MAX_IDS])
    return tuple(out[s] for s in sorted(out))


def parts_of(traces: Iterable) -> list[ScopePart]:
    """A write's part in each scope, from the traces it wrote (MemoryTrace-like objects), in their order."""
    ids: dict[str, list[str]] = {}
    for t in traces:
        ids.setdefault(f"{t.scope}:{t.scope_id}", []).append(t.id)
    return [ScopePart(s, len(i), tuple(i[:MAX_IDS])) for s, i in sorted(ids.items())]


def parts_counted(scopes: Iterable[str]) -> list[ScopePart]:
    """A write's part in each scope when it wrote one item per label given (grades, case queries): counts only."""
    return [ScopePart(s, n) for s, n in sorted(Counter(str(s) for s in scopes).items())]


def scopes_of(traces: Iterable) -> list[str]:
    """`kind:id` labels of the traces' scopes (MemoryTrace-like objects)."""
    return sorted({f"{t.scope}:{t.scope_id}" for t in traces})
