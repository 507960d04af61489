"""A small record kept in the store's own metadata (the vector field's map, beside the identity), with the one
it replaced, so one undo restores it: what calibration (`store/calibration.py`) and learned adaptive strengths
(`store/adaptive.py`) write. Each write or undo is one metadata-only commit under the writers' lock.

`parse_record` is the one validator for a frozen dataclass stored as JSON (calibration, adaptive strengths): size,
an object, no unknown field, each field of the JSON type its annotation names; the class checks its own ranges."""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")
MAX_RECORD_CHARS = 20_000  # a metadata value larger than this was not written by us
_JSON_TYPES: dict[Any, tuple[type, ...]] = {str: (str,), float: (int, float), int: (int,), bool: (bool,),
                                            dict: (dict,), list: (list,)}


def _json_type(hint: Any) -> tuple[type, ...] | None:
    """What JSON values a field annotated `hint` takes (None: anything, e.g. `Any`)."""
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        parts = [(type(None),) if a is type(None) else _json_type(a) for a in typing.get_args(hint)]
        return None if any(p is None for p in parts) else tuple(t for p in parts for t in p or ())
    return _JSON_TYPES.get(origin)


def parse_record(cls: type[T], text: str | bytes, what: str, max_chars: int = MAX_RECORD_CHARS) -> T:
    """`cls` (a dataclass) from its JSON; ValueError naming the record (`what`) and what is wrong."""
    if len(text) > max_chars:
        raise ValueError(f"{what} of {len(text)} characters is too large (at most {max_chars})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not a JSON object")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{what} has unknown field(s) {', '.join(unknown)} (known: {', '.join(fields)})")
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        allowed = _json_type(hints.get(name, Any))
        wrong = allowed is not None and (not isinstance(value, allowed) or
                                         (isinstance(value, bool) and bool not in allowed))
        if wrong or (isinstance(value, float) and not math.isfinite(value)):
            names = sorted({"null" if t is type(None) else t.__name__ for t in allowed or ()})
            raise ValueError(f"{what} field {name!r} is {value!r}: expected {' or '.join(names) or 'a finite number'}")
    missing = [n for n, f in fields.items() if n not in data and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{what} lacks field(s) {', '.join(missing)}")
    return cls(**data)


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


__all__ = ["MAX_RECORD_CHARS", "field_metadata", "parse_record", "undo_record", "write_record"]
