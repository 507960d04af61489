"""A store URI opened as a whole: traces (LanceDB), the BM25 index beside them, and the facts (SPEC §12).

The one write path. Every ingest, delete or activation change goes to all three, under the store's
write lock (a thread lock, and a file lock across processes for a local store). Crash safety:
- LanceDB commits are atomic; what it committed is the truth.
- The BM25 sidecar records the table version it was built from; on open, or when another process
  moved the table on, BM25 is re-synced from the store (a missing, stale or unreadable sidecar is
  rebuilt with a warning; a read-only store keeps the index in memory).
- Facts: before the traces are written, the ids whose facts must follow them are written to a
  small journal file; it is removed once the facts are stored. A journal left by a crash (or by a
  facts table that failed) is replayed on the next open or write: facts of present, active traces
  are re-extracted (idempotent upsert), facts of absent or inactive ones deleted.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Iterable

from retrieval.access import Access, ReadOnlyError, demo_mode_from_env
from retrieval.workspace.audit import AuditLog, scopes_of
from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import analyzer_of
from retrieval.sparse.build import Opened, check_sparse, open_sparse, set_analyzer, set_statistics
from retrieval.store.memory import MemoryStore
from retrieval.types import MemoryTrace
from retrieval.workspace.journal import journal_files, replay_journals, sync_facts, write_journal
from retrieval.workspace.status import status_of
from retrieval.workspace.guard import authorise, authorise_store_wide, check_same_store

log = logging.getLogger(__name__)

BM25_FILE = "bm25.npz"


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


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
        self._bm25: BM25Index | None = None
        self._bm25_version = -1  # table version the in-memory BM25 reflects
        self._open_lock = threading.Lock()
        self._facts = None
        self.read_only = self.store.read_only  # or set when the sidecar cannot be written; BM25 lives in memory
        self.demo_mode = demo_mode_from_env()  # read-only demo (RETRIEVAL_MODE=demo): every write refuses
        # who wrote what, beside the traces, with the store's storage options (retrieval.workspace.audit)
        self.audit = AuditLog(self.uri, storage_options=self.store.storage_options)

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
        """The local directory of the store (None for a remote one)."""
        return Path(self.uri.removeprefix("file://")) if is_local_uri(self.uri) else None

    @property
    def bm25_path(self) -> Path | None:
        """The sidecar beside a local store; remote stores rebuild the index from the store on open."""
        name = BM25_FILE if self.store.table_name == "traces" else f"{self.store.table_name}.{BM25_FILE}"
        root = self.root
        return root / name if root is not None and self.sparse == "bm25" and self.store.columns.native else None

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            with self._open_lock:
                if self._bm25 is None:
                    with self.store.write_lock():  # no commit lands between reading the version and the rows
                        self._bm25 = self._open_bm25()
                        self._replay_journals()
        return self._bm25

    def _open_bm25(self) -> BM25Index:
        # the FTS reader, the sidecar if in step, else BM25 built with progress (and saved)
        opened = open_sparse(self.store, self.sparse, self.bm25_path, self.progress)
        self._install(opened)
        return opened.index

    def _install(self, opened: Opened) -> None:
        self._bm25, self._bm25_version = opened.index, opened.version
        if opened.built:
            self._save(opened.index, opened.version)

    @property
    def bm25_version(self) -> int:
        """The table version the in-memory BM25 reflects (-1 before it is opened)."""
        return self._bm25_version

    def set_analyzer(self, name: str, progress: Callable[[int, int], None] | None = None, *,
                     access: Access | None = None, actor: str = "local"):
        """Record the store's BM25 analyzer (plain | english-stem) and rebuild the sparse side with progress."""
        self._check_writable("set_analyzer")
        authorise_store_wide(access, "changing the analyser")
        opened = set_analyzer(self.store, self.sparse, name, progress)
        self._install(opened)
        self.audit.record(_actor(access, actor), "analyzer", self.store.count(), [], [], detail=name)
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
        out = reembed(self.store, embedder, progress=progress, batch_size=batch_size)
        self.audit.record(_actor(access, actor), "reembed", int(out["rows"]), [], [],
                          detail=f"{out['from']} -> {out['to']}")
        return out

    def set_bm25_statistics(self, name: str, *, access: Access | None = None, actor: str = "local") -> None:
        """Record what a scoped query's BM25 is scored with: `scope` (its scope's N, df, avgdl) or `store`
        (every document's, the seed's). No rebuild. A visitor limited by a policy gets `scope` regardless."""
        self._check_writable("set_bm25_statistics")
        authorise_store_wide(access, "changing the BM25 statistics")
        set_statistics(self.store, self.bm25, name)
        self.audit.record(_actor(access, actor), "statistics", self.store.count(), [], [], detail=name)

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
        """`refresh` only when needed: one table-version read and one directory listing, no lock.

        What the app calls on every rerun, so a trace the CLI wrote is searchable without a restart.
        """
        pending = bool(self.pending_journals()) and not self.keeps_disk  # a journal waits for a writer
        if self._bm25 is not None and self.store.version() == self._bm25_version and not pending:
            return False
        return self.refresh()

    def _catch_up(self) -> bool:
        """Call with the write lock held."""
        bm25 = self.bm25
        changed = self._replay_journals()
        version = self.store.version()
        if version != self._bm25_version:
            log.warning("the store moved from table version %s to %s outside this Workspace; re-syncing BM25",
                        self._bm25_version, version)
            bm25.sync(self.store.all_traces() if self.sparse == "bm25" else (), complete=True)
            self._bm25_version = version
            self._save(bm25, version)
            changed = True
        return changed

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
        if self._bm25 is not None:
            with self.store.write_lock():
                self._save(self._bm25, self._bm25_version)

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

    def pending_journals(self) -> list[Path]:
        """Facts journals a writer left (a crash, or a facts table that failed): replayed on the next write."""
        return journal_files(self.root)

    def _journal(self, ids: list[str]) -> Path | None:
        return None if self.store.read_only else write_journal(self.root, ids)

    def _sync_facts(self, ids: list[str], journal: Path | None) -> tuple[int, list[str]]:
        return sync_facts(self.store, self.facts, self.extractor(), ids, journal)

    def _replay_journals(self) -> bool:
        if self.keeps_disk:
            if self.pending_journals():
                log.warning("a facts journal is pending at %s; read-only, so it is left for the next writer",
                            self.store.display_uri)
            return False
        return replay_journals(self.root, self.store, lambda ids, path: self._sync_facts(ids, path))

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
                t.validate()  # before the journal: a rejected batch leaves no trace anywhere
        latest = {t.id: t for t in traces if isinstance(t, MemoryTrace)}
        want_facts = extract_facts and self.extractor() is not None
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, latest.values())
            journal = self._journal(list(latest)) if want_facts else None
            try:
                written = self.store.add(traces, progress=progress)
            except BaseException:
                if journal is not None and self.store.version() == self._bm25_version:
                    journal.unlink(missing_ok=True)  # nothing was committed
                raise
            dups = tuple(self.store.last_add_report.duplicates)
            self.bm25.sync(self.store.last_add_report.traces)  # as stored: contexts, rewritten followers
            self._mark_in_step()
            n_facts, warnings = self._sync_facts(list(latest), journal) if want_facts else (0, [])
            self.audit.record(_actor(access, actor), "ingest", written, scopes_of(latest.values()), list(latest))
        return IngestReport(written=written, duplicates=dups, facts=n_facts, fact_warnings=tuple(warnings))

    def delete(self, ids: Iterable[str], *, access: Access | None = None, actor: str = "local") -> int:
        self._check_writable("delete")
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, ids=ids)
            journal = self._journal(ids)
            gone = self.store.get(ids)
            n = self.store.delete(ids)
            self.bm25.remove_documents(ids)
            self.bm25.sync(self.store.writes.last_recontexted)
            self._mark_in_step()
            self._sync_facts(ids, journal)
            self.audit.record(_actor(access, actor), "delete", n, scopes_of(gone), [t.id for t in gone])
        return n

    def set_active(self, ids: Iterable[str], active: bool, *, access: Access | None = None,
                   actor: str = "local") -> int:
        """Activate or deactivate traces: inactive ones leave BM25 and the facts; active ones return."""
        self._check_writable("activate" if active else "deactivate")
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        with self.store.write_lock():
            self._catch_up()
            self._guard(access, ids=ids)
            journal = self._journal(ids)
            self.store.set_active(ids, active)
            traces = self.store.get(ids)
            self.bm25.sync(traces + self.store.writes.last_recontexted)
            self._mark_in_step()
            self._sync_facts(ids, journal)
            self.audit.record(_actor(access, actor), "activate" if active else "deactivate", len(traces),
                              scopes_of(traces),
                              [t.id for t in traces])
        return len(traces)

    def _check_writable(self, action: str) -> None:
        if self.demo_mode:
            raise ReadOnlyError(f"{action} refused: the app runs read-only (demo mode, RETRIEVAL_MODE=demo)")

    def _mark_in_step(self) -> None:
        """After our own commit (write lock held, so no other writer's commit is in between)."""
        self._bm25_version = self.store.version()
        self._save(self.bm25, self._bm25_version)

    def retriever(self, as_of=None, **kwargs):
        """A retriever over this store (fusion defaults: its calibration when no fusion knob is given)."""
        from retrieval.hybrid import HybridRetriever
        from retrieval.store.calibration import with_calibration

        kwargs.setdefault("fact_store", self.facts)
        if as_of is not None:  # as it was then, writing nothing (SPEC §16): the live BM25 is never opened
            return HybridRetriever(self.store, writer=self, **with_calibration(self.store, kwargs)).at(as_of)
        return HybridRetriever(self.store, bm25=self.bm25, writer=self, **with_calibration(self.store, kwargs))

    def status(self) -> dict:
        """What the Home page and `python -m retrieval status` show (`retrieval.workspace.status`)."""
        return status_of(self)
