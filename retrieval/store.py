"""Dense side: memory traces in LanceDB with cognitive scoring (SPEC §2).

The only module that talks to LanceDB for traces. LanceDB's cosine `_distance` (1 − cos) is
converted to a similarity in exactly one place (`_similarity`).
"""
from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .scoring import cognitive_score, resolve_weights
from .store_ann import ANN_MIN_ROWS, ANN_PROBE_FRACTION, AnnIndex
from .store_rows import SCALAR_COLUMNS, from_row, ids_filter, schema, scope_filter, sql_quote, to_row  # noqa: F401
from .types import MemoryTrace, Mood, Scope, ScoredMemoryTrace, utcnow
from .write_lock import lock_for

log = logging.getLogger(__name__)

# A scoped query whose scopes hold at most this many rows is searched exactly even when an index
# exists: a selective prefilter starves an IVF index of candidates (recall 0.54 at 1% selectivity),
# while an exact scan of the scope's rows (scalar-indexed) stays fast.
EXACT_SCOPE_ROWS = 50_000
ADD_BATCH = 256

Progress = Callable[[int, int], None]

@dataclass
class AddReport:
    written: int = 0
    duplicates: list[str] = field(default_factory=list)  # ids repeated in one batch (last kept)


class MemoryStore(AnnIndex):
    """Traces in a LanceDB table; vector search + cognitive scoring."""

    def __init__(self, uri: str = "data/lancedb", embedder=None, table: str = "traces",
                 clock: Callable[[], datetime] | None = None):
        self.uri = str(uri)
        self.table_name = table
        self._embedder = embedder
        self.clock = clock or utcnow
        self.last_add_report = AddReport()
        self._tbl = None
        self._db = None
        self._plan_cache: dict[tuple, int] = {}

    def __repr__(self) -> str:
        return f"MemoryStore(uri={self.uri!r}, table={self.table_name!r}, embedder={self.embedder!r})"

    # ------------------------------------------------------------------ plumbing
    @property
    def embedder(self):
        if self._embedder is None:
            from .models.embedders import SentenceTransformerEmbedder

            self._embedder = SentenceTransformerEmbedder()
        return self._embedder

    @property
    def db(self):
        if self._db is None:
            import lancedb

            self._db = lancedb.connect(self.uri)
        return self._db

    def _table(self, create: bool = False):
        if self._tbl is None:
            if not create and self.is_local and not self.local_path.exists():
                return None  # reading a mistyped path must not create it
            if self.table_name in self.db.table_names():
                self._tbl = self.db.open_table(self.table_name)
                dim = self._tbl.schema.field("vector").type.list_size
                edim = getattr(self._embedder, "dim", None) if self._embedder is not None else None
                if edim is not None and edim != dim:
                    raise ValueError(
                        f"store {self.uri!r} holds {dim}-d vectors but the embedder makes {edim}-d ones; "
                        "use the embedder the store was built with, or a new store URI")
            elif create:
                self._tbl = self._create_table()
        return self._tbl

    def _create_table(self):
        """Create the table, or open it when another thread or process created it first."""
        try:
            tbl = self.db.create_table(self.table_name, schema=schema(self.embedder.dim), exist_ok=True)
        except Exception as exc:  # a create racing another process's create: open theirs
            if "already exists" not in str(exc):
                raise
            tbl = self.db.open_table(self.table_name)
        if not any("id" in list(getattr(i, "columns", [])) for i in tbl.list_indices()):
            try:
                tbl.create_scalar_index("id", index_type="BTREE")
            except Exception as exc:  # an index is an optimisation; a concurrent creator may have won
                log.warning("could not index id: %s", exc)
        return tbl

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri or self.uri.startswith("file://")

    @property
    def local_path(self) -> Path:
        return Path(self.uri.removeprefix("file://"))

    @contextmanager
    def write_lock(self):
        """Serialise writers: a lock per store inside the process and, for a local store, an
        advisory file lock across processes (a read-only store has none and cannot be written).

        Re-entrant per thread, so a Workspace can hold it around a whole ingest."""
        key = (str(self.local_path.resolve()) if self.is_local else self.uri, self.table_name)
        with lock_for(key, self.local_path / f".{self.table_name}.write.lock" if self.is_local else None):
            yield

    def version(self) -> int:
        """The latest committed LanceDB table version (0 without a table); sees other writers' commits."""
        tbl = self._table()
        if tbl is None:
            return 0
        tbl.checkout_latest()
        return int(tbl.version)

    @property
    def dim(self) -> int:
        tbl = self._table()
        return tbl.schema.field("vector").type.list_size if tbl is not None else self.embedder.dim

    # ------------------------------------------------------------------ rows
    # ------------------------------------------------------------------ writing
    def add(self, traces: Iterable[MemoryTrace], progress: Progress | None = None,
            batch_size: int = ADD_BATCH) -> int:
        """Upsert traces by id. The whole batch is validated before anything is written.

        Ids repeated inside the batch: the last one wins; they are listed in `last_add_report`.
        `progress(done, total)` is called after each embedded batch.
        """
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
        batch = list(unique.values())
        self.last_add_report = AddReport(written=0, duplicates=sorted(set(dups)))
        if not batch:
            return 0
        vecs = []
        total = len(batch)
        for start in range(0, total, batch_size):
            chunk = batch[start:start + batch_size]
            v = np.asarray(self.embedder.embed([t.content for t in chunk]), dtype=np.float32)
            if v.shape != (len(chunk), self.embedder.dim):
                raise ValueError(f"embedder returned shape {v.shape}, expected ({len(chunk)}, {self.embedder.dim})")
            vecs.append(v)
            if progress:
                progress(min(start + batch_size, total), total)
        vecs = np.concatenate(vecs)
        rows = [to_row(t, v) for t, v in zip(batch, vecs)]
        with self.write_lock():
            tbl = self._table(create=True)
            # Always an upsert, also into an empty table: two writers of one id leave one row.
            tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows)
            self.last_add_report.written = len(rows)
            self._maintain_index()
        return len(rows)

    def _maintain_index(self) -> None:
        """Build the vector index once the table passes ANN_MIN_ROWS; fold in a large unindexed tail."""
        rows = self._table().count_rows()
        if not self._has_ann():
            if rows >= ANN_MIN_ROWS:
                self.ensure_ann_index(min_rows=ANN_MIN_ROWS)
            return
        unindexed = self.index_state()["unindexed_rows"]
        if unindexed > max(10_000, rows // 10):  # a flat scan of the tail would start to cost
            self._table().optimize()

    def delete(self, ids: Iterable[str]) -> int:
        ids = [i for i in ids if isinstance(i, str)]
        tbl = self._table()
        if tbl is None or not ids:
            return 0
        with self.write_lock():
            before = tbl.count_rows()
            tbl.delete(ids_filter(ids))
            return before - tbl.count_rows()

    def set_active(self, ids: Iterable[str], active: bool) -> None:
        tbl = self._table()
        ids = list(ids)
        if tbl is not None and ids:
            with self.write_lock():
                tbl.update(where=ids_filter(ids), values={"is_active": bool(active)})

    # ------------------------------------------------------------------ reading
    def count(self, scope: Scope | None = None, active_only: bool = False) -> int:
        tbl = self._table()
        if tbl is None:
            return 0
        where = [f"({scope_filter([scope])})"] if scope is not None else []
        if active_only:
            where.append("is_active = true")
        return tbl.count_rows(" AND ".join(where)) if where else tbl.count_rows()

    def scopes(self) -> list[Scope]:
        tbl = self._table()
        if tbl is None or tbl.count_rows() == 0:
            return []
        data = tbl.search().select(["scope", "scope_id"]).limit(None).to_arrow()
        pairs = sorted(set(zip(data["scope"].to_pylist(), data["scope_id"].to_pylist())))
        return [Scope(a, b) for a, b in pairs]

    def scope_counts(self) -> dict[Scope, int]:
        tbl = self._table()
        if tbl is None or tbl.count_rows() == 0:
            return {}
        data = tbl.search().select(["scope", "scope_id"]).limit(None).to_arrow()
        out: dict[Scope, int] = {}
        for pair in zip(data["scope"].to_pylist(), data["scope_id"].to_pylist()):
            key = Scope(*pair)
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (kv[0].scope, kv[0].scope_id)))

    def _fetch_rows(self, where: str | None, with_vectors: bool, limit: int | None = None) -> list[dict]:
        tbl = self._table()
        if tbl is None:
            return []
        cols = list(SCALAR_COLUMNS) + (["vector"] if with_vectors else [])
        q = tbl.search().select(cols)
        if where:
            q = q.where(where)
        return q.limit(limit).to_arrow().to_pylist()

    def get(self, ids: Sequence[str]) -> list[MemoryTrace]:
        """Traces for `ids` in the given order; unknown ids are skipped."""
        ids = [i for i in dict.fromkeys(ids) if isinstance(i, str)]
        if not ids:
            return []
        found = {r["id"]: from_row(r) for r in self._fetch_rows(ids_filter(ids), False)}
        return [found[i] for i in ids if i in found]

    def get_with_vectors(self, ids: Sequence[str], scopes: Sequence[Scope] | None = None,
                         active_only: bool = True) -> dict[str, tuple[MemoryTrace, np.ndarray]]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        where = [ids_filter(ids)]
        sf = scope_filter(scopes)
        if sf:
            where.append(f"({sf})")
        if active_only:
            where.append("is_active = true")
        rows = self._fetch_rows(" AND ".join(where), True)
        return {r["id"]: (from_row(r), np.asarray(r["vector"], dtype=np.float32)) for r in rows}

    def browse(self, scope: Scope | None = None, contains: str | None = None, limit: int = 200,
               offset: int = 0) -> list[MemoryTrace]:
        """Traces for the Corpus page, sorted by id; `contains` is a case-insensitive substring."""
        where = []
        if scope is not None:
            where.append(scope_filter([scope]))
        rows = self._fetch_rows(" AND ".join(where) or None, False)
        if contains:
            needle = contains.lower()
            rows = [r for r in rows if needle in r["content"].lower() or needle in r["id"].lower()]
        rows.sort(key=lambda r: r["id"])
        return [from_row(r) for r in rows[offset:offset + limit]]

    def all_traces(self) -> list[MemoryTrace]:
        return [from_row(r) for r in self._fetch_rows(None, False)]

    # ------------------------------------------------------------------ search
    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    def query(self, text: str, mood: Mood | None = None, top_k: int = 20,
              scopes: Sequence[Scope] | None = None, neutral_mood: bool = False,
              scoring_weights: Mapping[str, float] | None = None) -> list[ScoredMemoryTrace]:
        """Nearest `2*top_k` by cosine within `scopes` (active only), cognitively scored, top `top_k`."""
        if not text or not text.strip() or top_k <= 0:
            return []
        return self.query_vector(self.embed_query(text), mood, top_k, scopes, neutral_mood, scoring_weights)

    def query_vector(self, vector: np.ndarray, mood: Mood | None = None, top_k: int = 20,
                     scopes: Sequence[Scope] | None = None, neutral_mood: bool = False,
                     scoring_weights: Mapping[str, float] | None = None) -> list[ScoredMemoryTrace]:
        weights = resolve_weights(scoring_weights)
        tbl = self._table()
        if tbl is None or top_k <= 0:
            return []
        where = ["is_active = true"]
        sf = scope_filter(scopes)
        if sf:
            where.append(f"({sf})")
        q = (tbl.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
             .distance_type("cosine").where(" AND ".join(where), prefilter=True)
             .select(list(SCALAR_COLUMNS) + ["_distance"]).limit(2 * top_k))
        partitions = self._ann_partitions()
        if partitions:
            if scopes is not None and self._scoped_rows(scopes) <= EXACT_SCOPE_ROWS:
                q = q.bypass_vector_index()
            else:
                q = q.nprobes(max(1, math.ceil(partitions * ANN_PROBE_FRACTION)))
        rows = q.to_arrow().to_pylist()
        now = self.clock()
        scored = [self._score(from_row(r), _similarity(r["_distance"]), now, mood, neutral_mood, weights)
                  for r in rows]
        scored.sort(key=lambda s: (-s.retrieval_score, s.id))
        return scored[:top_k]

    def score_hits(self, hits: Mapping[str, tuple[MemoryTrace, np.ndarray]], vector: np.ndarray,
                   mood: Mood | None = None, neutral_mood: bool = False,
                   scoring_weights: Mapping[str, float] | None = None) -> dict[str, ScoredMemoryTrace]:
        """Cognitively score traces fetched by id (sparse-only hydration) with their real cosine."""
        weights = resolve_weights(scoring_weights)
        now = self.clock()
        q = np.asarray(vector, dtype=np.float32)
        return {i: self._score(t, float(np.dot(v, q)), now, mood, neutral_mood, weights)
                for i, (t, v) in hits.items()}

    @staticmethod
    def _score(trace, cosine, now, mood, neutral_mood, weights) -> ScoredMemoryTrace:
        score, parts = cognitive_score(trace, cosine, now, mood, neutral_mood, weights)
        return ScoredMemoryTrace(trace, score, parts)

    def _scoped_rows(self, scopes: Sequence[Scope]) -> int:
        tbl = self._table()
        key = ("scoped", tbl.version, tuple(sorted(str(s) for s in scopes)))
        if key not in self._plan_cache:
            self._plan_cache[key] = tbl.count_rows(scope_filter(scopes))
        return self._plan_cache[key]

def _similarity(distance: float) -> float:
    """LanceDB cosine distance is 1 − cos; the one place it becomes a similarity."""
    return 1.0 - float(distance)
