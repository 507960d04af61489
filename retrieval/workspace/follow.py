"""A Workspace's derived state kept in step with the traces table (SPEC §18): BM25, facts and audit.

- Open: the BM25 sidecar (local stores) is loaded and caught up from the version it was built from; without one,
  BM25 is built from the newest version, read pinned. Then facts and audit are reconciled with that version.
- Catch-up (another writer committed): BM25 by the rows whose content hash differs between the version it
  reflects and the newest (workspace/derived.py), then facts (workspace/facts_sync.py) and audit
  (workspace/audit.py) reconciled with the newest version.
- After this process's own commit: applied as a small change only when that commit is the very next version after
  the one reflected; anything else (another writer got in between) is a catch-up. No step relies on the local file
  lock: it only makes "the next version" the usual case on one machine.
"""
from __future__ import annotations

import logging
from typing import Any

from retrieval.sparse.build import load_sidecar, log_progress, new_bm25, open_sparse
from retrieval.workspace import facts_sync
from retrieval.workspace.derived import VersionState, catch_up, changed, own_change, read_version, row_hash, value

log = logging.getLogger(__name__)


class Follower:
    """The BM25 index of one Workspace, the table version (and active-row hashes) it reflects, and the facts left
    to bring in step. Call every method with the store's write lock held."""

    def __init__(self, ws: Any):
        self.ws = ws
        self.index: Any = None
        self.version = -1
        self.hashes: dict[str, str] | None = None  # active id → content hash at `version` (None: not read yet)
        self.facts_pending = 0  # traces whose facts are not in step (a failed or interrupted facts write)
        self.last_sync = facts_sync.FactsSync()  # what the last reconcile did
        self._read_hashes: tuple[int, dict[str, str]] = (-1, {})  # `facts_behind`'s scan, kept per version
        self._behind: tuple[tuple[int, int, int], int] | None = None  # `facts_behind`'s count and what it read

    @property
    def follows_bm25(self) -> bool:
        return self.ws.sparse == "bm25" and self.ws.store.columns.native

    def open(self) -> None:
        store = self.ws.store
        if store.table() is None:  # a new store: an empty BM25, or the FTS reader that indexes once rows come
            fresh = new_bm25(store) if self.ws.sparse == "bm25" else open_sparse(store, self.ws.sparse, None).index
            self.index, self.version, self.hashes = fresh, 0, {}
            return
        if not store.columns.native:  # a foreign table read in place: BM25 built in memory, nothing written
            opened = open_sparse(store, self.ws.sparse, None, self.ws.progress)
            self.index, self.version = opened.index, opened.version
            return
        if self.ws.sparse != "bm25":
            self.index = open_sparse(store, self.ws.sparse, None).index
            self.advance()
            return
        loaded = load_sidecar(store, self.ws.bm25_path)
        if loaded is not None:
            self.index, self.version = loaded
            if self.version == store.version():  # in step: no BM25 work; facts and audit checked by a writer
                if not self.ws.keeps_disk:  # (one scan of the text, hashed; a read-only server skips it)
                    state = read_version(store, self.version)
                    self.hashes = state.hashes
                    self.reconcile(state)
                return
            log.warning("BM25 sidecar %s reflects table version %s but the store is at %s; catching up by the "
                        "rows that differ", self.ws.bm25_path, self.version, store.version())
        else:
            if self.ws.bm25_path is not None and store.version() > 0:
                log.warning("no usable BM25 sidecar at %s; building it from the store", self.ws.bm25_path)
            self.index, self.version = new_bm25(store), -1
        self.advance()

    def facts_behind(self) -> int:
        """Traces whose facts are not in step with the version reflected, counted from the store (each trace's
        extraction mark against its content hash: `facts_sync.pending`, what `doctor` counts), and never fewer than
        this process's failed facts writes. A read-only demo never reconciles, so only the store can say (probe:
        `status` said 0 where `doctor` said 2). Read-only: safe without the write lock."""
        ws = self.ws
        if self.version <= 0 or not ws.store.columns.native or ws.extractor() is None:
            return self.facts_pending
        hashes = self.hashes
        if hashes is None:  # a demo in step skipped the scan at open: one scan per version, kept
            if self._read_hashes[0] != self.version:
                self._read_hashes = (self.version, read_version(ws.store, self.version).hashes)
            hashes = self._read_hashes[1]
        try:  # counted once per (traces, facts, marks) versions: Home asks on every rerun (a whole-table read)
            read = (self.version, ws.facts.version(), ws.fact_sources.version())
            if self._behind is None or self._behind[0] != read:
                self._behind = (read, facts_sync.pending(ws.facts, ws.fact_sources, hashes))
            behind = self._behind[1]
        except Exception as exc:  # an unreadable facts table: status still renders
            log.warning("cannot count the facts behind (%s)", exc)
            behind = 0
        return max(behind, self.facts_pending)

    def advance(self) -> bool:
        """Catch up with the newest version; True when something changed."""
        store = self.ws.store
        if not store.columns.native:
            latest = store.version()
            if latest == self.version:
                return False
            self.index.sync(store.all_traces() if self.ws.sparse == "bm25" else (), complete=True)
            self.version = latest
            return True
        before = self._hashes_before()
        if self.follows_bm25 and before is None:  # build from scratch, streamed into a fresh index
            fresh = new_bm25(store)
            state = read_version(store, None, wanted=lambda _i, _h: True, progress=self._progress(), sink=fresh.update)
            self.index = fresh
        else:
            state = read_version(store, None, wanted=changed(before) if self.follows_bm25 else None)
            if self.follows_bm25:
                catch_up(self.index, before, state)
        moved = state.version != self.version
        self.version, self.hashes = state.version, state.hashes
        if self.follows_bm25:
            self.ws._save(self.index, self.version)
        return self.reconcile(state) or moved

    def _hashes_before(self) -> dict[str, str] | None:
        """The active-row hashes of the version BM25 reflects (read from that version when not held); None when
        BM25 must be built from scratch (nothing reflected, or that version was cleaned up)."""
        if self.hashes is not None or not self.follows_bm25:
            return self.hashes
        if self.version <= 0 or self.index is None:
            return None if self.version < 0 else {}
        try:
            return read_version(self.ws.store, self.version).hashes
        except Exception as exc:
            log.warning("table version %s (what BM25 reflects) cannot be read (%s); rebuilding BM25", self.version,
                        exc)
            return None

    def _progress(self):
        return self.ws.progress or log_progress(f"BM25 from {self.ws.store.display_uri}")

    def reconcile(self, state: VersionState) -> bool:
        """Facts and audit in step with `state` (nothing is written by a Workspace that keeps the disk)."""
        ws = self.ws
        if ws.keeps_disk:
            return False
        done = False
        self.last_sync = facts_sync.FactsSync()
        if ws.extractor() is not None:
            try:
                got = self.last_sync = facts_sync.reconcile(ws.store, ws.facts, ws.fact_sources, ws.extractor(),
                                                            state.hashes, state.version)
                done = bool(got.extracted or got.removed)
                self.facts_pending = 0
            except Exception as exc:  # a broken facts table must not stop the traces or BM25
                n = len(state.hashes)
                msg = (f"facts for {n} trace(s) were not updated to table version {state.version} "
                       f"({type(exc).__name__}: {exc}); the traces are stored and searchable; the facts are retried "
                       "on the next open")
                log.warning(msg)
                self.last_sync = facts_sync.FactsSync(warnings=(msg,))
                self.facts_pending = max(self.facts_pending, n, 1)
        ws.audit.reconcile(ws.store)
        return done

    def after_commit(self, committed: int, rows: list, removed: list[str], facts: bool = True,
                     followers: list | None = None) -> tuple[int, list[str]]:
        """After this process committed `committed` (`rows` written as stored, `removed` ids deleted, `followers`:
        the stored traces the same commit rewrote because their context changed): BM25 and facts follow it
        (`facts=False`: the facts of `rows` are left to the next catch-up; followers' own text is unchanged, so
        their facts are never touched). Returns (new facts, warnings)."""
        if committed != self.version + 1:  # another writer committed in between: catch up, never assume
            log.info("own commit is table version %s but BM25 reflects %s; catching up", committed, self.version)
            self.advance()
            return self.last_sync.new_facts, list(self.last_sync.warnings)
        hashes = self.hashes if self.hashes is not None else {}
        adds, removes = own_change(hashes, list(rows) + list(followers or ()), removed)
        if self.follows_bm25:
            self.index.update(adds, removes)
        else:  # LanceDB's FTS holds the rows already; it folds a large unindexed tail in
            self.index.sync(())
        self.version = committed
        if self.follows_bm25:
            self.ws._save(self.index, self.version)
        if not facts:
            self.facts_pending += len(rows)
            return 0, []
        moved = {str(value(r, "id")) for r in followers or ()}
        return self._own_facts(committed, rows, [i for i in removes if i not in moved])

    def _own_facts(self, committed: int, rows: list, gone: list[str]) -> tuple[int, list[str]]:
        ws = self.ws
        extractor = ws.extractor()
        if extractor is None or ws.keeps_disk:
            return 0, []
        live = {str(value(r, "id")): row_hash(r) for r in rows if value(r, "is_active")}
        try:
            got = facts_sync.sync(ws.store, ws.facts, ws.fact_sources, extractor, live, sorted(live), sorted(set(gone)),
                                  committed)
        except Exception as exc:  # a broken facts table must not undo, or hide, the trace writes
            self.facts_pending += len(live) + len(set(gone))
            msg = (f"facts for {len(live) + len(set(gone))} trace(s) were not updated ({type(exc).__name__}: {exc}); "
                   "the traces are stored and searchable; the facts are retried on the next open")
            log.warning(msg)
            return 0, [msg]
        return got.new_facts, list(got.warnings)
