"""A store URI opened as a whole: traces (LanceDB), the BM25 index beside them, and the facts (SPEC §12).

The one write path of this app, though not the only writer of the table (SPEC §18): every ingest, delete or
activation change goes to all three under the store's write lock (a thread lock, and a file lock across processes
for a local store — an optimisation for one machine; correctness never depends on it). Crash safety:
- LanceDB commits are atomic; what it committed is the truth, whoever committed it.
- BM25, facts and audit are derived from the table's versions (workspace/follow.py): on open, on a refresh, and
  after each own commit that was not the very next version, they catch up by the rows that differ between the
  version they reflect and the newest. The BM25 sidecar records the version it reflects (a read-only store keeps
  the index in memory).
- Facts are reconciled per trace id and content hash (workspace/facts_sync.py), so a crash after a commit leaves
  facts that the next open (by any process) brings in step; the audit records every version that changed rows.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable

from typing import TYPE_CHECKING

from retrieval.access import Access, ReadOnlyError, demo_mode_from_env
from retrieval.workspace.audit import AuditLog, parts_of, scopes_of
from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import analyzer_of
from retrieval.sparse.build import Opened, check_sparse, set_analyzer, set_statistics
from retrieval.store.memory import MemoryStore
from retrieval.store.remote import check_local_location, is_local_uri
from retrieval.types import MemoryTrace
from retrieval.workspace.facts_sync import FactSources
from retrieval.workspace.follow import Follower
from retrieval.access import for_visitor
from retrieval.workspace.status import status_of
from retrieval.workspace.guard import authorise, authorise_store_wide, check_same_store

if TYPE_CHECKING:
    from retrieval.facts import FactStore

log = logging.getLogger(__name__)

BM25_FILE = "bm25.npz"


@dataclass(frozen=True)
class IngestReport:
    written: int = 0
    duplicates: tuple[str, ...] = ()
    facts: int = 0
    fact_warnings: tuple[str, ...] = ()


def _actor(access: Access | None, actor: str) -> str:
    """Who the audit names: the signed-in user when there is one."""
    return access.user if access is not None else actor


class Workspace:
    def __init__(self, uri: str = "data/lancedb", embedder=None, clock=None, fact_extractor="rule", *,
                 table: str = "traces", columns=None, sparse: str = "bm25", progress=None, **store_kw):
        self.uri = str(uri)
        self.store = MemoryStore(self.uri, embedder=embedder, clock=clock, table=table, columns=columns, **store_kw)
        self.sparse, self.progress = check_sparse(sparse), progress  # bm25 | fts; progress of a BM25 build
        self._fact_extractor = fact_extractor
        self._follow = Follower(self)  # BM25 (and the table version it reflects), facts and audit in step
        self._opened = False
        self._open_lock = threading.Lock()
        self._facts: FactStore | None = None
        self._fact_sources: FactSources | None = None
        self.read_only = self.store.read_only  # or set when the sidecar cannot be written; BM25 lives in memory
        self.demo_mode = demo_mode_from_env()  # read-only demo (RETRIEVAL_MODE=demo): every write refuses
        # who wrote what, beside the traces, with the store's storage options (retrieval.workspace.audit)
        self.audit = AuditLog(self.uri, storage_options=self.store.storage_options)
        from retrieval.history.view import AsOfCache

        # the versions as-of reads keep open (traces + BM25, facts), bounded; they live as long as this workspace
        self.as_of_cache = AsOfCache()

    @property
    def keeps_disk(self) -> bool:
        """True when this Workspace must change nothing on disk, not even derived files: a read-only
        demo (BM25 stays in memory; a facts journal a crashed writer left waits for the next writer),
        a store inspected in place, or a sidecar that cannot be written."""
        return self.read_only or self.demo_mode

    def __repr__(self) -> str:
        return f"Workspace(uri={self.store.display_uri!r})"

    @property
    def root(self) -> Path | None:
        """The local directory of the store (None for a remote one); a file where it should be is refused."""
        check_local_location(self.uri)
        return Path(self.uri.removeprefix("file://")) if is_local_uri(self.uri) else None

    @property
    def bm25_path(self) -> Path | None:
        """The sidecar beside a local store; remote stores rebuild the index from the store on open."""
        name = BM25_FILE if self.store.table_name == "traces" else f"{self.store.table_name}.{BM25_FILE}"
        root = self.root
        return root / name if root is not None and self.sparse == "bm25" and self.store.columns.native else None

    @property
    def bm25(self) -> BM25Index:
        if not self._opened:
            with self._open_lock:
                if not self._opened:
                    with self.store.write_lock():  # one process's writers wait; other machines' need not
                        self._follow.open()
                        self._opened = True
        return self._follow.index

    @property
    def _bm25(self) -> BM25Index | None:
        return self._follow.index if self._opened else None

    def _install(self, opened: Opened) -> None:
        f = self._follow
        f.index, f.version, f.hashes, self._opened = opened.index, opened.version, None, True
        if opened.built:
            self._save(opened.index, opened.version)

    @property
    def bm25_version(self) -> int:
        """The table version the in-memory BM25 reflects (-1 before it is opened)."""
        return self._follow.version if self._opened else -1

    @property
    def facts_pending(self) -> int:
        """Traces whose facts are not in step, counted from the store as `doctor` does (Follower.facts_behind)."""
        return self._follow.facts_behind()

    def set_analyzer(self, name: str, progress: Callable[[int, int], None] | None = None, *,
                     access: Access | None = None, actor: str = "local"):
        """Record the store's BM25 analyzer (plain | english-stem) and rebuild the sparse side with progress."""
        self._check_writable("set_analyzer")
        authorise_store_wide(access, "changing the analyser")
        with self.store.write_lock():
            self._catch_up()
            opened = set_analyzer(self.store, self.sparse, name, progress)
            self._install(opened)
            self._committed(opened.committed, _actor(access, actor), "analyzer", self.store.count(), detail=name)
        return opened.index

    def set_context(self, setting, progress: Callable[[int, int], None] | None = None, *, undo: bool = False,
                    access: Access | None = None, actor: str = "local") -> dict:
        """Record the store's context setting (`undo`: the one it replaced), rewrite the rows whose context
        changes and rebuild BM25 from them, with progress (retrieval.workspace.context)."""
        from retrieval.workspace.context import set_context

        return set_context(self, setting, progress, undo=undo, access=access, actor=actor)

    def reembed(self, embedder, progress: Callable[[int, int], None] | None = None, *, batch_size: int = 256,
                access: Access | None = None, actor: str = "local") -> dict:
        """Re-embed every trace with `embedder` (staged, one atomic swap; retrieval.store.reembed)."""
        from retrieval.store.reembed import reembed

        self._check_writable("reembed")
        authorise_store_wide(access, "re-embedding")
        with self.store.write_lock():
            self._catch_up()
            out = reembed(self.store, embedder, progress=progress, batch_size=batch_size)
            self._committed(out["version"], _actor(access, actor), "reembed", int(out["rows"]),
                            detail=f"{out['from']} -> {out['to']}")
        return out

    def set_bm25_statistics(self, name: str, *, access: Access | None = None, actor: str = "local") -> None:
        """Record what a scoped query's BM25 is scored with: `scope` (its scope's N, df, avgdl) or `store`
        (every document's, the seed's). No rebuild. A visitor limited by a policy gets `scope` regardless."""
        self._check_writable("set_bm25_statistics")
        authorise_store_wide(access, "changing the BM25 statistics")
        with self.store.write_lock():
            self._catch_up()
            committed = set_statistics(self.store, self.bm25, name)
            self._committed(committed, _actor(access, actor), "statistics", self.store.count(), detail=name,
                            change={"rows": [], "removed": []})  # metadata only: BM25 moves on, no row re-read

    def _committed(self, version: int | None, actor: str, action: str, traces: int, *, change: dict | None = None,
                   **entry) -> tuple[int, list[str]]:
        """The one end of every write, with the write lock held (SPEC §18): the audit entry naming `version`, the
        table version this write committed (None: it committed none; the entry then names no version), then BM25,
        facts and audit follow the table to its newest version. `change` (`Follower.after_commit`'s rows written,
        ids removed, followers: an ingest, delete or (de)activation; empty for a metadata-only commit) is applied as
        a small change when `version` is the next one after what BM25 reflects; anything else — a store-wide
        write, the other commits a write made (an index, a compaction), another writer's — is a catch-up by the
        rows that differ, which saves the BM25 sidecar at the table's version and records each version left
        without an entry (as maintenance when it changed no row). Returns (new facts, fact warnings) of the
        change. The entry comes first: a catch-up would otherwise record this write's own commit as maintenance
        or an unknown writer's."""
        self.audit.record(actor, action, traces, version=version, **entry)
        got: tuple[int, list[str]] = (0, [])
        if change is not None and version is not None:
            got = self._follow.after_commit(version, **change)
        if self.store.table() is not None and (change is None or self.store.version() != self._follow.version):
            self._follow.advance()
        return got

    def _guard(self, access: Access | None, new: Iterable[MemoryTrace] = (), ids: Iterable[str] = ()) -> None:
        """With the write lock held, before anything is written (retrieval.workspace.guard)."""
        authorise(access, self.store, new, ids)
        if self.store.table() is not None:
            analyzer = analyzer_of(self.bm25.tokenizer) if self.sparse == "bm25" else None
            check_same_store(self.store, analyzer)

    def refresh(self) -> bool:
        """Catch up with commits made by another process (the CLI while the app runs) and with a
        journal a crashed writer left. Returns True when something was re-synced."""
        with self.store.write_lock():
            return self._catch_up()

    def refresh_if_stale(self) -> bool:
        """`refresh` only when needed: one table-version read, no lock.

        What the app calls on every rerun, so a trace another writer committed is searchable without a restart.
        """
        pending = bool(self._follow.facts_pending) and not self.keeps_disk  # facts wait for a writer
        if self._opened and self.store.version() == self._follow.version and not pending:
            return False
        return self.refresh()

    def _catch_up(self) -> bool:
        """Call with the write lock held: BM25, facts and audit caught up with the newest table version."""
        if not self._opened:
            self.bm25  # noqa: B018 - opening catches up
            return True
        waiting = bool(self._follow.facts_pending) and not self.keeps_disk  # facts wait for a writer
        if self.store.version() == self._follow.version and not waiting:
            return False
        log.info("the store moved from table version %s to %s; catching up", self._follow.version,
                 self.store.version())
        return self._follow.advance()

    def _save(self, idx: BM25Index, version: int) -> None:
        path = self.bm25_path
        if path is None or self.keeps_disk:
            return
        try:
            idx.save(path, source={"table": self.store.table_name, "table_version": version})
        except OSError as exc:
            self.read_only = True
            log.warning("cannot write the BM25 sidecar %s (%s); keeping the index in memory", path, exc)

    def save(self) -> None:
        if self._opened:
            with self.store.write_lock():
                self._save(self._follow.index, self._follow.version)

    # ------------------------------------------------------------------ facts
    @property
    def facts(self):
        if self._facts is None:
            from retrieval.facts import FactStore

            self._facts = FactStore(self.uri, storage_options=self.store.storage_options)
        return self._facts

    def extractor(self):
        if self._fact_extractor in (None, "none"):
            return None
        if self._fact_extractor == "rule":
            from retrieval.facts import RuleFactExtractor

            return RuleFactExtractor()
        return self._fact_extractor

    @property
    def fact_sources(self) -> FactSources:
        """Which version (content hash) of each trace its facts were extracted from (workspace/facts_sync.py)."""
        if self._fact_sources is None:
            self._fact_sources = FactSources(self.uri, self.store.storage_options)
        return self._fact_sources

    # ------------------------------------------------------------------ writing
    def ingest(self, traces: Iterable[MemoryTrace], progress: Callable[[int, int], None] | None = None,
               extract_facts: bool = True, *, access: Access | None = None, actor: str = "local") -> IngestReport:
        """Store, index and extract facts from traces. Validation failure writes nothing anywhere.

        `access` (None = local, unrestricted) must be allowed to write the scope of every new trace
        and of every stored trace an id replaces, else `AccessDenied` and nothing is written. Once the
        traces are committed the call does not raise for a facts failure: it is reported in
        `fact_warnings` and retried on the next open.
        """
        self._check_writable("ingest")
        traces = list(traces)
        for t in traces:
            if isinstance(t, MemoryTrace):
                t.validate()  # before anything: a rejected batch leaves no trace anywhere
        latest = {t.id: t for t in traces if isinstance(t, MemoryTrace)}
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, latest.values())
            written = self.store.add(traces, progress=progress)
            dups = tuple(self.store.last_add_report.duplicates)
            committed = self.store.writes.last_commit
            stored = self.store.last_add_report.traces  # as stored: contexts, and the followers rewritten with them
            change = {"rows": [t for t in stored if t.id in latest], "removed": [], "facts": extract_facts,
                      "followers": [t for t in stored if t.id not in latest]}
            n_facts, warnings = self._committed(committed, _actor(access, actor), "ingest", written,
                                                scopes=scopes_of(latest.values()), ids=list(latest),
                                                parts=parts_of(latest.values()), change=change)
        return IngestReport(written=written, duplicates=dups, facts=n_facts, fact_warnings=tuple(warnings))

    def delete(self, ids: Iterable[str], *, access: Access | None = None, actor: str = "local") -> int:
        self._check_writable("delete")
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, ids=ids)
            gone = self.store.get(ids)
            before = self.store.writes.last_commit
            n = self.store.delete(ids)
            committed = self.store.writes.last_commit
            if committed == before:  # nothing matched: nothing was committed
                return 0
            self._committed(committed, _actor(access, actor), "delete", n, scopes=scopes_of(gone),
                            ids=[t.id for t in gone], parts=parts_of(gone),
                            change={"rows": [], "removed": ids, "followers": self.store.writes.last_recontexted})
        return n

    def set_active(self, ids: Iterable[str], active: bool, *, access: Access | None = None,
                   actor: str = "local") -> int:
        """Activate or deactivate traces: inactive ones leave BM25 and the facts; active ones return."""
        self._check_writable("activate" if active else "deactivate")
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, ids=ids)
            before = self.store.writes.last_commit
            self.store.set_active(ids, active)
            committed = self.store.writes.last_commit
            traces = self.store.get(ids)
            if committed != before:
                self._committed(committed, _actor(access, actor), "activate" if active else "deactivate",
                                len(traces), scopes=scopes_of(traces), ids=[t.id for t in traces],
                                parts=parts_of(traces),
                                change={"rows": traces, "removed": [], "followers": self.store.writes.last_recontexted})
        return len(traces)

    def _check_writable(self, action: str) -> None:
        if self.demo_mode:
            raise ReadOnlyError(f"{action} refused: the app runs read-only (demo mode, RETRIEVAL_MODE=demo)")

    def retriever(self, as_of=None, **kwargs):
        """A retriever over this store (fusion defaults: its calibration when no fusion knob is given)."""
        from retrieval.hybrid import HybridRetriever, names_fusion
        from retrieval.store.calibration import CALIBRATED_PRESET, calibrated_fusion

        kwargs.setdefault("fact_store", self.facts)
        if not names_fusion(kwargs):  # explicit settings win as a whole, never mixed with calibrated ones
            kwargs["fusion"] = calibrated_fusion(self.store, kwargs.get("preset") or CALIBRATED_PRESET)
        if as_of is not None:  # as it was then, writing nothing (SPEC §16): the live BM25 is never opened
            return HybridRetriever(self.store, writer=self, **kwargs).at(as_of)
        return HybridRetriever(self.store, bm25=self.bm25, writer=self, **kwargs)

    def status(self, access: Access | None = None) -> dict:
        """What the Home page and `python -m retrieval status` show (`retrieval.workspace.status`); for a visitor
        limited to some scopes (`access`), their scopes' counts only."""
        return for_visitor(status_of(self), access, self.store, self.facts)
