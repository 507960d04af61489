"""A limited visitor's snapshots are decided on the light `scopes` column (the scopes each run's queries ran in), so
another scope's snapshot is never decoded for them; a store written before that column still opens, each old run
decided on its payload as before, and its first snapshot write adds the column (old runs keep null there)."""
from __future__ import annotations

import pytest
from conftest import U1, U2

from retrieval.access import Access
from retrieval.judgments import Case, CaseQuery, JudgmentStore, SnapshotQuery
from retrieval.judgments.model import Snapshot
from retrieval.judgments.visible import VisibleJudgments
from retrieval.pipeline.config import PipelineConfig

U1_ONLY = Access("u1@example.com", frozenset({str(U1)}), write=True, grade=True)


def snap(sid: str, case: str, *scopes, at: float = 1.0) -> Snapshot:
    queries = tuple(SnapshotQuery(f"q{i}", f"query {i}", s, {"final": ("a",)}, {"final": (1.0,)})
                    for i, s in enumerate(scopes))
    return Snapshot(sid, case, at, PipelineConfig.for_preset("hybrid"), queries, {"ndcg@10": 0.5})


def fill(js: JudgmentStore, n: int = 0) -> None:
    """Cases `mine` (u1), `theirs` (u2); runs of each, one of `mine` that ran a u2 query then, one of all scopes."""
    js.save_case(Case("mine", (CaseQuery("q0", "query 0", U1),)))
    js.save_case(Case("theirs", (CaseQuery("q0", "query 0", U2),)))
    for s in (snap(f"s-mine{n}", "mine", U1, at=n + 1), snap(f"s-theirs{n}", "theirs", U2, at=n + 2),
              snap(f"s-mixed{n}", "mine", U1, U2, at=n + 3), snap(f"s-all{n}", "mine", None, at=n + 4)):
        js.save_snapshot(s)


@pytest.fixture
def decoded(monkeypatch):
    """The ids of the snapshots decoded (`Snapshot.from_row`) while the test runs."""
    seen: list[str] = []
    real = Snapshot.from_row.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Snapshot, "from_row", classmethod(lambda cls, row: (seen.append(row["id"]), real(cls, row))[1]))
    return seen


def test_a_limited_visitor_sees_its_own_snapshots_and_decodes_no_other_scopes(tmp_path, decoded):
    fill(JudgmentStore(str(tmp_path / "db")))
    vis = VisibleJudgments(str(tmp_path / "db"), U1_ONLY)
    assert [r["id"] for r in vis.snapshot_rows()] == ["s-mine0"]
    assert [r["id"] for r in vis.snapshot_rows("mine")] == ["s-mine0"] and vis.snapshot_rows("theirs") == []
    assert decoded == []  # decided on the scopes column: no payload read, not even its own
    assert [s.id for s in vis.snapshots()] == ["s-mine0"] and decoded == ["s-mine0"]
    assert [r["id"] for r in JudgmentStore(str(tmp_path / "db")).snapshot_rows()] == \
        ["s-mine0", "s-theirs0", "s-mixed0", "s-all0"]  # the unlimited reader sees every run


def test_a_store_written_before_the_scopes_column_opens_and_shows_the_same(tmp_path, decoded):
    db = str(tmp_path / "db")
    js = JudgmentStore(db)
    fill(js)
    js._table("snapshots").drop_columns(["scopes"])  # as an older version wrote it
    vis = VisibleJudgments(db, U1_ONLY)
    assert [r["id"] for r in vis.snapshot_rows()] == ["s-mine0"]  # decided on the payloads, as before
    assert sorted(decoded) == ["s-all0", "s-mine0", "s-mixed0"]  # of visible cases only: `theirs` is not read
    assert not vis.has_column("snapshots", "scopes")  # reading never changes the store

    fill(JudgmentStore(db), n=1)  # the first write adds the column; the old runs hold null there
    decoded.clear()
    vis = VisibleJudgments(db, U1_ONLY)
    assert [r["id"] for r in vis.snapshot_rows()] == ["s-mine0", "s-mine1"]
    assert sorted(decoded) == ["s-all0", "s-mine0", "s-mixed0"]  # only the runs stored before the column
    assert [s.id for s in vis.snapshots("mine")] == ["s-mine0", "s-mine1"]


def _refusal(vis: VisibleJudgments, sid: str) -> str:
    with pytest.raises(ValueError) as err:
        vis.snapshot(sid)
    return str(err.value).replace(repr(sid), "ID")


@pytest.mark.parametrize("old", [False, True], ids=["scopes-column", "before-the-column"])
def test_one_snapshot_of_another_scope_is_refused_as_unknown_and_decided_before_decoding(tmp_path, decoded, old):
    db = str(tmp_path / "db")
    fill(JudgmentStore(db))
    if old:
        JudgmentStore(db)._table("snapshots").drop_columns(["scopes"])
    vis = VisibleJudgments(db, U1_ONLY)
    unknown = _refusal(vis, "s-nowhere")
    assert "s-theirs0" not in unknown and "s-mixed0" not in unknown  # "latest" names only what the visitor sees
    for hidden in ("s-theirs0", "s-mixed0", "s-all0"):
        assert _refusal(vis, hidden) == unknown  # no existence oracle
    # decided on the light row: another scope's run is never decoded, unless it predates the column (its payload)
    assert sorted(set(decoded)) == (["s-all0", "s-mine0", "s-mixed0"] if old else [])
    decoded.clear()
    assert vis.snapshot("s-mine0").id == "s-mine0" and decoded == ["s-mine0"]


def test_the_light_snapshot_readers_are_private_so_no_lens_inherits_them_unfiltered():
    from retrieval.judgments.store import JudgmentStore as Plain

    public = {n for n in dir(Plain) if not n.startswith("_") and "snapshot" in n}
    overridden = {n for n in public if getattr(VisibleJudgments, n) is not getattr(Plain, n)}
    # every public snapshot reader of the store is redefined by the lens, or writes/errs (checked by the lens there)
    assert public - overridden <= {"save_snapshot", "no_snapshot"}, public - overridden


@pytest.mark.parametrize(("text", "race"), [
    ("Retryable commit conflict for version 7: This Merge transaction was preempted by concurrent transaction", True),
    ("Column scopes already exists in the dataset", True),
    ("Table 'snapshots' already exists", False),  # not a column another writer added: the table's own trouble
    ("LanceError(IO): Not found: /db/snapshots.lance/_versions/3.manifest", False),
    ("Invalid user input: manifest is corrupt", False)])
def test_only_a_lost_commit_race_is_read_as_one(text, race):
    """A race is read again (`_migrate`) and said as "try again"; anything else stays a damaged table."""
    from retrieval.judgments.tables import raced

    assert raced(RuntimeError(text)) is race
