"""A small record kept in the store's own metadata (the vector field's map, beside the identity), with the one
it replaced, so one undo restores it: what calibration (`store/calibration.py`) and learned adaptive strengths
(`store/adaptive.py`) write. Each write or undo is one metadata-only commit under the writers' lock."""
from __future__ import annotations

from typing import Any


def field_metadata(store: Any) -> dict[str, str]:
    """The vector field's metadata map as text (what `identity.read_identity` reads); {} before the table exists."""
    tbl = store.table()
    if tbl is None:
        return {}
    tbl.checkout_latest()
    meta = tbl.schema.field(store.columns.vector).metadata or {}
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in meta.items()}


def write_record(store: Any, key: str, previous_key: str, text: str, what: str) -> None:
    """Record `text` under `key`, keeping the current value under `previous_key`. ValueError before the table
    exists (`what` names the record in the message)."""
    store.check_writable()
    with store.write_lock():
        if store.table() is None:
            raise ValueError(f"store {store.display_uri!r} has no table yet: ingest traces before recording {what}")
        current = field_metadata(store).get(key) or None
        store.table().update_field_metadata({"path": store.columns.vector,
                                             "metadata": {key: text, previous_key: current}})


def undo_record(store: Any, key: str, previous_key: str, what: str) -> str | None:
    """Put the previous value back under `key` (or remove the record); returns that value. ValueError when there is
    no record to undo."""
    store.check_writable()
    with store.write_lock():
        meta = field_metadata(store)
        if not meta.get(key):
            raise ValueError(f"store {store.display_uri!r} has no {what} to undo")
        previous = meta.get(previous_key) or None
        store.table().update_field_metadata({"path": store.columns.vector,
                                             "metadata": {key: previous, previous_key: None}})
    return previous


__all__ = ["field_metadata", "undo_record", "write_record"]
