"""Writing traces: upsert, delete, (de)activate, and the index upkeep after a write (`StoreWrites`, a
part of MemoryStore). Every write holds the store's write lock and tells the row copy (store/row_copy.py) what it
changed, so a large store's copy advances without a rebuild."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np

from retrieval.store.ann import ANN_MIN_ROWS, AnnIndex
from retrieval.store.context import ThreadKey, thread_key
from retrieval.store.row_cache import OVERLAY_MAX
from retrieval.store.identity import StoreIdentity, check_embedder, read_identity, write_identity
from retrieval.store.rows import ids_filter, to_row
from retrieval.store.thread_cache import ThreadCache
from retrieval.store.threads import Plan, ensure_columns, plan, rows_with_vectors, setting_of, stored_threads
from retrieval.store.versions import optimize
from retrieval.types import MemoryTrace

if TYPE_CHECKING:
    from retrieval.store.handle import TableHandle
    from retrieval.store.row_copy import RowCopy

log = logging.getLogger(__name__)

ADD_BATCH = 256

Progress = Callable[[int, int], None]


def check_vectors(vectors: np.ndarray, traces: list[MemoryTrace], embedder: object) -> None:
    """ValueError naming the embedder and the traces when a vector is not usable: NaN or infinite
    values (LanceDB would fail mid-write) or all zeros (never found by cosine search, and scored as
    similar to everything when hydrated). Called before anything is written."""
    finite = np.isfinite(vectors).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        zero = np.linalg.norm(np.where(np.isfinite(vectors), vectors, 0.0), axis=1) == 0.0
    bad = [(t.id, "NaN or infinite values" if not f else "an all-zero vector")
           for t, f, z in zip(traces, finite, zero) if not f or z]
    if bad:
        name = getattr(embedder, "name", None) or type(embedder).__name__
        shown = "; ".join(f"{i!r}: {why}" for i, why in bad[:5])
        shown += f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ValueError(f"embedder {name!r} returned unusable vectors, so nothing was written ({shown}); "
                         "check the embedder (a hosted one may have answered with an error payload) or the texts")


@dataclass
class AddReport:
    written: int = 0
    duplicates: list[str] = field(default_factory=list)  # ids repeated in one batch (last kept)
    traces: list[MemoryTrace] = field(default_factory=list)  # every trace written, as stored (contexts included)


class StoreWrites:
    """Every write of a store's rows, under the handle's write lock, telling the row copy what changed."""

    def __init__(self, handle: TableHandle, copy: RowCopy, ann: AnnIndex):
        self._handle = handle
        self._copy = copy
        self._ann = ann
        self.last_add_report = AddReport()
        self.last_commit = 0  # the table version this process's last row write committed (not a later one)
        self.last_recontexted: list[MemoryTrace] = []  # followers the last delete or (de)activation rewrote
        self.threads = ThreadCache()  # the threads the last context write read and wrote (store/thread_cache.py)

    def add(self, traces: Iterable[MemoryTrace], progress: Progress | None = None,
            batch_size: int = ADD_BATCH) -> int:
        """Upsert traces by id. The whole batch is validated before anything is written.

        Ids repeated inside the batch: the last one wins; they are listed in `last_add_report`.
        `progress(done, total)` is called after each embedded batch. With a context setting on, each trace
        gets its thread's context (store/threads.py) and the stored traces whose context the batch changes
        are rewritten in the same commit; `last_add_report.traces` lists every trace written, as stored.
        """
        self._handle.check_writable()
        batch = self._unique(traces)
        if not batch:
            return 0
        with self._handle.write_lock():
            p = plan(self._handle, batch, cache=self.threads)
            rows = self.embed_rows(p, progress, batch_size)
            tbl = self._handle.table(create=True)
            # Inside the lock: another process may have re-embedded the store with another model since
            # this one opened it; rows embedded with the old model must never land in it.
            current = self._handle.identity()
            if current is not None and current.embedder is not None:
                check_embedder(current, self._handle.embedder, self._handle.display_uri)
            ensure_columns(self._handle, tbl)
            with self._copy.write(tbl) as change:
                # Always an upsert, also into an empty table: two writers of one id leave one row.
                res = tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows)
                change["upserts"] = rows
                self.last_commit = int(getattr(res, "version", 0) or tbl.version)
            self.threads.committed(p.after, self.last_commit, written(p))
            self.last_add_report.written = len(batch)
            self.last_add_report.traces = p.batch + p.followers
            if read_identity(tbl).embedder is None:  # a store from before identities: record it now
                with self._copy.unchanged(tbl):
                    write_identity(tbl, StoreIdentity(getattr(self._handle.embedder, "name", None), self._handle.dim,
                                                      read_identity(tbl).analyzer))
            self.maintain_index()
        return len(batch)

    def _unique(self, traces: Iterable[MemoryTrace]) -> list[MemoryTrace]:
        """The batch validated, ids repeated in it reduced to their last occurrence (reported)."""
        traces = list(traces)
        for t in traces:
            if not isinstance(t, MemoryTrace):
                raise ValueError(f"add() takes MemoryTrace objects, got {type(t).__name__}")
            t.validate()
        unique: dict[str, MemoryTrace] = {}
        dups: list[str] = []
        for t in traces:
            if t.id in unique:
                dups.append(t.id)
                del unique[t.id]  # keep batch order of the last occurrence
            unique[t.id] = t
        if dups:
            log.warning("%d duplicate id(s) in one batch; the last occurrence of each was kept: %s",
                        len(dups), ", ".join(sorted(set(dups))[:10]))
        self.last_add_report = AddReport(written=0, duplicates=sorted(set(dups)))
        return list(unique.values())

    def embed_rows(self, p: Plan, progress: Progress | None = None, batch_size: int = ADD_BATCH) -> list[dict]:
        """The rows of a plan: each embedded from `text_for("dense")`, unless its stored vector is kept."""
        todo = [t for t in p.batch + p.followers if t.id not in p.vectors]
        vecs = dict(p.vectors)
        total = len(todo)
        for start in range(0, total, batch_size):
            chunk = todo[start:start + batch_size]
            v = np.asarray(self._handle.embedder.embed([t.text_for("dense") for t in chunk]), dtype=np.float32)
            dim = self._handle.embedder.dim
            if v.shape != (len(chunk), dim):
                raise ValueError(f"embedder returned shape {v.shape}, expected ({len(chunk)}, {dim})")
            check_vectors(v, chunk, self._handle.embedder)
            vecs.update(zip((t.id for t in chunk), v))
            if progress:
                progress(min(start + batch_size, total), total)
        return [to_row(t, vecs[t.id]) for t in p.batch + p.followers]

    def maintain_index(self) -> None:
        """Build the vector index once the table passes ANN_MIN_ROWS; fold in a large unindexed tail."""
        rows = self._handle.table().count_rows()
        if not self._ann.has_index():
            if rows >= ANN_MIN_ROWS:
                self._ann.ensure(min_rows=ANN_MIN_ROWS)
            return
        unindexed = self._handle.index_state()["unindexed_rows"]
        if unindexed > max(10_000, rows // 10):  # a flat scan of the tail would start to cost
            optimize(self._handle.table())  # tag-safe (store/versions.py); compaction moves row ids: the copy rebuilds

    def delete(self, ids: Iterable[str]) -> int:
        """Delete rows; the traces whose context used one are rewritten in the same commit
        (`last_recontexted`)."""
        self._handle.check_writable()
        ids = [i for i in ids if isinstance(i, str)]
        tbl = self._handle.table()
        self.last_recontexted = []
        if tbl is None or not ids:
            return 0
        with self._handle.write_lock():
            p = plan(self._handle, [], removed=ids, cache=self.threads)
            rows = self.embed_rows(p)
            with self._copy.write(tbl) as change:
                before = int(tbl.version)
                if rows:  # one commit: the followers rewritten, the ids deleted
                    (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                     .when_not_matched_by_source_delete(ids_filter(ids)).execute(rows))
                    change["upserts"] = rows
                else:
                    tbl.delete(ids_filter(ids))
                change["deleted"] = ids
                if int(tbl.version) == before:  # nothing matched, nothing committed
                    return 0
                self.last_commit = int(tbl.version)
                self.threads.committed(p.after, self.last_commit, written(p), removed=ids)
                self.last_recontexted = p.followers
                # counted from the commit itself (the row counts Lance records per version), never from a view
                # that another writer's commit may have made stale; the followers a merge rewrote keep their
                # count (an update is a delete and an insert in one commit), so only the removed ids show
                return rows_removed_by(tbl, self.last_commit)

    def set_active(self, ids: Iterable[str], active: bool) -> None:
        """(De)activate rows; inactive traces lend no context, so their followers are rewritten with them
        (one commit, `last_recontexted`)."""
        self._handle.check_writable()
        tbl = self._handle.table()
        ids = list(ids)
        self.last_recontexted = []
        if tbl is None or not ids:
            return
        with self._handle.write_lock():
            if setting_of(self._handle).on and stored_threads(self._handle, ids):
                self._set_active_in_context(tbl, ids, active)
                return
            with self._copy.write(tbl) as change:
                cache = self._copy.held
                if cache is not None and cache.version == tbl.version and len(ids) <= OVERLAY_MAX:
                    # an update rewrites the rows (new row ids): keep their vectors from before it
                    vecs = cache.exact_vectors(ids)
                    change["upserts"] = [{**r, "is_active": bool(active), self._handle.columns.vector: vecs[r["id"]]}
                                         for r in cache.rows(ids) if r["id"] in vecs]
                tbl.update(where=ids_filter(ids), values={"is_active": bool(active)})
                self.last_commit = int(tbl.version)

    def _set_active_in_context(self, tbl, ids: list[str], active: bool) -> None:
        stored = rows_with_vectors(self._handle, ids)
        p = plan(self._handle, [replace(t, is_active=active) for t, _ in stored], cache=self.threads)
        changed = {t.id: t for t in p.batch}
        p.vectors.update({t.id: v for t, v in stored if changed[t.id].text_for("dense") == t.text_for("dense")})
        rows = self.embed_rows(p)
        if not rows:  # none of the ids is stored: nothing to commit
            return
        with self._copy.write(tbl) as change:
            tbl.merge_insert("id").when_matched_update_all().execute(rows)
            change["upserts"] = rows
            self.last_commit = int(tbl.version)
        self.threads.committed(p.after, self.last_commit, written(p))
        self.last_recontexted = p.followers


def written(p: Plan) -> list[tuple[str, ThreadKey | None]]:
    """Every id a plan's commit stores, with its thread (the writer's `ThreadCache` keeps its stored ids in step)."""
    return [(t.id, thread_key(t)) for t in p.batch + p.followers]


def rows_removed_by(tbl, version: int) -> int:
    """Rows a committed delete removed: the row counts Lance recorded for `version` and the one before it."""
    metas = {int(v["version"]): v.get("metadata") or {} for v in tbl.list_versions()}
    if version - 1 not in metas or version not in metas:
        return 0
    return max(int(metas[version - 1].get("total_rows", 0)) - int(metas[version].get("total_rows", 0)), 0)
