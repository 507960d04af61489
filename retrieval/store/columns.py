"""Column mapping: read an existing LanceDB table in place, whatever its column names (read-only, no copy).

`ColumnMap.parse("id=doc_id,text=body,vector=emb,scope_id=tenant,created_at=ts")` names the source
column of each field; `bind(schema)` checks it against the table. Fields the table lacks take these
documented defaults (DEFAULTS): scope `user` (or `default_scope`), scope_id `default`, type
`episodic`, tags/entities empty, source_type `user_statement`, confidence 1.0, created_at
2000-01-01 UTC (every row equally old, so recency does not reorder), last_accessed_at = created_at,
encoding_strength 0.5, stability_ms 3,600,000, retrieval_count 0, valence/arousal/dominance 0.0,
is_active true. A column already named like one of our fields (`is_active`, `valence`, `tags` …) is
used as is. A scope column must hold thread|user|persona|organization; other values read as the
default scope. Timestamps may be Arrow timestamps, ISO strings or epoch seconds/milliseconds.
"""
from __future__ import annotations

from typing import Any

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, UTC
from collections.abc import Mapping, Sequence

from retrieval.store.rows import CONTEXT_COLUMNS, SCALAR_COLUMNS, ids_filter, scope_filter, sql_quote
from retrieval.types import SCOPES, Scope

FIELDS = ("id", "text", "vector", "scope", "scope_id", "created_at", "last_accessed_at")
DEFAULT_TIME = datetime(2000, 1, 1, tzinfo=UTC)
DEFAULTS = {
    "type": "episodic", "tags": [], "entities": [], "source_type": "user_statement", "confidence": 1.0,
    "encoding_strength": 0.5, "stability_ms": 3_600_000.0, "retrieval_count": 0, "valence": 0.0,
    "arousal": 0.0, "dominance": 0.0, "is_active": True,
}
_NAME = re.compile(r"^[^`\x00]+$")


def _col(name: str) -> str:
    return f"`{name}`"


@dataclass(frozen=True)
class ColumnMap:
    """Source column per field; None for a field the table lacks (scope, scope_id, timestamps)."""

    id: str = "id"
    text: str = "content"
    vector: str = "vector"
    scope: str | None = "scope"
    scope_id: str | None = "scope_id"
    created_at: str | None = "created_at"
    last_accessed_at: str | None = "last_accessed_at"
    default_scope: str = "user"
    default_scope_id: str = "default"
    present: frozenset = field(default=frozenset(SCALAR_COLUMNS))  # our other fields the table has
    native: bool = True
    extras: tuple[str, ...] = CONTEXT_COLUMNS  # the later columns a native table has (older ones lack them)

    @classmethod
    def parse(cls, text: str | Mapping[str, str] | None) -> ColumnMap:
        """`field=column` pairs (comma-separated or a mapping) over the defaults; an external map."""
        if isinstance(text, str):
            pairs = {k: v for k, _, v in (p.partition("=") for p in text.split(",") if p.strip())}
        else:
            pairs = dict(text or {})
        kw: dict[str, Any] = {}
        for key, col in pairs.items():
            key, col = key.strip(), (col or "").strip()
            if key not in FIELDS + ("default_scope", "default_scope_id"):
                raise ValueError(f"column mapping key {key!r} is not one of {', '.join(FIELDS)}, "
                                 "default_scope, default_scope_id")
            if key not in ("default_scope", "default_scope_id") and col and not _NAME.match(col):
                raise ValueError(f"column name {col!r} for {key} may not contain backticks or NUL")
            kw[key] = col or None
        if kw.get("default_scope", "user") not in SCOPES:
            raise ValueError(f"default_scope {kw['default_scope']!r} is not one of {', '.join(SCOPES)}")
        for required in ("id", "text", "vector"):
            if required in kw and not kw[required]:
                raise ValueError(f"the column mapping needs a column for {required}")
        return replace(cls(), native=False, **kw)

    def bind(self, schema) -> ColumnMap:
        """Check the mapping against a table schema; unmapped optional fields become None."""
        names = set(schema.names)
        if self.native:
            return replace(self, extras=tuple(c for c in CONTEXT_COLUMNS if c in names))
        for key in ("id", "text", "vector"):
            if getattr(self, key) not in names:
                raise ValueError(f"table has no column {getattr(self, key)!r} for {key}; columns: "
                                 f"{', '.join(sorted(names))}; pass a mapping like --columns {key}=COLUMN")
        vt = schema.field(self.vector).type
        if getattr(vt, "list_size", -1) in (-1, None, 0):
            raise ValueError(f"vector column {self.vector!r} is {vt}, not a fixed-size list; "
                             "LanceDB searches fixed-size vectors only")
        opt: dict[str, Any] = {k: (getattr(self, k) if getattr(self, k) in names else None)
               for k in ("scope", "scope_id", "created_at", "last_accessed_at")}
        mapped = {self.id, self.text, self.vector} | {c for c in opt.values() if c}
        present = frozenset(c for c in DEFAULTS if c in names and c not in mapped)
        return replace(self, present=present, **opt)

    # ------------------------------------------------------------------ queries
    def select(self, with_vectors: bool = False) -> list[str] | dict[str, str]:
        if self.native:
            return list(SCALAR_COLUMNS) + list(self.extras) + (["vector"] if with_vectors else [])
        out = {"id": _col(self.id), "content": _col(self.text)}
        for ours in ("scope", "scope_id", "created_at", "last_accessed_at"):
            if getattr(self, ours):
                out[ours] = _col(getattr(self, ours))
        out.update({c: _col(c) for c in sorted(self.present)})
        if with_vectors:
            out["vector"] = _col(self.vector)
        return out

    def ids_filter(self, ids: Sequence[str]) -> str:
        if self.native:
            return ids_filter(ids)
        return f"{_col(self.id)} IN (" + ", ".join(sql_quote(i) for i in ids) + ")"

    def scope_filter(self, scopes: Sequence[Scope] | None) -> str | None:
        if self.native or scopes is None:
            return scope_filter(scopes)
        scope_filter(scopes)  # validates
        parts = []
        for s in scopes:
            conds: list[str] | None = []
            for col, val, default in ((self.scope, s.scope, self.default_scope),
                                      (self.scope_id, s.scope_id, self.default_scope_id)):
                if col and conds is not None:
                    conds.append(f"{_col(col)} = {sql_quote(val)}")
                elif val != default:
                    conds = None
                    break
            if conds is None:
                continue
            if not conds:
                return "true"
            parts.append("(" + " AND ".join(conds) + ")")
        return " OR ".join(parts) if parts else "false"

    def active_filter(self) -> str | None:
        return "is_active = true" if self.native or "is_active" in self.present else None

    def text_filter(self, needle: str) -> str:
        q = sql_quote(needle.lower())
        return f"(strpos(lower({_col(self.text)}), {q}) > 0 OR strpos(lower({_col(self.id)}), {q}) > 0)"

    def normalize(self, row: dict) -> dict:
        """A row in our field names, defaults filled (the native schema is returned as is)."""
        if self.native:
            return row
        out = dict(DEFAULTS)
        out.update(row)
        out["id"], out["content"] = str(row["id"]), row.get("content") or ""
        sc = row.get("scope")
        out["scope"] = sc if sc in SCOPES else self.default_scope
        out["scope_id"] = str(row["scope_id"]) if row.get("scope_id") is not None else self.default_scope_id
        out["created_at"] = _time(row.get("created_at")) or DEFAULT_TIME
        out["last_accessed_at"] = _time(row.get("last_accessed_at")) or out["created_at"]
        out["tags"], out["entities"] = out.get("tags") or [], out.get("entities") or []
        return out


NATIVE = ColumnMap()


def _time(value) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, tz=UTC)
    try:
        return _time(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return None
