"""Duplicate ids: how every reader resolves two rows of one id, and how a repair removes the losers (SPEC §18).

Why they happen: two writers that upsert the same new id at once on object storage both commit (Lance's
`merge_insert` only detects that conflict for a table with an unenforced primary key, and setting one makes every
`merge_insert` whose source marks `id` nullable — an agent's plain `merge_insert([{...}])` — fail, so the project
does not set it); a plain `tbl.add` by an agent never checks. So duplicates are tolerated and resolved the same way
by every reader, whatever the physical layout (a compaction reorders rows, so "the newest fragment" is not stable):

    the row with the greatest (last_accessed_at, created_at, content, scope, scope_id, is_active) wins

— the most recently touched version of the trace; ties are broken by the content itself, so two readers (or one
reader before and after a compaction) always pick the same row. `repair_duplicates` rewrites each duplicated id as
its winner (the winner is added first and the losers deleted after, so a crash in between leaves a duplicate,
never a lost trace).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

log = logging.getLogger(__name__)

RULE_COLUMNS = ("id", "last_accessed_at", "created_at", "content", "scope", "scope_id", "is_active")


def _key(row: Mapping[str, Any]) -> tuple:
    def ts(v):
        return v.timestamp() if v is not None and hasattr(v, "timestamp") else float("-inf")

    return (ts(row.get("last_accessed_at")), ts(row.get("created_at")), str(row.get("content") or ""),
            str(row.get("scope") or ""), str(row.get("scope_id") or ""), bool(row.get("is_active")))


def winner(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The row every reader keeps among rows of one id."""
    return max(rows, key=_key)


def resolve(rows: Iterable[Mapping[str, Any]]) -> list:
    """`rows` with one row per id (the rule's winner), in the order each id first appears."""
    by_id: dict[str, list] = {}
    for r in rows:
        by_id.setdefault(r["id"], []).append(r)
    return [group[0] if len(group) == 1 else winner(group) for group in by_id.values()]


def winner_positions(table: Any) -> list[int]:
    """Row positions of an Arrow table (with the RULE_COLUMNS present) that survive the rule, ascending."""
    import pyarrow.compute as pc

    ids = table.column("id")
    counts = pc.value_counts(ids)
    dup = {v.as_py() for v, c in zip(counts.field("values"), counts.field("counts")) if c.as_py() > 1}
    if not dup:
        return list(range(table.num_rows))
    id_list = ids.to_pylist()
    groups: dict[str, list[int]] = {}
    for i, x in enumerate(id_list):
        if x in dup:
            groups.setdefault(x, []).append(i)
    cols = [c for c in RULE_COLUMNS if c in table.column_names]
    sub = table.select(cols)
    keep = set(range(table.num_rows)) - {i for g in groups.values() for i in g}
    for positions in groups.values():
        rows = sub.take(positions).to_pylist()
        best = max(range(len(rows)), key=lambda k: _key(rows[k]))
        keep.add(positions[best])
    return sorted(keep)


def duplicate_ids(tbl: Any) -> dict[str, int]:
    """id → number of rows, for ids stored more than once (one scan of the id column)."""
    import pyarrow.compute as pc

    if tbl is None or tbl.count_rows() == 0:
        return {}
    counts = pc.value_counts(tbl.search().select(["id"]).limit(None).to_arrow().column("id"))
    return {v.as_py(): c.as_py() for v, c in zip(counts.field("values"), counts.field("counts")) if c.as_py() > 1}


def repair_duplicates(tbl: Any, ids: Iterable[str]) -> int:
    """Leave one row (the winner) for each of `ids`; returns how many rows were removed.

    The winners (read with every column) are appended first, then every older row of those ids is deleted by row
    id in one commit, guarded by the id, so a crash in between leaves duplicates to repair again, never a loss."""
    from retrieval.store.rows import ids_filter

    ids = sorted(set(ids))
    if not ids:
        return 0
    removed = 0
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        rows = tbl.search().where(ids_filter(part)).with_row_id(True).limit(None).to_arrow().to_pylist()
        old = [r.pop("_rowid") for r in rows]
        keep = resolve(rows)
        if len(keep) == len(rows):
            continue
        import pyarrow as pa

        tbl.add(pa.Table.from_pylist([dict(r) for r in keep], schema=tbl.schema))
        tbl.delete(f"({ids_filter(part)}) AND _rowid IN ({', '.join(str(int(x)) for x in old)})")
        removed += len(rows) - len(keep)
    left = duplicate_ids_among(tbl, ids)
    if left:
        log.warning("duplicate ids still present after a repair (another writer raced it): %s", sorted(left)[:10])
    return removed


def duplicate_ids_among(tbl: Any, ids: Sequence[str]) -> set[str]:
    from retrieval.store.rows import ids_filter

    if not ids:
        return set()
    got = tbl.search().where(ids_filter(list(ids))).select(["id"]).limit(None).to_arrow().column("id").to_pylist()
    seen: set[str] = set()
    return {i for i in got if i in seen or seen.add(i)}  # type: ignore[func-returns-value]
