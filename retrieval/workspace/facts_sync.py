"""Facts follow the traces table per trace id and content (SPEC §18), whoever wrote the rows.

A small table `fact_sources` beside the facts says, per trace id, which version of the trace its facts were
extracted from (the hash of the trace's own fields, `derived.own_hash`: a context change never re-extracts) and
which facts that extraction gave (a fingerprint of their keys). It is written after the facts, so a crash at any
point leaves it behind the facts, never ahead. `reconcile` compares it with a version of the table: traces whose
hash differs (new, edited, activated) are extracted again (an idempotent upsert that also drops their facts the new
text no longer gives), traces no longer active (deleted, deactivated) lose their facts, and any fact whose source
trace is gone goes too (an orphan left by a writer that never ran the extractor, or by a crash).

Two processes syncing one id at once (two machines on object storage, where no lock orders them) can interleave
so that one's facts are stored and the other's mark is written last. The fingerprint catches that: a trace whose
stored facts are not the ones its mark says were extracted has its facts replaced whole (which also drops a fact
row two writers inserted twice). So any interleaving converges at the next reconcile; running it twice changes
nothing; any process may run it. A table from before the fingerprint reads as "unknown" and is trusted until the
next mark (the column is added then).
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.store.remote import open_db
from retrieval.workspace.derived import own_hash

log = logging.getLogger(__name__)

TABLE = "fact_sources"
CHUNK = 2_000
FactKey = tuple[str, str, str]  # (scope, scope_id, key) of a stored fact


def _schema():
    import pyarrow as pa

    return pa.schema([pa.field("trace_id", pa.string()), pa.field("hash", pa.string()),
                      pa.field("facts", pa.string())])


def fingerprint(keys: Iterable[FactKey]) -> str:
    """One trace's facts as a short hash: every (scope, scope_id, key), a fact stored twice counted twice."""
    raw = json.dumps(sorted(list(k) for k in keys))
    return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Mark:
    hash: str
    facts: str | None  # fingerprint of the facts extracted at `hash`; None: marked before fingerprints existed


class FactSources:
    """trace id → the content hash its facts were extracted from, and the fingerprint of those facts."""

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None):
        self.uri, self.storage_options = uri, storage_options
        self._tbl: Any = None

    def _table(self, create: bool) -> Any:
        if self._tbl is None:
            db = open_db(self.uri, self.storage_options, consistent=True)
            if TABLE in db.table_names():
                self._tbl = db.open_table(TABLE)
            elif create:
                self._tbl = db.create_table(TABLE, schema=_schema(), exist_ok=True)
        return self._tbl

    def version(self) -> int:
        """The marks table's newest version (-1 when there is none yet)."""
        tbl = self._table(create=False)
        return -1 if tbl is None else int(tbl.version)

    def marks(self) -> dict[str, Mark]:
        tbl = self._table(create=False)
        if tbl is None:
            return {}
        cols = ["trace_id", "hash"] + (["facts"] if "facts" in tbl.schema.names else [])
        data = tbl.search().select(cols).limit(None).to_arrow()
        prints = data.column("facts").to_pylist() if "facts" in cols else [None] * data.num_rows
        return {i: Mark(h, f) for i, h, f in zip(data.column("trace_id").to_pylist(),
                                                  data.column("hash").to_pylist(), prints)}

    def read(self) -> dict[str, str]:
        return {i: m.hash for i, m in self.marks().items()}

    def mark(self, hashes: Mapping[str, str], prints: Mapping[str, str] | None = None) -> None:
        """Record `hashes` (id → content hash) as extracted, with each id's facts fingerprint from `prints`."""
        if not hashes:
            return
        import pyarrow as pa

        prints = prints or {}
        rows = pa.Table.from_pylist([{"trace_id": i, "hash": h, "facts": prints.get(i)} for i, h in hashes.items()],
                                    schema=_schema())
        tbl = self._table(create=True)
        if "facts" not in tbl.schema.names:  # a table from before fingerprints: add the column once
            try:
                tbl.add_columns({"facts": "CAST(NULL AS STRING)"})
            except Exception:  # another process added it first
                tbl.checkout_latest()
            if "facts" not in tbl.schema.names:
                rows = rows.drop(["facts"])
        tbl.merge_insert("trace_id").when_matched_update_all().when_not_matched_insert_all().execute(rows)

    def drop(self, ids: Iterable[str]) -> None:
        from retrieval.store.rows import sql_quote

        ids = sorted(set(ids))
        tbl = self._table(create=False)
        for start in range(0, len(ids), CHUNK):
            if tbl is not None:
                tbl.delete("trace_id IN (" + ", ".join(sql_quote(i) for i in ids[start:start + CHUNK]) + ")")


@dataclass(frozen=True)
class FactsSync:
    extracted: int = 0  # traces whose facts were extracted again
    removed: int = 0  # traces whose facts went
    new_facts: int = 0
    warnings: tuple[str, ...] = ()


def stored_keys(facts: Any) -> dict[str, list[FactKey]]:
    """Trace id → the (scope, scope_id, key) of every stored fact that names it as a source."""
    tbl = facts._table(create=False)
    if tbl is None:
        return {}
    data = tbl.search().select(["scope", "scope_id", "key", "source_trace_ids"]).limit(None).to_arrow()
    out: dict[str, list[FactKey]] = {}
    for scope, sid, key, ids in zip(*(data.column(c).to_pylist() for c in ("scope", "scope_id", "key",
                                                                          "source_trace_ids"))):
        for i in ids or ():
            out.setdefault(i, []).append((scope, sid, key))
    return out


def fact_source_ids(facts: Any) -> set[str]:
    """Every trace id some stored fact names as a source."""
    return set(stored_keys(facts))


def sync(store: Any, facts: Any, sources: FactSources, extractor: Any, hashes: Mapping[str, str],
         todo: list[str], gone: list[str], version: int | None = None) -> FactsSync:
    """Extract the facts of `todo` (active at `version`, hashes given), drop those of `gone`, then mark them."""
    from retrieval.facts.inject import extract, store_extracted
    from retrieval.store.duplicates import resolve
    from retrieval.store.rows import from_row, ids_filter
    from retrieval.workspace.derived import pinned

    tbl = pinned(store, version)
    n, warnings = 0, list[str]()
    for start in range(0, max(len(todo), 1 if gone else 0), CHUNK):
        part = todo[start:start + CHUNK]
        rows = tbl.search().where(ids_filter(part)).limit(None).to_arrow().to_pylist() if part else []
        traces = [from_row(r) for r in resolve(rows) if r.get("is_active")]
        by_scope, w = extract(extractor, traces)
        n, warnings = n + store_extracted(facts, by_scope, part + (gone if start == 0 else [])), warnings + w
        got: dict[str, list[FactKey]] = {}
        for scope, found in by_scope.items():
            for f in {f.key: f for f in found}.values():  # as FactStore.upsert stores them: once per key
                for i in f.source_trace_ids:
                    got.setdefault(i, []).append((scope.scope, scope.scope_id, f.key))
        sources.mark({i: own_hash(hashes[i]) for i in part if i in hashes},
                     {i: fingerprint(got.get(i, ())) for i in part})
    sources.drop(gone)
    return FactsSync(len(todo), len(gone), n, tuple(warnings))


def _behind(marks: Mapping[str, Mark], stored: Mapping[str, list[FactKey]], hashes: Mapping[str, str]
            ) -> tuple[list[str], list[str], list[str]]:
    """(ids to extract, of those the ones whose stored facts are not what their mark says, ids to drop)."""
    todo, torn = [], []
    for i, h in hashes.items():
        m = marks.get(i)
        if m is None or m.hash != own_hash(h):
            todo.append(i)
        elif m.facts is not None and m.facts != fingerprint(stored.get(i, ())):
            todo.append(i)
            torn.append(i)
    return sorted(todo), sorted(torn), sorted((set(marks) | set(stored)) - set(hashes))


def reconcile(store: Any, facts: Any, sources: FactSources, extractor: Any, hashes: Mapping[str, str],
              version: int) -> FactsSync:
    """Bring the facts in step with the table at `version` (`hashes`: its active ids → content hash)."""
    todo, torn, gone = _behind(sources.marks(), stored_keys(facts), hashes)
    if not todo and not gone:
        return FactsSync()
    log.warning("facts: %d trace(s) to extract (%d whose stored facts differ from their mark), %d to drop, to match "
                "table version %d", len(todo), len(torn), len(gone), version)
    if torn:  # replaced whole: a fact row two writers inserted twice goes too
        facts.delete_for_traces(torn)
    return sync(store, facts, sources, extractor, hashes, todo, gone, version)


def pending(facts: Any, sources: FactSources, hashes: Mapping[str, str]) -> int:
    """How many traces' facts are not in step with `hashes` (new, edited, torn, or gone)."""
    todo, _torn, gone = _behind(sources.marks(), stored_keys(facts), hashes)
    return len(todo) + len(gone)
