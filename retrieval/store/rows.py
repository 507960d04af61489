"""Rows of the traces table: the Arrow schema, trace <-> row conversion, and safe SQL filters.

User input never reaches a LanceDB filter string unescaped (SPEC §2): scope kinds are validated
and every value is quoted here.
"""
from __future__ import annotations

from datetime import datetime, UTC
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from retrieval.types import SCOPES, MemoryTrace, Scope

SCALAR_COLUMNS = (
    "id", "content", "scope", "scope_id", "type", "source_type", "confidence", "created_at",
    "last_accessed_at", "encoding_strength", "stability_ms", "retrieval_count", "valence",
    "arousal", "dominance", "is_active", "tags", "entities",
)
# Added later (a trace's thread and position, and the context the store assembled for it): a table made
# before them lacks them; it reads them as absent and gains them on its next write (`missing_columns`).
CONTEXT_COLUMNS = ("thread", "position", "context", "context_sides")
CONTEXT_TYPES = {"thread": "string", "position": "int64", "context": "string", "context_sides": "string"}


def schema(dim: int):
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema([
        ("id", pa.string()), ("content", pa.string()), ("scope", pa.string()),
        ("scope_id", pa.string()), ("type", pa.string()), ("tags", pa.list_(pa.string())),
        ("entities", pa.list_(pa.string())), ("source_type", pa.string()),
        ("confidence", pa.float64()), ("created_at", ts), ("last_accessed_at", ts),
        ("encoding_strength", pa.float64()), ("stability_ms", pa.float64()),
        ("retrieval_count", pa.int64()), ("valence", pa.float64()), ("arousal", pa.float64()),
        ("dominance", pa.float64()), ("is_active", pa.bool_()),
        *((c, getattr(pa, CONTEXT_TYPES[c])()) for c in CONTEXT_COLUMNS),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def to_row(t: MemoryTrace, vec: np.ndarray) -> dict:
    return {
        "id": t.id, "content": t.content, "scope": t.scope, "scope_id": t.scope_id, "type": t.type,
        "tags": list(t.tags), "entities": list(t.entities), "source_type": t.source_type,
        "confidence": float(t.confidence), "created_at": t.created_at.astimezone(UTC),
        "last_accessed_at": (t.last_accessed_at or t.created_at).astimezone(UTC),
        "encoding_strength": float(t.encoding_strength), "stability_ms": float(t.stability_ms),
        "retrieval_count": int(t.retrieval_count), "valence": float(t.valence),
        "arousal": float(t.arousal), "dominance": float(t.dominance), "is_active": bool(t.is_active),
        "thread": t.thread, "position": t.position, "context": t.context, "context_sides": t.context_sides,
        "vector": vec.astype(np.float32),
    }


def missing_columns(tbl) -> dict[str, str]:
    """The context columns an older table lacks, as LanceDB `add_columns` SQL (null for every old row)."""
    names = set(tbl.schema.names)
    sql = {"string": "STRING", "int64": "BIGINT"}
    return {c: f"CAST(NULL AS {sql[CONTEXT_TYPES[c]]})" for c in CONTEXT_COLUMNS if c not in names}

def from_row(row: Mapping) -> MemoryTrace:
    def aware(dt: datetime) -> datetime:
        return dt if dt.tzinfo else dt.replace(tzinfo=UTC)

    return MemoryTrace(
        id=row["id"], content=row["content"], scope=row["scope"], scope_id=row["scope_id"],
        type=row["type"], tags=tuple(row["tags"] or ()), entities=tuple(row["entities"] or ()),
        source_type=row["source_type"], confidence=row["confidence"],
        created_at=aware(row["created_at"]), last_accessed_at=aware(row["last_accessed_at"]),
        encoding_strength=row["encoding_strength"], stability_ms=row["stability_ms"],
        retrieval_count=row["retrieval_count"], valence=row["valence"], arousal=row["arousal"],
        dominance=row["dominance"], is_active=row["is_active"], thread=row.get("thread"),
        position=row.get("position"), context=row.get("context"), context_sides=row.get("context_sides"),
    )


def sql_quote(value: str) -> str:
    """Quote a string literal for a LanceDB (DataFusion SQL) filter: ' doubles to ''."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string for a filter value, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("filter values may not contain NUL characters")
    return "'" + value.replace("'", "''") + "'"


def scope_filter(scopes: Sequence[Scope] | None) -> str | None:
    """`(scope = 'user' AND scope_id = 'u1') OR …`; scope kinds validated, ids quoted."""
    if scopes is None:
        return None
    parts = []
    for s in scopes:
        if not isinstance(s, Scope):
            raise ValueError(f"scopes must be Scope objects, got {s!r}")
        if s.scope not in SCOPES:  # Scope validates too; this keeps the filter safe on its own
            raise ValueError(f"scope {s.scope!r} is not one of {', '.join(SCOPES)}")
        parts.append(f"(scope = {sql_quote(s.scope)} AND scope_id = {sql_quote(s.scope_id)})")
    return " OR ".join(parts) if parts else "false"


def ids_filter(ids: Iterable[str]) -> str:
    """`id IN (…)`; no ids is a filter that matches nothing (LanceDB refuses `id IN ()`)."""
    quoted = [sql_quote(i) for i in ids]
    return "id IN (" + ", ".join(quoted) + ")" if quoted else "false"
