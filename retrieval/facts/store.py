"""FactStore (SPEC §7): facts in a LanceDB table beside the traces, scoped by (scope, scope_id).

Facts are derived data: every fact can be extracted again from its source traces. So an unreadable
table is reported with that fix, never papered over with an empty answer.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from datetime import UTC
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from retrieval.store.remote import StoreLocationError, open_db, redact_uri, storage_options_from_env
from retrieval.types import Scope
from retrieval.facts.model import Fact, canonical_subject

if TYPE_CHECKING:
    from lancedb.db import DBConnection
    from lancedb.table import Table

COLUMNS = ("key", "scope", "scope_id", "subject", "predicate", "object", "timestamp", "source_trace_ids",
           "source_span")
# Write order. Two facts of one (subject, predicate) with the same timestamp (a trace edited in
# place, two notes stamped at the same instant) are ordered by it, so the later write wins.
SEQ = "seq"
DELETE_SCAN_IDS = 5_000  # past this many trace ids, one scan of the facts beats filtered reads

# One writer at a time per process: Lance would retry a conflicting commit anyway, and adding the
# `seq` column to an old table must happen once.
_WRITE_LOCK = threading.Lock()
_SEQ_GUARD = threading.Lock()
_last_seq = 0


def next_sequence(n: int = 1) -> int:
    """The first of `n` consecutive write numbers. Wall-clock nanoseconds, so a later write by another
    process sorts later without a shared counter; never repeats even if the clock steps back."""
    global _last_seq
    with _SEQ_GUARD:
        first = max(time.time_ns(), _last_seq + 1)
        _last_seq = first + max(n, 1) - 1
        return first


class FactStoreError(RuntimeError):
    """The fact table exists but cannot be read or written."""


class FactStore:
    """Facts in a LanceDB table beside the traces, scoped by (scope, scope_id)."""

    def __init__(self, uri: str = "data/lancedb", table: str = "facts", *,
                 storage_options: Mapping[str, str] | None = None):
        self.uri = str(uri)
        self.display_uri = redact_uri(self.uri)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self.table_name = table
        self.path = os.path.join(self.display_uri, f"{table}.lance")
        self._db: DBConnection | None = None
        self._tbl: Table | None = None
        self._open_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FactStore(uri={self.display_uri!r}, table={self.table_name!r})"

    # ------------------------------------------------------------------ table access
    def _broken(self, exc: BaseException) -> FactStoreError:
        why = (str(exc).strip().splitlines() or [""])[0][:240]
        return FactStoreError(
            f"fact table {self.table_name!r} at {self.path} is unreadable ({type(exc).__name__}: {why}); facts are "
            f"derived from the traces: move that directory aside and re-ingest (python -m retrieval ingest FILE "
            f"--db {self.display_uri}) to rebuild them")

    def _table(self, create: bool = False):
        with self._open_lock:
            if self._tbl is None:
                try:
                    # Every read checks for a newer version, so a fact deleted by another process
                    # (the CLI while the app runs) is not served from a stale snapshot.
                    self._db = db = self._db or open_db(self.uri, self.storage_options, consistent=True)
                    if self.table_name in db.table_names():
                        # Never create over a table that is listed but will not open: that would
                        # hide the damage and drop whatever is still there.
                        tbl = db.open_table(self.table_name)
                    elif create:
                        tbl = db.create_table(self.table_name, schema=_schema(), exist_ok=True)
                    else:
                        return None
                    names = set(tbl.schema.names)
                except StoreLocationError:
                    raise
                except Exception as exc:
                    raise self._broken(exc) from exc
                missing = [c for c in COLUMNS if c not in names]
                if missing:
                    raise ValueError(
                        f"table {self.table_name!r} at {self.path} is not a fact table (missing {', '.join(missing)}); "
                        f"move it aside or pass FactStore(uri, table=...) another table name")
                self._tbl = tbl
            return self._tbl

    def _run(self, fn, create: bool = False):
        """`fn(table)` with LanceDB failures turned into one clear error; None when there is no table."""
        tbl = self._table(create=create)
        if tbl is None:
            return None
        try:
            return fn(tbl)
        except FactStoreError:
            raise
        except Exception as exc:  # Lance reports a damaged table as OSError, RuntimeError or ValueError
            raise self._broken(exc) from exc

    @staticmethod
    def _ensure_seq(tbl) -> None:
        # A table written before `seq` existed gets it as 0, so its facts sort before newer writes.
        try:
            if SEQ not in tbl.schema.names:
                tbl.add_columns({SEQ: "CAST(0 AS BIGINT)"})
        except Exception:
            tbl.checkout_latest()  # another process may have added it first
            if SEQ not in tbl.schema.names:
                raise

    def _rows(self, where: str | None) -> list[dict]:
        def read(t):
            return (t.search().where(where) if where else t.search()).limit(None).to_arrow().to_pylist()

        return self._run(read) or []

    def _facts(self, rows: list[dict]) -> list[Fact]:
        try:
            return [_fact(r) for r in rows]
        except (KeyError, TypeError, ValueError) as exc:  # a row this code did not write
            raise self._broken(exc) from exc

    def _ordered(self, where: str | None) -> list[Fact]:
        """Oldest first by (timestamp, write order); a row from before `seq` existed counts as 0."""
        rows = self._rows(where)
        pairs = zip(self._facts(rows), (r.get(SEQ) or 0 for r in rows))
        return [f for f, _ in sorted(pairs, key=lambda p: (p[0].timestamp, p[1], p[0].subject, p[0].predicate))]

    # ------------------------------------------------------------------ writing
    def upsert(self, scope: Scope, facts: Iterable[Fact]) -> int:
        """Store facts for a scope; a fact equal in every field is stored once. Returns new rows."""
        if not isinstance(scope, Scope):
            raise ValueError(f"scope must be a Scope, got {scope!r}")
        facts = list({f.key: f for f in facts}.values())
        first = next_sequence(len(facts))
        return self._merge([_row(scope, f, first + i) for i, f in enumerate(facts)])

    def _merge(self, rows: list[dict]) -> int:
        if not rows:
            return 0

        def merge(tbl):
            self._ensure_seq(tbl)
            # The key hashes every field, so (scope, key) makes re-ingest idempotent; merge_insert
            # checks and inserts in one commit, and Lance retries it when another writer got in first.
            res = tbl.merge_insert(["scope", "scope_id", "key"]).when_not_matched_insert_all().execute(rows)
            return int(res.num_inserted_rows)

        with _WRITE_LOCK:
            return self._run(merge, create=True)

    def delete_for_trace(self, trace_id: str) -> int:
        """Remove facts sourced only from `trace_id`; drop it from facts with other sources too."""
        return self.delete_for_traces([trace_id])

    def delete_for_traces(self, trace_ids: Iterable[str], keep: set[tuple[str, str, str]] | None = None) -> int:
        """`delete_for_trace` for many traces in one pass: one filtered read per 500 ids (one scan
        of the table past DELETE_SCAN_IDS ids), one insert of the narrowed facts, one delete.
        Facts whose (scope, scope_id, key) is in `keep` stay as they are."""
        from retrieval.store.rows import sql_quote

        ids = {i for i in trace_ids if isinstance(i, str)}
        if not ids:
            return 0
        if len(ids) > DELETE_SCAN_IDS:
            rows = [r for r in self._rows(None) if ids.intersection(r["source_trace_ids"] or ())]
        else:
            chunks = [sorted(ids)[i:i + 500] for i in range(0, len(ids), 500)]
            found = {r["key"]: r for c in chunks for r in self._rows(
                "array_has_any(source_trace_ids, make_array(" + ", ".join(sql_quote(i) for i in c) + "))")}
            rows = list(found.values())
        rows = [r for r in rows if (r["scope"], r["scope_id"], r["key"]) not in (keep or set())]
        if not rows:
            return 0
        kept = [_row(Scope(r["scope"], r["scope_id"]), replace(f, source_trace_ids=rest), r.get(SEQ) or 0)
                for r, f in zip(rows, self._facts(rows))
                if (rest := tuple(s for s in f.source_trace_ids if s not in ids))]
        # Insert the narrowed facts before deleting the old rows: a crash in between leaves a
        # duplicate, never a lost fact. The write order is kept, so latest() does not change.
        self._merge(kept)
        keys = [r["key"] for r in rows]
        with _WRITE_LOCK:
            for i in range(0, len(keys), 5000):
                part = keys[i:i + 5000]
                self._run(lambda tbl, part=part: tbl.delete("key IN (" + ", ".join(sql_quote(k) for k in part) + ")"))
        return len(rows) - len(kept)

    # ------------------------------------------------------------------ reading
    def version(self) -> int:
        """The facts table's newest version (-1 when there is none yet): what a count kept over it depends on."""
        tbl = self._table()
        return -1 if tbl is None else int(tbl.version)

    def count(self) -> int:
        # A filter makes Lance read a column; a bare count_rows() trusts the manifest even when
        # the data files behind it are gone.
        return self._run(lambda tbl: tbl.count_rows("key IS NOT NULL")) or 0

    def all(self, scope: Scope | None = None) -> list[Fact]:
        return self._ordered(_where(scope) if scope is not None else None)

    def history(self, scope: Scope, subject: str, predicate: str | None = None) -> list[Fact]:
        """Facts of a subject (and of one predicate), oldest first: (timestamp, write order)."""
        eq = {"subject": canonical_subject(subject), **({"predicate": predicate} if predicate else {})}
        return self._ordered(_where(scope, **eq))

    def latest(self, scope: Scope, subject: str, predicate: str) -> Fact | None:
        return next(reversed(self.history(scope, subject, predicate)), None)

    def all_time_ordered(self, scope: Scope, subject: str) -> list[Fact]:
        return self.history(scope, subject)


def _schema():
    import pyarrow as pa

    return pa.schema([
        ("key", pa.string()), ("scope", pa.string()), ("scope_id", pa.string()), ("subject", pa.string()),
        ("predicate", pa.string()), ("object", pa.string()), ("timestamp", pa.timestamp("us", tz="UTC")),
        ("source_trace_ids", pa.list_(pa.string())), ("source_span", pa.string()), (SEQ, pa.int64()),
    ])


def _where(scope: Scope, **eq: str) -> str:
    from retrieval.store.rows import sql_quote

    parts = [f"scope = {sql_quote(scope.scope)}", f"scope_id = {sql_quote(scope.scope_id)}"]
    parts += [f"{k} = {sql_quote(v)}" for k, v in eq.items()]
    return " AND ".join(parts)


def _row(scope: Scope, f: Fact, seq: int) -> dict:
    return {"key": f.key, "scope": scope.scope, "scope_id": scope.scope_id, "subject": f.subject,
            "predicate": f.predicate, "object": f.object, "timestamp": f.timestamp.astimezone(UTC),
            "source_trace_ids": list(f.source_trace_ids), "source_span": f.source_span, SEQ: int(seq)}


def _fact(row: dict) -> Fact:
    ts = row["timestamp"]
    return Fact(row["subject"], row["predicate"], row["object"], ts if ts.tzinfo else ts.replace(tzinfo=UTC),
                tuple(row["source_trace_ids"] or ()), row["source_span"] or "")
