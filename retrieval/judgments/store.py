"""`JudgmentStore`: judgments, cases and snapshots as LanceDB tables beside `traces` (one store URI).

They travel with the store and survive restarts. Every read sees the latest commit (another process,
the CLI while the app runs, may have written). Writes are upserts by a key column (plumbing: `tables`).
A grade belongs to a rater; metrics read the grades a case's `CasePolicy` combines (`raters`).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from retrieval.store.rows import sql_quote
from retrieval.types import Scope
from retrieval.judgments.model import (CANT_RATE, LabelledQuery, Case, CaseQuery, Judgment, Snapshot, check_case_name,
                                       check_grade, check_grader, check_rater, parse_scope, query_key, scope_text)
from retrieval.judgments.identity import LOCAL, check_author, check_kind, writer
from retrieval.judgments.raters import CasePolicy, combined_grades
from retrieval.judgments.tables import LOCK as _LOCK, JudgmentStoreError, Tables

if TYPE_CHECKING:
    from retrieval.access import Access

__all__ = ["JudgmentStore", "JudgmentStoreError", "check_grading", "grades_of", "judgment_key", "to_judgment"]


def may_grade(access: Access | None) -> bool:
    """The one grading rule (store, Inspect, Judge): not denied, and the grade permission or writing outside demo
    mode. `None` is local use: allowed."""
    return access is None or (not access.denied and bool(access.grade or (access.write and not access.read_only)))


def check_grading(access: Access | None, scopes: Iterable[Scope | None]) -> None:
    """`ReadOnlyError` unless `access` may grade (or write), `AccessDenied` when any of `scopes` is
    not one of its scopes (a case line naming another user's scope). `None` is local use: allowed."""
    if access is None:
        return
    from retrieval.access import AccessDenied, ReadOnlyError

    if not may_grade(access):
        raise ReadOnlyError(f"nothing was saved: {access.denied or f'{access.user} may not grade here'}")
    hidden = sorted({scope_text(s) for s in scopes if not access.sees(s)})
    if hidden:
        raise AccessDenied(f"nothing was saved: scope(s) {', '.join(hidden)} are not yours to grade in; "
                           "grade and build cases in your own scopes")


def grades_of(ratings: Iterable[Judgment], rater: str = LOCAL) -> dict[str, dict[str, int]]:
    """`JudgmentStore.grades` from ratings already read: {"human": rater `rater`'s, "machine": the machine's}."""
    out: dict[str, dict[str, int]] = {"human": {}, "machine": {}}
    for j in ratings:
        if not j.cant_rate and j.who in (rater, "machine"):
            out["machine" if j.who == "machine" else "human"][j.trace_id] = j.grade
    return out


def judgment_key(scope: Scope | None, query: str, trace_id: str, grader: str, rater: str = "") -> str:
    """One row per (scope, query, trace, rater); a rater named like its kind keeps the key older versions wrote."""
    parts = [scope_text(scope), query_key(query), trace_id, grader]
    return "\x1f".join(parts + ([rater] if rater and rater != grader else []))


def to_judgment(r: Mapping) -> Judgment:
    """A row, old (no rater, no hash) or new, as a `Judgment`."""
    return Judgment(parse_scope(r["scope"]), r["query"], r["trace_id"], int(r["grade"]), r["grader"],
                    r["source"], r["updated_at"], r.get("rater") or r["grader"], r.get("content_hash") or "",
                    r.get("note") or "", r.get("prompt_version") or "", r.get("created_at") or r["updated_at"])


def _row(j: Judgment, scale: str, now: float) -> dict:
    check_grader(j.grader)
    rater = check_rater(j.who)
    if not j.trace_id or not str(j.query).strip():
        raise ValueError(f"a judgment needs a query and a trace id, got {j.query!r} / {j.trace_id!r}")
    grade = CANT_RATE if j.grade == CANT_RATE else check_grade(j.grade, scale)
    return {"key": judgment_key(j.scope, j.query, j.trace_id, j.grader, rater), "scope": scope_text(j.scope),
            "query": j.query, "query_key": query_key(j.query), "trace_id": j.trace_id, "grade": grade,
            "grader": j.grader, "source": j.source, "updated_at": j.updated_at or now, "rater": rater,
            "content_hash": j.content_hash, "note": j.note if grade == CANT_RATE else j.note[:2000],
            "prompt_version": j.prompt_version, "created_at": j.created_at or j.updated_at or now}


class JudgmentStore(Tables):
    def __repr__(self) -> str:
        return f"JudgmentStore(uri={self.display_uri!r})"

    # ------------------------------------------------------------------ judgments
    def add_judgments(self, judgments: Iterable[Judgment], scale: str = "graded", *, access: Access | None = None,
                      audit: bool = True) -> int:
        """Upsert grades (validated first: one bad grade, or one in a scope `access` may not grade, writes
        nothing); audited. A grade's `rater` ("" = its kind) and content hash are kept with it."""
        now = time.time()
        judgments = list(judgments)
        check_grading(access, [j.scope for j in judgments])
        for j in judgments:  # who wrote it (`identity`): a person as themselves, a machine grade as its kind
            check_author(access, j.who) if j.grader == "human" else check_kind(j.grader, j.who)
        rows = [_row(j, scale, now) for j in judgments]
        n = self.upsert_rows("judgments", "key", rows)
        if audit and n:
            people = {j.who for j in judgments if j.grader == "human"}
            self.record_write(access, "grade", n, [j.scope for j in judgments], detail=judgments[0].source,
                              who=next(iter(people)) if len(people) == 1 else "")
        return n

    def set_grade(self, scope: Scope | None, query: str, trace_id: str, grade: int, grader: str = "human",
                  source: str = "inspect", scale: str = "graded", *, access: Access | None = None, rater: str = "",
                  content_hash: str = "", note: str = "", prompt_version: str = "",
                  created_at: float | None = None) -> Judgment:
        """One rater's grade (`CANT_RATE` with `note` for "can't rate"); a re-grade keeps when it was first made
        (looked up unless the caller knows it: `created_at`, 0 for a first grade)."""
        grade = CANT_RATE if grade == CANT_RATE else check_grade(grade, scale)
        rater = rater or (writer(access) if grader == "human" else grader)  # who writes (`identity`)
        now = time.time()
        if created_at is None:
            key = judgment_key(scope, query, trace_id, grader, check_rater(rater or grader))
            col = "created_at" if self.has_column("judgments", "created_at") else "updated_at"
            old = self.table_rows_columns("judgments", [col], f"key = {sql_quote(key)}")
            created_at = float(old[0][col]) if old else 0.0
        created = created_at or now
        j = Judgment(scope, query, trace_id, grade, grader, source, now, rater or grader, content_hash, note,
                     prompt_version, created)
        self.add_judgments([j], scale, access=access)
        return j

    def clear_grade(self, scope: Scope | None, query: str, trace_id: str, grader: str = "human", *,
                    access: Access | None = None, rater: str = "") -> None:
        check_grading(access, [scope])
        rater = check_author(access, rater or writer(access)) if grader == "human" else rater
        self.delete_rows("judgments", f"key = {sql_quote(judgment_key(scope, query, trace_id, grader, rater))}")
        self.record_write(access, "grade", 1, [scope], detail="cleared", who=rater)

    def clear_judgments(self, judgments: Iterable[Judgment], *, access: Access | None = None) -> int:
        """Delete these grades (bulk clear: by rater, by query, stale only — the caller picks them); nothing is
        deleted when any lies in a scope `access` may not grade."""
        judgments = list(judgments)
        check_grading(access, [j.scope for j in judgments])
        keys = [judgment_key(j.scope, j.query, j.trace_id, j.grader, j.who) for j in judgments]
        for n in range(0, len(keys), 500):
            self.delete_rows("judgments", "key IN (" + ", ".join(sql_quote(k) for k in keys[n:n + 500]) + ")")
        if keys:
            self.record_write(access, "grade", len(keys), [j.scope for j in judgments], detail="cleared")
        return len(keys)

    def grades(self, scope: Scope | None, query: str, rater: str = LOCAL) -> dict[str, dict[str, int]]:
        """{"human": {trace id: grade} of human rater `rater`, "machine": the machine's} for one query in one
        scope; "can't rate" is left out (see `ratings` for every rater, notes and hashes)."""
        return grades_of(self.ratings(scope, query), rater)

    def ratings(self, scope: Scope | None, query: str) -> list[Judgment]:
        """Every rater's grades for one query in one scope."""
        where = f"scope = {sql_quote(scope_text(scope))} AND query_key = {sql_quote(query_key(query))}"
        return [to_judgment(r) for r in self.table_rows("judgments", where)]

    def judgments(self, grader: str | None = None) -> list[Judgment]:
        where = f"grader = {sql_quote(check_grader(grader))}" if grader else None
        rows = sorted(self.table_rows("judgments", where), key=lambda r: (r["scope"], r["query_key"], r["trace_id"]))
        return [to_judgment(r) for r in rows]

    def case_judgments(self, case: Case | str) -> list[Judgment]:
        """Every rater's grades (and "can't rate") for the queries of `case`."""
        case = self.case(case) if isinstance(case, str) else case
        keys = {(scope_text(q.scope), query_key(q.query)) for q in case.queries}
        return [j for j in self.judgments() if (scope_text(j.scope), query_key(j.query)) in keys]

    def qrels(self, case: Case | str, grader: str = "human", policy: CasePolicy | None = None,
              hashes: Mapping[str, str] | None = None) -> dict[str, dict[str, int]]:
        """{qid: {trace id: grade}} for the case's queries as its policy (or `policy`) combines the raters
        (queries without a grade are absent). `grader="machine"`: the machine's grades alone. A stale grade is
        not a grade (`fresh`, the one rule): against `hashes` (trace id -> content hash now) when the caller knows
        them (a snapshot as of a version), else against the store's traces now."""
        case = self.case(case) if isinstance(case, str) else case
        check_grader(grader)
        if grader == "machine":
            policy = CasePolicy("rater", "machine", calibration={"grader": "machine"})
        policy = policy or self.policy(case.name)
        found = self.case_judgments(case)
        combined = combined_grades(found, policy, self.hashes_now(found) if hashes is None else hashes)
        by_query: dict[tuple[str, str], dict[str, int]] = {}
        for (scope, qk, tid), g in combined.items():
            by_query.setdefault((scope, qk), {})[tid] = g
        out = {}
        for q in case.queries:
            got = by_query.get((scope_text(q.scope), query_key(q.query)))
            if got:
                out[q.qid] = dict(sorted(got.items()))
        return out

    def hashes_now(self, judgments: Iterable[Judgment]) -> dict[str, str]:
        """{trace id: content hash now} of the graded traces, read from this store's traces table (`fresh`)."""
        from retrieval.judgments.fresh import current_hashes, traces_now

        return current_hashes(judgments, traces_now(self.uri, self.storage_options))

    # ------------------------------------------------------------------ case policy
    def policy(self, name: str) -> CasePolicy:
        """The case's combination policy and k (mean of human raters, k = 10, until set)."""
        rows = self.table_rows("case_settings", f"case_name = {sql_quote(check_case_name(name))}")
        return CasePolicy.from_json(rows[0]["settings"]) if rows else CasePolicy()

    def set_policy(self, name: str, policy: CasePolicy, *, access: Access | None = None) -> CasePolicy:
        case = self.case(name)
        check_grading(access, [q.scope for q in case.queries])
        self.upsert_rows("case_settings", "case_name", [{"case_name": name, "settings": policy.to_json(),
                                                     "updated_at": time.time()}])
        self.record_write(access, "case", 0, [q.scope for q in case.queries], detail=f"{name}: {policy.describe()}")
        return policy

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
            self.upsert_rows("cases", "key", rows)
            self.record_write(access, "case", len(rows), [q.scope for q in case.queries], detail=case.name)
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
        self.upsert_rows("cases", "key", [row])
        self.record_write(access, "case", 1, [scope], detail=name)
        return self.case(name)

    def find_case(self, name: str) -> Case | None:
        rows = sorted(self.table_rows("cases", f"case_name = {sql_quote(check_case_name(name))}"),
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

    def labelled(self, case: Case | str, grader: str = "human", hashes: Mapping[str, str] | None = None) -> list:
        """The case's graded queries as `LabelledQuery`s (what Compare, Tune and evaluation read)."""
        case = self.case(case) if isinstance(case, str) else case
        qrels = self.qrels(case, grader, hashes=hashes)
        return [LabelledQuery(q.qid, q.query, {i: float(g) for i, g in qrels[q.qid].items()}, q.scope, note=q.note)
                for q in case.queries if q.qid in qrels]

    def case_names(self) -> list[str]:
        return sorted({r["case_name"] for r in self.table_rows("cases")})

    def cases(self) -> list[dict]:
        """One summary per case: queries, judged queries (human grades), scale, snapshots."""
        snaps: dict[str, int] = {}
        for r in self.snapshot_rows():  # through `snapshot_rows`: a reader's lens counts only what it shows
            snaps[r["case_name"]] = snaps.get(r["case_name"], 0) + 1
        out = []
        for name in self.case_names():
            c = self.case(name)
            out.append({"case": name, "queries": len(c.queries), "judged_queries": len(self.qrels(c)),
                        "scale": c.scale, "snapshots": snaps.get(name, 0), "note": c.note})
        return out

    def delete_case(self, name: str) -> None:
        self.delete_rows("cases", f"case_name = {sql_quote(check_case_name(name))}")

    # ------------------------------------------------------------------ snapshots
    def save_snapshot(self, snap: Snapshot, *, access: Access | None = None) -> Snapshot:
        """Store a snapshot run. Unlike a grade it needs write access: a read-only demo that lets visitors
        grade still stores no run (`ReadOnlyError`); a limited writer only over queries in their scopes."""
        from retrieval.access import ReadOnlyError, may_write

        if access is not None and not may_write(access):
            raise ReadOnlyError(f"nothing was saved: {access.denied or 'storing a snapshot run needs write access'}")
        check_grading(access, [q.scope for q in snap.queries])
        self.upsert_rows("snapshots", "id", [snap.to_row()])
        self.record_write(access, "snapshot", len(snap.queries), [q.scope for q in snap.queries], detail=snap.case)
        return snap

    def snapshot(self, snapshot_id: str) -> Snapshot:
        rows = self.table_rows("snapshots", f"id = {sql_quote(snapshot_id)}")
        if not rows:
            raise self.no_snapshot(snapshot_id)
        return Snapshot.from_row(rows[0])

    def no_snapshot(self, snapshot_id: str) -> ValueError:
        """The error for a snapshot id this store does not hold, naming the latest it does."""
        known = [r["id"] for r in self.snapshot_rows()][-5:]
        return ValueError(f"no snapshot {snapshot_id!r} in {self.display_uri}; latest: {', '.join(known) or 'none'} "
                          "(run one with `python -m retrieval snapshot run CASE`)")

    def snapshot_rows(self, case: str | None = None) -> list[dict]:
        """Light rows (no stage lists) oldest first: id, case, created_at, label, config, metrics (JSON)."""
        where = f"case_name = {sql_quote(check_case_name(case))}" if case else None
        rows = self.table_rows_columns("snapshots", ["id", "case_name", "created_at", "label", "config", "metrics",
                                                "elapsed_ms"], where)
        return sorted(rows, key=lambda r: (r["created_at"], r["id"]))

    def snapshots(self, case: str | None = None) -> list[Snapshot]:
        where = f"case_name = {sql_quote(check_case_name(case))}" if case else None
        snaps = (Snapshot.from_row(r) for r in self.table_rows("snapshots", where))
        return sorted(snaps, key=lambda s: (s.created_at, s.id))

    def _snapshot_scopes(self, case: str | None = None, ids: Iterable[str] | None = None) -> list[dict]:
        """Each snapshot's id, case_name and the scope texts its queries ran in (`scopes`, a list), read from the
        light `scopes` column without decoding any payload; of case `case`, or among `ids`, when given. `scopes` is
        None for a run stored before that column (or every run, in a table without it): its payload is the only
        record of what it ran. Private: a reader's lens (`VisibleJudgments`) filters what it returns."""
        where = f"case_name = {sql_quote(check_case_name(case))}" if case else None
        if ids is not None:
            if not (ids := list(ids)):
                return []
            where = " AND ".join(filter(None, [where, "id IN (" + ", ".join(map(sql_quote, ids)) + ")"]))
        if not self.has_column("snapshots", "scopes"):
            return [{**r, "scopes": None} for r in self.table_rows_columns("snapshots", ["id", "case_name"], where)]
        rows = self.table_rows_columns("snapshots", ["id", "case_name", "scopes"], where)
        return [{**r, "scopes": None if r["scopes"] is None else json.loads(r["scopes"])} for r in rows]

    def _snapshots_by_id(self, ids: Iterable[str]) -> list[Snapshot]:
        """The stored snapshots among `ids` (decoded), in no particular order. Private, as `_snapshot_scopes`."""
        ids = list(ids)
        return [Snapshot.from_row(r) for n in range(0, len(ids), 500)
                for r in self.table_rows("snapshots", "id IN (" + ", ".join(map(sql_quote, ids[n:n + 500])) + ")")]
