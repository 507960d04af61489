"""Agreement says what it rests on (issue 32, item 16): kappa and alpha are withheld under `MIN_SHARED` items graded
in common, with the reason; the judging queue puts a shared overlap set first so a team can reach it."""
from __future__ import annotations

import json

from conftest import U1

from retrieval.cli.main import main
from retrieval.judgments import Case, CaseQuery, Judgment, JudgmentStore, Snapshot, SnapshotQuery
from retrieval.judgments.agreement import MIN_SHARED, case_agreement
from retrieval.judgments.queue import OVERLAP, judging_queue
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import STAGES

CASE = Case("big", tuple(CaseQuery(f"q{n}", f"query {n}", U1) for n in range(51)))
POOL = Snapshot("s1", "big", 0.0, PipelineConfig.for_preset("hybrid"), tuple(
    SnapshotQuery(q.qid, q.query, U1, {s: tuple(f"{q.qid}-t{i}" for i in range(10)) if s == "final" else ()
                  for s in STAGES}, {s: () for s in STAGES}) for q in CASE.queries[:50]) + (
    SnapshotQuery("q50", "query 50", U1, {s: ("q50-a", "q50-b") if s == "final" else () for s in STAGES},
                  {s: () for s in STAGES}),), {})  # 502 pooled items


def _grade_first(queue, rater: str, n: int, grade: int = 2) -> list[Judgment]:
    return [Judgment(i.scope, i.query, i.trace_id, grade, rater=rater) for i in queue[:n]]


def test_agreement_over_too_few_shared_items_is_withheld_with_the_reason():
    alice = [Judgment(U1, "query 1", f"t{n}", 2, rater="alice") for n in range(6)]
    bob = [Judgment(U1, "query 1", f"t{n}", 2, rater="bob") for n in range(5, 11)]  # one item in common
    agg = case_agreement(alice + bob)
    assert (agg["shared_items"], agg["minimum"], agg["alpha_ordinal"], agg["alpha_interval"]) == (1, 10, None, None)
    assert agg["withheld"] == ("withheld: it would rest on 1 item(s) graded by more than one rater; at least 10 are "
                               "needed (judge the shared items the queue puts first)")
    assert [(p["n"], p["kappa"], p["withheld"]) for p in agg["pairs"]] == [(1, None, agg["withheld"])]
    both = alice + [Judgment(U1, "query 1", f"t{n}", 2, rater="bob") for n in range(MIN_SHARED)]
    enough = case_agreement(both)
    assert (enough["shared_items"], bool(enough["withheld"]), enough["alpha_ordinal"]) == (6, True, None)
    full = case_agreement([Judgment(U1, "query 1", f"t{n}", n % 4, rater=r) for n in range(10) for r in ("a", "b")])
    assert (full["shared_items"], full["withheld"], full["alpha_ordinal"], full["pairs"][0]["kappa"]) == \
        (10, "", 1.0, 1.0)


def test_the_queue_puts_the_same_overlap_set_first_for_every_rater():
    queues = {r: judging_queue(CASE, [POOL], 10, r) for r in ("alice", "bob", "carol")}
    assert {len(q) for q in queues.values()} == {502} and OVERLAP == 20
    firsts = {r: {i.key for i in q[:OVERLAP]} for r, q in queues.items()}
    assert firsts["alice"] == firsts["bob"] == firsts["carol"]
    assert [i.key for i in queues["alice"][:OVERLAP]] != [i.key for i in queues["bob"][:OVERLAP]]  # own order
    graded = _grade_first(queues["alice"], "alice", OVERLAP) + _grade_first(queues["bob"], "bob", OVERLAP)
    agg = case_agreement(graded)
    assert (agg["shared_items"], agg["withheld"], agg["alpha_ordinal"]) == (OVERLAP, "", 1.0)
    small = {r: {i.key for i in judging_queue(CASE, [POOL], 10, r, overlap=5)[:5]} for r in ("alice", "bob")}
    assert small["alice"] == small["bob"]
    none = {r: [i.key for i in judging_queue(CASE, [POOL], 10, r, overlap=0)[:6]] for r in ("alice", "bob")}
    assert not set(none["alice"]) & set(none["bob"])  # without overlap, six items each share nothing here


def test_cli_judge_agreement_says_what_it_rests_on(tmp_path, capsys):
    db = str(tmp_path / "db")
    js = JudgmentStore(db)
    js.save_case(Case("c", (CaseQuery("q1", "query 1", U1),)))
    js.add_judgments([Judgment(U1, "query 1", "t1", 2, rater="alice"), Judgment(U1, "query 1", "t1", 2, rater="bob"),
                      Judgment(U1, "query 1", "t2", 1, rater="alice")])
    assert main(["judge", "agreement", "c", "--db", db]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["shared_items"], out["minimum"], out["alpha_ordinal"]) == (1, 10, None)
    assert out["withheld"].startswith("withheld: it would rest on 1 item(s)")
    assert [(p["n"], p["kappa"]) for p in out["pairs"]] == [(1, None)]
