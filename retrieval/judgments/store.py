"""`JudgmentStore`: judgments, cases and snapshots as LanceDB tables beside `traces` (one store URI).

They travel with the store and survive restarts. Every read sees the latest commit (another process,
the CLI while the app runs, may have written). Writes are upserts by a key column.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from retrieval.store.remote import open_db, redact_uri, storage_options_from_env
from retrieval.store.rows import sql_quote
from retrieval.types import Scope
from retrieval.judgments.model import (LabelledQuery, Case, CaseQuery, Judgment, Snapshot, check_case_name,
                                       check_grade, check_grader, parse_scope,
                    query_key, scope_text)

if TYPE_CHECKING:
    from lancedb.db import DBConnection

    from retrieval.access import Access
    from retrieval.workspace.audit import AuditLog

_LOCK = threading.RLock()


class JudgmentStoreError(RuntimeError):
    """A judgments, cases or snapshots table exists but cannot be read or written."""


def check_grading(access: Access | None, scopes: Iterable[Scope | None]) -> None:
    """`ReadOnlyError` unless `access` may grade (or write), `AccessDenied` when any of `scopes` is
    not one of its scopes (a case line naming another user's scope). `None` is local use: allowed."""
    if access is None:
        return
    from retrieval.access import AccessDenied, ReadOnlyError

    if access.denied or not (access.grade or (access.write and not access.read_only)):
        raise ReadOnlyError(f"nothing was saved: {access.denied or f'{access.user} may not grade here'}")
    hidden = sorted({scope_text(s) for s in scopes if not access.sees(s)})
    if hidden:
        raise AccessDenied(f"nothing was saved: scope(s) {', '.join(hidden)} are not yours to grade in; "
                           "grade and build cases in your own scopes")


def _schemas():
    import pyarrow as pa

    s, i, f = pa.string(), pa.int64(), pa.float64()
    return {
        "judgments": pa.schema([("key", s), ("scope", s), ("query", s), ("query_key", s), ("trace_id", s),
                                ("grade", i), ("grader", s), ("source", s), ("updated_at", f)]),
        "cases": pa.schema([("key", s), ("case_name", s), ("qid", s), ("query", s), ("scope", s), ("note", s),
                            ("position", i), ("scale", s), ("case_note", s), ("created_at", f)]),
        "snapshots": pa.schema([("id", s), ("case_name", s), ("created_at", f), ("label", s), ("config", s),
                                ("metrics", s), ("payload", s), ("elapsed_ms", f)]),
    }


def judgment_key(scope: Scope | None, query: str, trace_id: str, grader: str) -> str:
    return "\x1f".join((scope_text(scope), query_key(query), trace_id, grader))


class JudgmentStore:
    def __init__(self, uri: str = "data/lancedb", *, storage_options: Mapping[str, str] | None = None,
                 audit: AuditLog | None = None):
        self.uri = str(uri)
        self.display_uri = redact_uri(self.uri)
        self.storage_options = (dict(storage_options) if storage_options is not None
                                else storage_options_from_env(self.uri))
        self._db: DBConnection | None = None
        self._tables: dict[str, object] = {}
        self._audit = audit

    @property
    def audit(self) -> AuditLog:
        """The store's audit log (grades, cases and snapshots are writes too)."""
        if self._audit is None:
            from retrieval.workspace.audit import AuditLog

            self._audit = AuditLog(self.uri, storage_options=self.storage_options)
        return self._audit

    def _record(self, access: Access | None, action: str, count: int, scopes: Iterable[Scope | None],
                detail: str = "") -> None:
        actor = access.user if access is not None else "local"
        self.audit.record(actor, action, count, sorted({scope_text(s) for s in scopes}), [], detail=detail)

    def _broken(self, name: str, exc: BaseException) -> JudgmentStoreError:
        why = (str(exc).strip().splitlines() or [""])[0][:240]
        return JudgmentStoreError(
            f"the {name} table of {self.display_uri} is unreadable ({type(exc).__name__}: {why}); grades, cases "
            f"and snapshots are off until it is repaired: move {name}.lance aside (the traces are not affected)")

    def __repr__(self) -> str:
        return f"JudgmentStore(uri={self.display_uri!r})"

    # ------------------------------------------------------------------ plumbing
    def _table(self, name: str, create: bool = False):
        with _LOCK:
            if name not in self._tables:
                try:
                    if self._db is None:
                        self._db = open_db(self.uri, self.storage_options, consistent=True)
                    if name in self._db.list_tables().tables:
                        self._tables[name] = self._db.open_table(name)
                    elif create:
                        self._tables[name] = self._db.create_table(name, schema=_schemas()[name], exist_ok=True)
                    else:
                        return None
                except Exception as exc:  # a damaged table: one clear error, never LanceDB's raw one
                    raise self._broken(name, exc) from exc
            return self._tables[name]

    def _run(self, name: str, op, create: bool = False):
        """`op(table)`, with any LanceDB failure on a damaged table made a `JudgmentStoreError`."""
        tbl = self._table(name, create)
        if tbl is None:
            return None
        try:
            return op(tbl)
        except (ValueError, KeyError, TypeError):
            raise
        except Exception as exc:
            raise self._broken(name, exc) from exc

    def _rows(self, name: str, where: str | None = None) -> list[dict]:
        def read(tbl):
            q = tbl.search()
            return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

        return self._run(name, read) or []

    def _upsert(self, name: str, key: str, rows: list[dict]) -> int:
        if not rows:
            return 0
        rows = list({r[key]: r for r in rows}.values())  # the last row of a key wins
        with _LOCK:
            self._run(name, lambda tbl: tbl.merge_insert(key).when_matched_update_all()
                      .when_not_matched_insert_all().execute(rows), create=True)
        return len(rows)

    def _delete(self, name: str, where: str) -> None:
        with _LOCK:
            self._run(name, lambda tbl: tbl.delete(where))

    # ------------------------------------------------------------------ judgments
    def add_judgments(self, judgments: Iterable[Judgment], scale: str = "graded", *, access: Access | None = None,
                      audit: bool = True) -> int:
        """Upsert grades (validated first: one bad grade, or one in a scope `access` may not grade, writes
        nothing); audited."""
        now = time.time()
        judgments = list(judgments)
        check_grading(access, [j.scope for j in judgments])
        rows = []
        for j in judgments:
            check_grader(j.grader)
            if not j.trace_id or not str(j.query).strip():
                raise ValueError(f"a judgment needs a query and a trace id, got {j.query!r} / {j.trace_id!r}")
            rows.append({"key": judgment_key(j.scope, j.query, j.trace_id, j.grader), "scope": scope_text(j.scope),
                         "query": j.query, "query_key": query_key(j.query), "trace_id": j.trace_id,
                         "grade": check_grade(j.grade, scale), "grader": j.grader, "source": j.source,
                         "updated_at": j.updated_at or now})
        n = self._upsert("judgments", "key", rows)
        if audit and n:
            self._record(access, "grade", n, [j.scope for j in judgments], detail=judgments[0].source)
        return n

    def set_grade(self, scope: Scope | None, query: str, trace_id: str, grade: int, grader: str = "human",
                  source: str = "inspect", scale: str = "graded", *, access: Access | None = None) -> Judgment:
        j = Judgment(scope, query, trace_id, check_grade(grade, scale), grader, source, time.time())
        self.add_judgments([j], scale, access=access)
        return j

    def clear_grade(self, scope: Scope | None, query: str, trace_id: str, grader: str = "human", *,
                    access: Access | None = None) -> None:
        check_grading(access, [scope])
        self._delete("judgments", f"key = {sql_quote(judgment_key(scope, query, trace_id, grader))}")
        self._record(access, "grade", 1, [scope], detail="cleared")

    def grades(self, scope: Scope | None, query: str) -> dict[str, dict[str, int]]:
        """{grader: {trace id: grade}} for one query in one scope (both graders, kept apart)."""
        out: dict[str, dict[str, int]] = {"human": {}, "machine": {}}
        where = f"scope = {sql_quote(scope_text(scope))} AND query_key = {sql_quote(query_key(query))}"
        for r in self._rows("judgments", where):
            out.setdefault(r["grader"], {})[r["trace_id"]] = int(r["grade"])
        return out

    def judgments(self, grader: str | None = None) -> list[Judgment]:
        where = f"grader = {sql_quote(check_grader(grader))}" if grader else None
        rows = sorted(self._rows("judgments", where), key=lambda r: (r["scope"], r["query_key"], r["trace_id"]))
        return [Judgment(parse_scope(r["scope"]), r["query"], r["trace_id"], int(r["grade"]), r["grader"],
                         r["source"], r["updated_at"]) for r in rows]

    def qrels(self, case: Case | str, grader: str = "human") -> dict[str, dict[str, int]]:
        """{qid: {trace id: grade}} for the case's queries (queries without a grade are absent)."""
        case = self.case(case) if isinstance(case, str) else case
        by_query: dict[tuple[str, str], dict[str, int]] = {}
        for r in self._rows("judgments", f"grader = {sql_quote(check_grader(grader))}"):
            by_query.setdefault((r["scope"], r["query_key"]), {})[r["trace_id"]] = int(r["grade"])
        out = {}
        for q in case.queries:
            got = by_query.get((scope_text(q.scope), query_key(q.query)))
            if got:
                out[q.qid] = dict(sorted(got.items()))
        return out

    # ------------------------------------------------------------------ cases
    def save_case(self, case: Case, replace: bool = False, *, access: Access | None = None) -> Case:
        """Write a case; `replace=False` appends its queries to an existing case of that name. A case
        holding a query in a scope `access` may not grade is not `access`'s to change."""
        with _LOCK:
            old = self.find_case(case.name)
            check_grading(access, [q.scope for q in case.queries] + [q.scope for q in (old.queries if old else ())])
            if old is not None and not replace:
                seen = {(scope_text(q.scope), query_key(q.query)) for q in old.queries}
                qids = {q.qid for q in old.queries}
                new = [q for q in case.queries if (scope_text(q.scope), query_key(q.query)) not in seen
                       and q.qid not in qids]
                case = Case(old.name, old.queries + tuple(new), old.scale, old.note or case.note, old.created_at)
            elif old is not None:
                self.delete_case(case.name)
            created = case.created_at or time.time()
            rows = [{"key": f"{case.name}\x1f{q.qid}", "case_name": case.name, "qid": q.qid, "query": q.query,
                     "scope": scope_text(q.scope), "note": q.note, "position": n, "scale": case.scale,
                     "case_note": case.note, "created_at": created} for n, q in enumerate(case.queries)]
            self._upsert("cases", "key", rows)
            self._record(access, "case", len(rows), [q.scope for q in case.queries], detail=case.name)
            return Case(case.name, case.queries, case.scale, case.note, created)

    def add_to_case(self, name: str, query: str, scope: Scope | None, note: str = "", scale: str = "graded", *,
                    access: Access | None = None) -> Case:
        """Add one query (Inspect's "add to case"); creates the case. A query already there is kept once.

        One upsert of one row whose key comes from the query itself (its qid is `q-` + a hash of scope
        and query): two sessions or processes adding at once write different rows, or the same row
        for the same query, so no add is lost and no read-modify-write races another."""
        check_case_name(name)
        if not query.strip():
            raise ValueError("cannot add an empty query to a case; type a query first")
        old = self.find_case(name)
        check_grading(access, [scope] + [q.scope for q in (old.queries if old else ())])
        if old is not None:
            same = next((q for q in old.queries if (scope_text(q.scope), query_key(q.query))
                         == (scope_text(scope), query_key(query))), None)
            if same is not None:
                return old
        qid = "q-" + hashlib.blake2b(f"{scope_text(scope)}\x1f{query_key(query)}".encode(), digest_size=5).hexdigest()
        scale, case_note, created = (old.scale, old.note, old.created_at) if old else (scale, "", time.time())
        row = {"key": f"{name}\x1f{qid}", "case_name": name, "qid": qid, "query": query.strip(),
               "scope": scope_text(scope), "note": note, "position": time.time_ns(), "scale": scale,
               "case_note": case_note, "created_at": created}
        self._upsert("cases", "key", [row])
        self._record(access, "case", 1, [scope], detail=name)
        return self.case(name)

    def find_case(self, name: str) -> Case | None:
        rows = sorted(self._rows("cases", f"case_name = {sql_quote(check_case_name(name))}"),
                      key=lambda r: r["position"])
        if not rows:
            return None
        return Case(name, tuple(CaseQuery(r["qid"], r["query"], parse_scope(r["scope"]), r["note"]) for r in rows),
                    rows[0]["scale"], rows[0]["case_note"], rows[0]["created_at"])

    def case(self, name: str) -> Case:
        found = self.find_case(name)
        if found is None:
            known = self.case_names()
            raise ValueError(f"no case named {name!r} in {self.display_uri}; known: {', '.join(known) or 'none'} "
                             "(import one with `python -m retrieval case import`)")
        return found

    def labelled(self, case: Case | str, grader: str = "human") -> list:
        """The case's graded queries as `LabelledQuery`s (what Compare, Tune and evaluation read)."""
        case = self.case(case) if isinstance(case, str) else case
        qrels = self.qrels(case, grader)
        return [LabelledQuery(q.qid, q.query, {i: float(g) for i, g in qrels[q.qid].items()}, q.scope, note=q.note)
                for q in case.queries if q.qid in qrels]

    def case_names(self) -> list[str]:
        return sorted({r["case_name"] for r in self._rows("cases")})

    def cases(self) -> list[dict]:
        """One summary per case: queries, judged queries (human grades), scale, snapshots."""
        snaps: dict[str, int] = {}
        for r in self._rows_columns("snapshots", ["case_name"]):
            snaps[r["case_name"]] = snaps.get(r["case_name"], 0) + 1
        out = []
        for name in self.case_names():
            c = self.case(name)
            out.append({"case": name, "queries": len(c.queries), "judged_queries": len(self.qrels(c)),
                        "scale": c.scale, "snapshots": snaps.get(name, 0), "note": c.note})
        return out

    def delete_case(self, name: str) -> None:
        self._delete("cases", f"case_name = {sql_quote(check_case_name(name))}")

    # ------------------------------------------------------------------ snapshots
    def _rows_columns(self, name: str, columns: Sequence[str], where: str | None = None) -> list[dict]:
        def read(tbl):
            q = tbl.search().select(list(columns))
            return (q.where(where) if where else q).limit(None).to_arrow().to_pylist()

        return self._run(name, read) or []

    def save_snapshot(self, snap: Snapshot, *, access: Access | None = None) -> Snapshot:
        self._upsert("snapshots", "id", [snap.to_row()])
        self._record(access, "snapshot", len(snap.queries), [q.scope for q in snap.queries], detail=snap.case)
        return snap

    def snapshot(self, snapshot_id: str) -> Snapshot:
        rows = self._rows("snapshots", f"id = {sql_quote(snapshot_id)}")
        if not rows:
            known = [r["id"] for r in self.snapshot_rows()][-5:]
            raise ValueError(f"no snapshot {snapshot_id!r} in {self.display_uri}; latest: {', '.join(known) or 'none'} "
                             "(run one with `python -m retrieval snapshot run CASE`)")
        return Snapshot.from_row(rows[0])

    def snapshot_rows(self, case: str | None = None) -> list[dict]:
        """Light rows (no stage lists) oldest first: id, case, created_at, label, config, metrics (JSON)."""
        where = f"case_name = {sql_quote(check_case_name(case))}" if case else None
        rows = self._rows_columns("snapshots", ["id", "case_name", "created_at", "label", "config", "metrics",
                                                "elapsed_ms"], where)
        return sorted(rows, key=lambda r: (r["created_at"], r["id"]))

    def snapshots(self, case: str | None = None) -> list[Snapshot]:
        where = f"case_name = {sql_quote(check_case_name(case))}" if case else None
        snaps = (Snapshot.from_row(r) for r in self._rows("snapshots", where))
        return sorted(snaps, key=lambda s: (s.created_at, s.id))
