"""`QueryLog`: imported agent queries in a LanceDB table (`query_log`) beside the traces.

An import streams the file: lines are parsed (retrieval.replay.logs) and written in Arrow batches; a line
already imported (same content, same key) is not added twice; bad lines are reported by number and the rest
kept. Reads filter and sample: by scope, feedback, low top score, or at random (a seed makes it repeatable).
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval.replay.logs import BadLine, LoggedQuery, implicit_grades, parse_lines, polarity
from retrieval.store.remote import open_db, storage_options_from_env
from retrieval.types import Scope

TABLE = "query_log"
BATCH = 20_000
Progress = Callable[[int, int], object]
BeforeWrite = Callable[[list[LoggedQuery]], Any]


@dataclass(frozen=True)
class ImportReport:
    added: int = 0
    already: int = 0  # lines imported before (same key)
    skipped: int = 0  # blank lines and spans of other kinds
    errors: tuple[BadLine, ...] = ()
    seconds: float = 0.0
    keys: tuple[str, ...] = field(default=(), repr=False)
    with_feedback: tuple[LoggedQuery, ...] = field(default=(), repr=False)  # the added ones that carry feedback

    def summary(self) -> str:
        return (f"{self.added} logged quer{'y' if self.added == 1 else 'ies'} imported, {self.already} already there, "
                f"{self.skipped} line(s) skipped, {len(self.errors)} bad line(s)")


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("key", pa.string()), ("timestamp", pa.timestamp("us", tz="UTC")), ("query", pa.string()),
                      ("scope", pa.string()), ("scope_id", pa.string()), ("result_ids", pa.list_(pa.string())),
                      ("result_scores", pa.list_(pa.float64())), ("top_score", pa.float64()),
                      ("feedback", pa.string()), ("polarity", pa.int8()), ("source", pa.string())])


def _row(q: LoggedQuery) -> dict:
    top = q.top_score
    return {"key": q.key, "timestamp": q.timestamp, "query": q.query,
            "scope": q.scope.scope if q.scope else None, "scope_id": q.scope.scope_id if q.scope else None,
            "result_ids": list(q.result_ids), "result_scores": list(q.result_scores),
            "top_score": top if top is not None and not math.isnan(top) else None,
            "feedback": json.dumps(q.feedback) if q.feedback is not None else None,
            "polarity": polarity(q.feedback), "source": q.source}


def from_row(r: dict) -> LoggedQuery:
    ts = r["timestamp"]
    ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
    return LoggedQuery(r["key"], ts, r["query"], Scope(r["scope"], r["scope_id"]) if r["scope"] else None,
                       tuple(r["result_ids"] or ()), tuple(r["result_scores"] or ()),
                       json.loads(r["feedback"]) if r["feedback"] else None, r["source"])


class QueryLog:
    """Logged queries beside a store (`uri`), in table `query_log`."""

    def __init__(self, uri: str, *, storage_options: dict | None = None):
        self.uri = str(uri)
        self.storage_options = storage_options if storage_options is not None else storage_options_from_env(self.uri)
        self._db: Any = None

    def _table(self, create: bool = False) -> Any:
        if self._db is None:
            self._db = open_db(self.uri, self.storage_options)
        if TABLE in self._db.table_names():
            return self._db.open_table(TABLE)
        return self._db.create_table(TABLE, schema=_schema(), exist_ok=True) if create else None

    def import_lines(self, lines: Iterable[str | bytes], progress: Progress | None = None,
                     total: int = 0, allowed: Callable[[Scope | None], bool] | None = None,
                     before_write: BeforeWrite | None = None) -> ImportReport:
        """Parse and store; returns what was added, what was there already and the bad lines by number.
        `allowed(scope)` (a writer limited to some scopes): a line of any other scope is a bad line, not stored.
        `before_write(queries)` runs for each batch's lines that carry feedback before the batch's rows are written
        (it records their implicit grades): a line is in the log only once its grades are stored, so a rerun after
        a kill at any point skips only lines whose grades are already there (resumable; `import_log`)."""
        import time

        t0 = time.perf_counter()
        tbl = self._table(create=True)
        known = set(tbl.search().select(["key"]).limit(None).to_arrow().column("key").to_pylist()) \
            if tbl.count_rows() else set()
        batch: list[LoggedQuery] = []
        added = already = skipped = done = 0
        errors: list[BadLine] = []
        keys: list[str] = []
        rated: list[LoggedQuery] = []
        for item in parse_lines(lines):
            done += 1
            if item is None:
                skipped += 1
            elif isinstance(item, BadLine):
                errors.append(item)
            elif allowed is not None and not allowed(item.scope):
                errors.append(BadLine(done, f"scope {item.scope or 'none (unscoped)'} is not one of yours: a log "
                                            "line is kept only in a scope you may write to"))
            elif item.key in known:
                already += 1
            else:
                known.add(item.key)
                keys.append(item.key)
                batch.append(item)
            if len(batch) >= BATCH:
                added += self._commit(tbl, batch, before_write, rated)
                batch = []
                if progress:
                    progress(done, total)
        added += self._commit(tbl, batch, before_write, rated)
        if progress:
            progress(done, total or done)
        return ImportReport(added, already, skipped, tuple(errors), time.perf_counter() - t0, tuple(keys),
                            tuple(rated))

    def _commit(self, tbl: Any, batch: list[LoggedQuery], before_write: BeforeWrite | None,
                rated: list[LoggedQuery]) -> int:
        """One batch: its feedback's grades first (`before_write`), then its rows (one commit)."""
        with_feedback = [q for q in batch if q.feedback is not None]
        if before_write is not None and with_feedback:
            before_write(with_feedback)
        rated.extend(with_feedback)
        return self._write(tbl, [_row(q) for q in batch])

    def import_file(self, path: str | Path, progress: Progress | None = None,
                    allowed: Callable[[Scope | None], bool] | None = None,
                    before_write: BeforeWrite | None = None) -> ImportReport:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"{path} is not a file; pass a .jsonl log or a Phoenix span export")
        total = sum(1 for _ in path.open("rb"))
        with path.open("rb") as fh:
            return self.import_lines(fh, progress, total, allowed, before_write)

    @staticmethod
    def _write(tbl: Any, rows: list[dict]) -> int:
        import pyarrow as pa

        if rows:
            tbl.add(pa.Table.from_pylist(rows, schema=_schema()))
        return len(rows)

    def count(self) -> int:
        tbl = self._table()
        return tbl.count_rows() if tbl is not None else 0

    def queries(self, *, scope: Scope | None = None, feedback: str | None = None, max_top_score: float | None = None,
                since: datetime | None = None, limit: int | None = None) -> list[LoggedQuery]:
        """Logged queries, newest first, filtered in LanceDB (values quoted: never user text in a filter)."""
        from retrieval.store.rows import sql_quote

        tbl = self._table()
        if tbl is None:
            return []
        where = []
        if scope is not None:
            where.append(f"scope = {sql_quote(scope.scope)} AND scope_id = {sql_quote(scope.scope_id)}")
        if feedback in ("positive", "negative", "none"):
            where.append({"positive": "polarity > 0", "negative": "polarity < 0", "none": "feedback IS NULL"}[feedback])
        if max_top_score is not None:
            where.append(f"top_score <= {float(max_top_score)!r}")
        q = tbl.search().where(" AND ".join(where)) if where else tbl.search()
        rows = q.limit(None).to_arrow().to_pylist()
        out = sorted((from_row(r) for r in rows), key=lambda x: (x.timestamp, x.key), reverse=True)
        out = [x for x in out if since is None or x.timestamp >= since]
        return out[:limit] if limit else out

    def get(self, key: str) -> LoggedQuery | None:
        from retrieval.store.rows import sql_quote

        tbl = self._table()
        if tbl is None:
            return None
        rows = tbl.search().where(f"key = {sql_quote(key)}").limit(1).to_arrow().to_pylist()
        return from_row(rows[0]) if rows else None


def sample(queries: list[LoggedQuery], n: int, seed: int = 0) -> list[LoggedQuery]:
    """`n` of `queries` at random (repeatable with `seed`), newest first."""
    if n >= len(queries):
        return list(queries)
    picked = random.Random(seed).sample(queries, n)
    return sorted(picked, key=lambda x: (x.timestamp, x.key), reverse=True)


def record_implicit_grades(judgments: Any, queries: Iterable[LoggedQuery], source: str = "log", *,
                           access: Any = None) -> int:
    """Feedback as grades in the judgments store, grader and rater `implicit` (kept apart from human and machine
    grades; a case counts them only when it names `implicit` as its one rater). Returns how many were written."""
    import time

    from retrieval.judgments.model import Judgment

    grader = "implicit"
    now = time.time()
    rows = [Judgment(q.scope, q.query, tid, grade, grader, f"log:{source}"[:200], now, "implicit", created_at=now)
            for q in queries for tid, grade in implicit_grades(q).items()]
    if rows:
        judgments.add_judgments(rows, "graded", access=access)
    return len(rows)


def import_log(log: QueryLog, judgments: Any, lines: Iterable[str | bytes] | str | Path, *, source: str = "log",
               grades: bool = True, access: Any = None, progress: Progress | None = None, total: int = 0,
               allowed: Callable[[Scope | None], bool] | None = None) -> tuple[ImportReport, int]:
    """The one log import (CLI `import-log`, the Log page): lines (or a file) into the query log and, unless
    `grades` is off, their feedback into implicit grades, batch by batch, grades before rows. Killed at any point,
    a rerun reaches the state an uninterrupted import reaches. Returns (the report, implicit grades written).
    It writes, so `ReadOnlyError` before anything is read unless `access.may_write` (the Log page asks it too)."""
    from retrieval.access import require_write

    require_write(access, "imported")
    written = [0]

    def grade(batch: list[LoggedQuery]) -> None:
        written[0] += record_implicit_grades(judgments, batch, source, access=access)

    hook = grade if grades else None
    if isinstance(lines, (str, Path)):
        rep = log.import_file(lines, progress, allowed, hook)
    else:
        rep = log.import_lines(lines, progress, total, allowed, hook)
    return rep, written[0]
