"""Facts as they stood at a time (SPEC §16): the facts table checked out at its newest version at or before it.

Facts follow the traces a moment later (an ingest commits the traces, then their facts), so the facts
for a traces version are those committed before the *next* traces version (`facts_cut`). A facts
table that did not exist yet, or whose first version is later, holds no facts then.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from retrieval.facts.store import FactStore
from retrieval.store.remote import open_db
from retrieval.store.versions import Pinned, list_versions


def facts_cut(pinned: Pinned) -> datetime | None:
    """The time the facts of a traces version are read at (None: the newest facts)."""
    return None if pinned.until is None else pinned.until - timedelta(microseconds=1)


class AsOfFactStore(FactStore):
    """A `FactStore` checked out at the newest facts version at or before `when` (None: the newest one,
    held fixed). Reads only: a write raises ValueError."""

    def __init__(self, base: FactStore, when: datetime | None):
        super().__init__(base.uri, base.table_name, storage_options=base.storage_options)
        self.when = when
        self.facts_version: int | None = None  # None: no facts table at that time
        self._opened = False
        self._held: Any = None

    def __repr__(self) -> str:
        return f"AsOfFactStore(uri={self.display_uri!r}, version={self.facts_version})"

    def _table(self, create: bool = False):
        if create:
            raise ValueError("facts shown as of an earlier time are read-only")
        with self._open_lock:
            if not self._opened:
                try:
                    self._held = self._checked_out()
                except Exception as exc:  # Lance reports a damaged table as OSError, RuntimeError or ValueError
                    raise self._broken(exc) from exc
                self._opened = True
        return self._held

    def _checked_out(self) -> Any:
        """Our own handle (the shared one is never moved), checked out at the version for `when`."""
        db = open_db(self.uri, self.storage_options)
        if self.table_name not in db.table_names():
            return None
        tbl = db.open_table(self.table_name)
        if self.when is None:
            tbl.checkout(tbl.version)
        else:
            older = [v for v, ts in list_versions(tbl) if ts <= self.when]
            if not older:
                return None
            tbl.checkout(older[-1])
        self.facts_version = int(tbl.version)
        return tbl

    def upsert(self, scope, facts) -> int:  # noqa: ARG002
        raise ValueError("facts shown as of an earlier time are read-only")

    def delete_for_traces(self, trace_ids, keep=None) -> int:  # noqa: ARG002
        raise ValueError("facts shown as of an earlier time are read-only")
