"""Untrusted record values → a validated `MemoryTrace` (the per-line half of the loaders).

Each function raises `ValueError` naming the field and the value (shown safely: a 5,000-digit int
or a deep list has no cheap repr); `loaders.py` turns that into a `LineError` for the line.
"""
from __future__ import annotations

import hashlib
import re
import math
from dataclasses import dataclass
from datetime import datetime, UTC
from typing import Any
from collections.abc import Mapping

from retrieval.types import MAX_TIME, MIN_TIME, MemoryTrace

TEXT_FIELDS = ("content", "text", "body", "message", "note")
ID_FIELDS = ("id", "_id", "trace_id", "doc_id")
# What a malformed line can raise while being parsed or turned into a trace; each becomes a LineError.
LINE_ERRORS = (ValueError, TypeError, OverflowError, OSError, RecursionError, UnicodeError)


@dataclass(frozen=True)
class FieldMap:
    """Which input field feeds which trace field (`None` = look for the usual names)."""

    id: str | None = None
    content: str | None = None
    title: str | None = None
    created_at: str | None = None
    scope_id: str | None = None
    tags: str | None = None


def _show(value: Any, limit: int = 60) -> str:
    """A short repr that cannot itself fail (a 5,000-digit int or deep list has no cheap repr)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, (list, dict)):
        return f"a {'list' if isinstance(value, list) else 'JSON object'}"
    text = ascii(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _number(value: Any) -> float:
    """int, float or numeric text → float; `1e400` becomes inf, which validation then rejects."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{_show(value)} is not a number")
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{_show(value)} is not a number") from None


def parse_datetime(value: Any) -> datetime:
    """ISO 8601 (`2025-03-01`, `2025-03-01T10:00:00+01:00`, trailing `Z`) or epoch seconds/ms.

    A value without a timezone is read as UTC; a number above 1e11 is read as milliseconds.
    Numeric text (`"1700000000"`) counts as a number when it is not ISO 8601.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        secs = _number(value)
        secs = secs / 1000.0 if abs(secs) > 1e11 else secs
        if not MIN_TIME.timestamp() <= secs <= MAX_TIME.timestamp():  # NaN fails too
            raise ValueError(f"epoch time {_show(value)} is outside {MIN_TIME:%Y-%m-%d} .. {MAX_TIME:%Y-%m-%d}")
        dt = datetime.fromtimestamp(secs, tz=UTC)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        text = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"date {_show(value)} is not ISO 8601 (e.g. 2025-03-01T10:00:00Z) "
                                 "or epoch seconds") from None
            return parse_datetime(number)
    else:
        raise ValueError(f"date {_show(value)} is not ISO 8601 (e.g. 2025-03-01T10:00:00Z) or epoch seconds")
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _integer(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    f = _number(value) if not isinstance(value, bool) else math.nan
    if not math.isfinite(f) or not f.is_integer():
        raise ValueError(f"field '{name}' is {_show(value)}, not a whole number")
    return int(f)


def _scalar_text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
        return str(value)
    raise ValueError(f"field '{name}' is {_show(value)}; expected text")


def auto_id(scope: str, scope_id: str, stem: str, suffix: str) -> str:
    """`user:u1/notes-1`: the scope is part of an id the loader makes up (see the module docstring)."""
    stem = _SPACES.sub("-", stem[:64]).strip("-")  # a file name's spaces never reach an id
    return f"{scope}:{scope_id}/{stem or 'trace'}-{suffix}"


def _content_suffix(content: str) -> str:
    return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
ID_RULE = "ids may not hold spaces or tabs (TREC qrels and other exchange formats split on them); use '-' or '_'"


def _no_whitespace(tid: str) -> None:
    """ValueError naming the id when it holds a space or a tab inside (a line separator: validate() says more)."""
    gap = next((c for c in tid if c in " \t\u00a0\u3000"), None)
    if gap is not None:
        fixed = _SPACES.sub("-", tid[:80])
        raise ValueError(f"trace {ascii(tid[:80])}: field 'id' holds whitespace ({ascii(gap)} at position "
                         f"{tid.index(gap)}); {ID_RULE}, e.g. {ascii(fixed)}")


def trace_from_record(rec: Mapping[str, Any], *, scope: str = "user", scope_id: str = "default",
                      fields: FieldMap = FieldMap(), id_prefix: str = "trace") -> MemoryTrace:
    """Build and validate one trace from a dict; raises ValueError naming the problem."""
    if not isinstance(rec, Mapping):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    kw: dict[str, Any] = {"content": _content(rec, fields)}
    kw["scope"] = _scalar_text("scope", rec.get("scope") or scope)
    kw["scope_id"] = _scalar_text("scope_id", rec.get(fields.scope_id or "scope_id") or scope_id)
    id_key = fields.id or next((f for f in ID_FIELDS if rec.get(f) not in (None, "")), None)
    raw_id = rec.get(id_key) if id_key else None
    if id_key is None or raw_id in (None, ""):
        kw["id"] = auto_id(kw["scope"], kw["scope_id"], id_prefix, _content_suffix(kw["content"]))
    else:
        kw["id"] = _scalar_text(id_key, raw_id).strip(" \t")  # padding only: a separator must reach validate()
        _no_whitespace(kw["id"])
    for name in ("type", "source_type"):
        if rec.get(name):
            kw[name] = _scalar_text(name, rec[name])
    kw.update(_lists(rec, fields))
    kw.update(_numbers(rec))
    kw.update(_dates(rec, fields))
    kw.update(_thread(rec))
    trace = MemoryTrace(**kw)
    trace.validate()
    return trace


def _thread(rec: Mapping[str, Any]) -> dict[str, Any]:
    """`thread` (the conversation, text) and `position` (the turn's order in it, a whole number >= 0)."""
    out: dict[str, Any] = {}
    if rec.get("thread") not in (None, ""):
        out["thread"] = _scalar_text("thread", rec["thread"]).strip()
    if rec.get("position") not in (None, ""):
        try:
            out["position"] = _integer("position", rec["position"])
        except ValueError as exc:
            msg = str(exc)
            raise ValueError(msg if msg.startswith("field") else f"field 'position': {msg}") from None
        if out["position"] < 0:
            raise ValueError(f"field 'position' is {out['position']}; a turn's order in its thread is 0 or more")
        if "thread" not in out:
            raise ValueError("field 'position' is given without 'thread'; give the conversation it orders")
    return out


def _content(rec: Mapping[str, Any], fields: FieldMap) -> str:
    content = rec.get(fields.content) if fields.content else next(
        (rec[f] for f in TEXT_FIELDS if isinstance(rec.get(f), str)), None)
    title = rec.get(fields.title) if fields.title else rec.get("title")
    if not isinstance(content, str) or not content.strip():
        wanted = fields.content or "/".join(TEXT_FIELDS)
        raise ValueError(f"no text: field '{wanted}' is missing or empty")
    if isinstance(title, str) and title.strip():
        content = f"{title.strip()}\n{content.strip()}"
    return content.strip()


def _lists(rec: Mapping[str, Any], fields: FieldMap) -> dict[str, tuple[str, ...]]:
    out = {}
    for name in ("tags", "entities"):
        key = (fields.tags if name == "tags" and fields.tags else name)
        val = rec.get(key)
        if isinstance(val, str):
            val = [v.strip() for v in val.replace(";", ",").split(",") if v.strip()]
        if val:
            if not isinstance(val, (list, tuple)):
                raise ValueError(f"field '{key}' must be a list of strings")
            out[name] = tuple(_scalar_text(key, v) for v in val)
    return out


def _numbers(rec: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("confidence", "encoding_strength", "stability_ms", "valence", "arousal", "dominance"):
        if rec.get(name) not in (None, ""):
            try:
                out[name] = _number(rec[name])
            except ValueError as exc:
                raise ValueError(f"field '{name}': {exc}") from None
    if rec.get("retrieval_count") not in (None, ""):
        out["retrieval_count"] = _integer("retrieval_count", rec["retrieval_count"])
    if rec.get("is_active") not in (None, ""):
        v = rec["is_active"]
        out["is_active"] = v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes")
    return out


def _dates(rec: Mapping[str, Any], fields: FieldMap) -> dict[str, datetime]:
    out = {}
    created_key = fields.created_at or next((k for k in ("created_at", "timestamp", "date") if rec.get(k)), None)
    for name, key in (("created_at", created_key), ("last_accessed_at", "last_accessed_at")):
        if key and rec.get(key) not in (None, ""):
            try:
                out[name] = parse_datetime(rec[key])
            except LINE_ERRORS as exc:
                raise ValueError(f"field '{key}': {exc}") from None
    return out
