"""Which cases, snapshots and grades a visitor sees: the one rule the app's pages and the CLI's read commands share.

A case is visible when every one of its queries lies in a scope the visitor sees (all cases when the visitor is
not limited). `VisibleJudgments` is a `JudgmentStore` as a limited visitor reads it: a case, snapshot or grade
outside their scopes does not exist — the same error text as an unknown name, and no "known:" list naming it —
so nothing tells them another user's case is there (no existence oracle). A snapshot is visible when its case is and
every query it ran is (`case_visible` on the snapshot itself: the case may have held another scope's query then),
decided on the snapshots table's light `scopes` column, so another scope's run is never decoded; a run stored before
that column is decided on its payload.

Writes go through the lens too, so a write naming a hidden case or snapshot (`judge policy`, `judge import`,
`snapshot run`, `snapshot grade`) fails exactly as one naming an unknown one; the plain store's own checks still
refuse a grade or case write outside the visitor's scopes. One thing a shared name space cannot hide: creating a
case under a name another scope's case already holds is refused (`name_taken`), where a free name succeeds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval.judgments.model import Case, Judgment, Snapshot, parse_scope
from retrieval.judgments.store import JudgmentStore

if TYPE_CHECKING:
    from retrieval.access import Access

__all__ = ["VisibleJudgments", "case_visible", "lens", "visible_case_names"]


def case_visible(case: Case | Snapshot, access: Access | None) -> bool:
    """Every query of `case` (or of a snapshot's run) in a scope `access` sees; always for None or an unlimited
    visitor."""
    if access is None or not access.limited:
        return True
    return all(access.sees(q.scope) for q in case.queries)


def visible_case_names(js: JudgmentStore, access: Access | None) -> list[str]:
    """The case names `access` may see. How many are left out is not said: other users' cases are not a limited
    visitor's to count."""
    names = JudgmentStore.case_names(js)
    if access is None or not access.limited:
        return names
    return [n for n in names if case_visible(JudgmentStore.find_case(js, n) or Case(n, ()), access)]


class VisibleJudgments(JudgmentStore):
    """The judgments of one store as `access` (a visitor limited to some scopes) reads them."""

    def __init__(self, uri: str, access: Access, **kw: Any):
        super().__init__(uri, **kw)
        self.access = access

    def __repr__(self) -> str:
        return f"VisibleJudgments({self.display_uri!r}, user={self.access.user!r})"

    def case_names(self) -> list[str]:
        return visible_case_names(self, self.access)

    def find_case(self, name: str) -> Case | None:
        found = super().find_case(name)
        return found if found is not None and case_visible(found, self.access) else None

    def judgments(self, grader: str | None = None) -> list[Judgment]:
        return [j for j in super().judgments(grader) if self.access.sees(j.scope)]

    def ratings(self, scope, query: str) -> list[Judgment]:
        return super().ratings(scope, query) if self.access.sees(scope) else []

    def snapshot_rows(self, case: str | None = None) -> list[dict]:
        ids, old = self._shown(case)
        shown = ids | {s.id for s in old}
        return [r for r in super().snapshot_rows(case) if r["id"] in shown]

    def snapshots(self, case: str | None = None) -> list[Snapshot]:
        ids, old = self._shown(case)
        return sorted([*self._snapshots_by_id(ids), *old], key=lambda s: (s.created_at, s.id))

    def _ran_in_mine(self, row: dict) -> bool:
        """A light row (`_snapshot_scopes`) whose scopes are all this visitor's (False for an old row: no scopes)."""
        return row["scopes"] is not None and all(self.access.sees(parse_scope(t)) for t in row["scopes"])

    def _shown(self, case: str | None) -> tuple[set[str], list[Snapshot]]:
        """The snapshots this visitor sees — of a visible case, every scope it ran theirs — as the ids decided on the
        light `scopes` column, and the runs stored before that column, decoded (only their payload says what they
        ran). A snapshot of another scope is never decoded for a limited visitor, unless it predates the column."""
        names = set(self.case_names())
        rows = [r for r in self._snapshot_scopes(case) if r["case_name"] in names]
        ids = {r["id"] for r in rows if self._ran_in_mine(r)}
        old = self._snapshots_by_id(r["id"] for r in rows if r["scopes"] is None)
        return ids, [s for s in old if case_visible(s, self.access)]

    def snapshot(self, snapshot_id: str) -> Snapshot:
        """One visible snapshot, decided on its light row before its payload is decoded (an old row without
        scopes: on its payload); a hidden one fails exactly as an unknown id ("latest" lists only visible runs)."""
        light = self._snapshot_scopes(ids=[snapshot_id])
        if not light or light[0]["case_name"] not in self.case_names() or \
                (light[0]["scopes"] is not None and not self._ran_in_mine(light[0])):
            raise self.no_snapshot(snapshot_id)
        snap = super().snapshot(snapshot_id)
        if not case_visible(snap, self.access):  # the payload decides too: a row whose column disagrees is hidden
            raise self.no_snapshot(snapshot_id)
        return snap

    def name_taken(self, name: str) -> ValueError | None:
        """The refusal of a case write under `name` when another scope's case holds it (None when free or ours):
        the write would otherwise add to a case this visitor cannot see. It names no scope and no query."""
        if self.find_case(name) is None and JudgmentStore.find_case(self, name) is not None:
            return ValueError(f"the case name {name!r} cannot be used in {self.display_uri}; choose another name "
                              "(nothing was saved)")
        return None

    def save_case(self, case: Case, replace: bool = False, **kw: Any) -> Case:
        if (taken := self.name_taken(case.name)) is not None:
            raise taken
        return super().save_case(case, replace, **kw)

    def add_to_case(self, name: str, *args: Any, **kw: Any) -> Case:
        if (taken := self.name_taken(name)) is not None:
            raise taken
        return super().add_to_case(name, *args, **kw)


def lens(uri: str, access: Access | None) -> JudgmentStore:
    """The store's judgments as `access` reads them: the plain store for the local operator or a visitor of every
    scope, else `VisibleJudgments`."""
    if access is None or not access.limited:
        return JudgmentStore(uri)
    return VisibleJudgments(uri, access)
