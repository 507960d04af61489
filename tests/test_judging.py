"""Judging as a team: agreement statistics (hand-computed and published values), combination policies, stale
grades after an edit, the blind pooled queue, ERR@k, old judgments tables, export and import per rater."""
from __future__ import annotations

import json

import pytest
from conftest import NOW, U1, make_trace
from hypothesis import given
from hypothesis import strategies as st

from retrieval.judgments import Case, CaseQuery, Judgment, JudgmentStore
from retrieval.judgments.agreement import calibration, case_agreement, cohen_kappa, krippendorff_alpha, pairwise
from retrieval.judgments.exchange import export_ratings, import_ratings
from retrieval.metrics import err_at_k, evaluate
from retrieval.judgments.model import CANT_RATE, content_hash
from retrieval.judgments.queue import done_items, judging_queue, next_open, pooled_items, progress
from retrieval.judgments.raters import CasePolicy, combine, combined_grades
from retrieval.judgments.model import Snapshot, SnapshotQuery
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import STAGES

Q = "refund for invoice INV-8842"

# ------------------------------------------------------------------ agreement


def test_cohen_kappa_wikipedia_example():
    # Wikipedia, "Cohen's kappa": 50 proposals, 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> p_o .7, p_e .5, kappa .4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_weighted_kappa_hand_computed():
    # a = 0 1 2 3, b = 0 2 2 3 on the 0-3 scale: observed disagreement (1/3)^2/4 = 1/36, expected 10/36 -> 0.9;
    # linear weights: 1/12 over 5/12 -> 0.8; unweighted: p_o 3/4, p_e (1/4*1/4 + 1/4*1/2 + 1/4*1/4) = 1/4 -> 2/3
    a, b = [0, 1, 2, 3], [0, 2, 2, 3]
    assert cohen_kappa(a, b, (0, 1, 2, 3), "quadratic") == pytest.approx(0.9)
    assert cohen_kappa(a, b, (0, 1, 2, 3), "linear") == pytest.approx(0.8)
    assert cohen_kappa(a, b) == pytest.approx(2 / 3)
    # the scale, not only the grades seen, spaces the weights: grade 1 given by nobody still sits between 0 and 2
    x, y = [0, 2, 3], [0, 3, 3]
    assert cohen_kappa(x, y, (0, 1, 2, 3), "quadratic") != pytest.approx(cohen_kappa(x, y, None, "quadratic"))
    with pytest.raises(ValueError, match="weights 'cubic' are unknown"):
        cohen_kappa(a, b, weights="cubic")


KRIPPENDORFF_2011 = [  # "Computing Krippendorff's Alpha-Reliability" (2011), 4 observers x 12 units, values 1-5
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize("metric, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_published_example(metric, published):
    units = [[v for v in col if v is not None] for col in zip(*KRIPPENDORFF_2011)]
    assert krippendorff_alpha(units, metric) == pytest.approx(published, abs=5e-4)


def test_krippendorff_alpha_hand_computed_and_edges():
    # two raters, units (0,0), (1,1), (0,1): coincidences o00 = 2, o11 = 2, o01 = o10 = 1; n0 = n1 = 3, n = 6;
    # nominal alpha = 1 - (n-1) * 2 / (2 * n0 * n1) = 1 - 5 * 2 / 18 = 4/9
    assert krippendorff_alpha([[0, 0], [1, 1], [0, 1]], "nominal") == pytest.approx(4 / 9)
    assert krippendorff_alpha([[2, 2], [2, 2]], "interval") == 1.0
    assert krippendorff_alpha([[1], [2]], "ordinal") is None  # one rater per unit: nothing pairable
    with pytest.raises(ValueError, match="unknown"):
        krippendorff_alpha([[1, 2]], "ratio")


grades = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=30)


@given(grades)
def test_kappa_is_symmetric_and_at_most_one(pairs):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    for w in (None, "linear", "quadratic"):
        k = cohen_kappa(a, b, range(4), w)
        assert k == pytest.approx(cohen_kappa(b, a, range(4), w)) and k <= 1 + 1e-9
    assert cohen_kappa(a, a, range(4), "quadratic") == 1.0


@given(grades)
def test_alpha_two_raters_complete_data_agree_with_its_definition(pairs):
    alpha = krippendorff_alpha([list(p) for p in pairs], "interval")
    values = [v for p in pairs for v in p]
    if len(set(values)) == 1:
        assert alpha == 1.0
        return
    n = len(values)  # interval alpha = 1 - (n-1) * sum over units of 2 (x-y)^2 / sum over all pairs (v_i - v_j)^2
    do = sum(2 * (x - y) ** 2 for x, y in pairs)
    de = sum((u - v) ** 2 for u in values for v in values) / (n - 1)
    assert alpha == pytest.approx(1 - do / de)


def rated(rater, trace, grade, query=Q, grader="human", **kw):
    return Judgment(U1, query, trace, grade, grader, rater=rater, **kw)


def test_case_agreement_counts_raters_pairs_and_calibration():
    js = [rated("alice", "a", 3), rated("bob", "a", 2), rated("alice", "b", 0), rated("bob", "b", 0),
          rated("alice", "c", 1), rated("carol", "c", CANT_RATE, note="foreign language"),
          rated("machine", "a", 3, grader="machine"), rated("machine", "b", 1, grader="machine")]
    got = case_agreement(js, minimum=1)  # the statistics themselves (the minimum: test_agreement_minimum.py)
    assert got["raters"] == ["alice", "bob"] and got["items"] == 3 and got["items_by_raters"] == {1: 1, 2: 2}
    assert got["pairs"] == [{"rater_a": "alice", "rater_b": "bob", "n": 2, "agree": 1, "withheld": "",
                             "kappa": pytest.approx(cohen_kappa([3, 0], [2, 0], range(4), "quadratic"))}]
    assert got["alpha_ordinal"] == pytest.approx(krippendorff_alpha([[3, 2], [0, 0], [1]], "ordinal"))
    cal = calibration(js, minimum=1)
    assert [(r["rater"], r["n"], r["agree"]) for r in cal] == [("alice", 2, 1), ("bob", 2, 0)]
    assert len(pairwise(js)) == 3


# ------------------------------------------------------------------ combination policies


def test_combine_rules():
    assert combine([3, 1, 1], "mean") == 2 and combine([1, 2], "mean") == 2 and combine([0, 1], "mean") == 1
    assert combine([3, 1, 1], "majority") == 1 and combine([3, 1], "majority") == 1  # tie: the lower grade
    with pytest.raises(ValueError, match="unknown"):
        combine([1], "median")
    with pytest.raises(ValueError, match="after its agreement"):
        CasePolicy(machine=True)
    with pytest.raises(ValueError, match="k must be"):
        CasePolicy(k=0)


TEAM = [rated("alice", "a", 3), rated("alice", "b", 0), rated("bob", "a", 1), rated("bob", "b", 2),
        rated("carol", "a", 1), rated("carol", "b", 0), rated("dan", "b", CANT_RATE)]


@pytest.mark.parametrize("policy, expect", [
    (CasePolicy("mean"), {"a": 2, "b": 1}),  # a: (3+1+1)/3 = 1.67 -> 2; b: 2/3 -> 1; dan's "can't rate" not a grade
    (CasePolicy("majority"), {"a": 1, "b": 0}),
    (CasePolicy("rater", "alice"), {"a": 3, "b": 0}),
    (CasePolicy("rater", "bob"), {"a": 1, "b": 2}),
])
def test_combination_policies_change_grades_and_metrics(tmp_path, policy, expect):
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments(TEAM)
    js.set_policy("c", policy)
    assert js.policy("c") == policy
    assert js.qrels("c") == {"q1": expect}
    ranking = {"q1": ["a", "b"]}
    ndcg = evaluate(ranking, js.qrels("c"))["q1"]["ndcg@10"]
    ideal = sorted(expect.values(), reverse=True)
    assert (ndcg == pytest.approx(1.0)) == (list(expect.values()) == ideal)  # a first is ideal unless b outranks a


def test_policy_k_and_machine_after_calibration(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments([rated("alice", "a", 3), rated("machine", "b", 3, grader="machine"),
                      rated("implicit", "c", 2, grader="implicit")])  # logged feedback: never the LLM judge
    assert js.qrels("c") == {"q1": {"a": 3}}  # the machine is off until calibrated
    assert js.grades(U1, Q, "alice") == {"human": {"a": 3}, "machine": {"b": 3}}
    cal = {"rows": calibration(js.case_judgments("c"))}
    js.set_policy("c", CasePolicy("mean", k=5, machine=True, calibration=cal))
    assert js.qrels("c") == {"q1": {"a": 3, "b": 3}} and js.policy("c").k == 5
    assert js.qrels("c", "machine") == {"q1": {"b": 3}}
    assert "mean of human raters + machine" in js.policy("c").describe()


# ------------------------------------------------------------------ stale grades


def test_stale_grades_leave_metrics_and_judged_at_k(tmp_path):
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    old = make_trace("inv", "Refund for invoice INV-8842 was approved by the billing team.", days=3)
    ws.ingest([old, make_trace("billing", "Billing help: how to ask for a refund on any order.", days=10)])
    js = JudgmentStore(ws.uri)
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.set_grade(U1, Q, "inv", 3, rater="alice", content_hash=content_hash(old.content))
    js.set_grade(U1, Q, "billing", 1, rater="alice")  # no hash: freshness unknown, never stale
    from retrieval.judgments.snapshots import run_snapshot

    before = run_snapshot(ws, "c", PipelineConfig.for_preset("hybrid"), js, save=False)
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 was REJECTED after review.", days=3)])  # an edit
    after = run_snapshot(ws, "c", PipelineConfig.for_preset("hybrid"), js, save=False)
    assert before.qrels == {"q1": {"billing": 1, "inv": 3}} and after.qrels == {"q1": {"billing": 1}}
    assert after.metrics["judged@10"] < before.metrics["judged@10"]
    j = next(x for x in js.ratings(U1, Q) if x.trace_id == "inv")
    now_hash = content_hash(ws.store.get(["inv"])[0].content)
    assert j.stale(now_hash) and not j.stale(None)
    js.set_grade(U1, Q, "inv", 3, rater="alice", content_hash=now_hash)  # "keep": the grade holds for the new text
    assert run_snapshot(ws, "c", PipelineConfig.for_preset("hybrid"), js, save=False).qrels == before.qrels


def test_bulk_clear_by_rater_query_or_stale(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.add_judgments([rated("alice", "a", 3, content_hash="h1"), rated("bob", "a", 1, content_hash="h0"),
                      rated("alice", "b", 2, query="other query")])
    stale = [j for j in js.judgments() if j.stale({"a": "h1"}.get(j.trace_id))]
    assert js.clear_judgments(stale) == 1
    assert sorted((j.who, j.trace_id) for j in js.judgments()) == [("alice", "a"), ("alice", "b")]
    assert js.clear_judgments([j for j in js.judgments() if j.who == "alice" and j.query == Q]) == 1
    assert [(j.who, j.query) for j in js.judgments()] == [("alice", "other query")]


# ------------------------------------------------------------------ the blind queue


def snap(sid, label, lists, case="c"):
    qs = tuple(SnapshotQuery(q, q, U1, {s: tuple(ids) if s == "final" else () for s in STAGES},
                             {s: () for s in STAGES}) for q, ids in lists.items())
    return Snapshot(sid, case, 0.0, PipelineConfig.for_preset("hybrid"), qs, {}, label=label)


CASE = Case("c", (CaseQuery("q1", "q1", U1, note="needs the invoice"), CaseQuery("q2", "q2", U1)))
A = snap("s1", "dense heavy", {"q1": ["a", "b", "c"], "q2": ["x"]})
B = snap("s2", "bm25 only", {"q1": ["c", "d", "a"], "q2": ["y", "x"]})


def test_pooled_queue_is_the_union_of_top_k_blind_and_shuffled_per_rater():
    items = pooled_items(CASE, [A, B], k=2)
    assert [(i.qid, i.trace_id) for i in items] == [("q1", "a"), ("q1", "b"), ("q1", "c"), ("q1", "d"),
                                                    ("q2", "x"), ("q2", "y")]
    assert items[0].note == "needs the invoice"
    assert set(vars(items[0])) == {"qid", "query", "scope", "note", "trace_id"}  # nothing names a configuration
    qa, qb = judging_queue(CASE, [A, B], 2, "alice"), judging_queue(CASE, [B, A], 2, "alice")
    assert qa == qb and sorted(qa, key=items.index) == items  # same order for the same rater, same items
    orders = {tuple(i.trace_id for i in judging_queue(CASE, [A, B], 2, r)) for r in ("alice", "bob", "carol", "dan")}
    assert len(orders) > 1  # raters do not share one order
    with pytest.raises(ValueError, match="not 'c'"):
        pooled_items(CASE, [snap("s3", "x", {}, case="other")], 2)


def test_queue_progress_and_next_open():
    q = judging_queue(CASE, [A, B], 2, "alice")
    js = [Judgment(U1, "q1", "a", 2, rater="alice"), Judgment(U1, "q1", "b", CANT_RATE, rater="alice"),
          Judgment(U1, "q1", "a", 1, rater="bob", content_hash="old")]
    assert progress(q, js) == {"alice": 2, "bob": 1}
    assert progress(q, js, {"a": "new"}) == {"alice": 2}  # bob's grade went stale: to do again
    done = done_items(js, "alice")
    first = next_open(q, done)
    assert q[first].trace_id not in {"a", "b"} or q[first].qid != "q1"
    assert next_open(q, {i.key for i in q}) is None


# ------------------------------------------------------------------ ERR@k


def test_err_hand_computed():
    # R = (2^g - 1) / 8: a (3) stops 7/8, b (2) 3/8: ERR = 7/8 + (1/8)(3/8)/2
    assert err_at_k(["a", "b"], {"a": 3, "b": 2}) == pytest.approx(7 / 8 + 3 / 128)
    assert err_at_k(["x", "a"], {"a": 3}, k=1) == 0.0
    assert err_at_k(["a"], {"a": 1}, max_grade=1) == pytest.approx(0.5)
    assert evaluate({"q": ["a", "b"]}, {"q": {"a": 3, "b": 2}})["q"]["err@10"] == pytest.approx(7 / 8 + 3 / 128)


# ------------------------------------------------------------------ old tables, export and import


def test_old_judgments_table_loads_and_gains_the_new_columns(tmp_path):
    import lancedb
    import pyarrow as pa

    uri = str(tmp_path / "db")
    s, i, f = pa.string(), pa.int64(), pa.float64()
    old = pa.schema([("key", s), ("scope", s), ("query", s), ("query_key", s), ("trace_id", s), ("grade", i),
                     ("grader", s), ("source", s), ("updated_at", f)])
    tbl = lancedb.connect(uri).create_table("judgments", schema=old)
    tbl.add([{"key": "\x1f".join(["user:u1", Q.casefold(), "inv", "human"]), "scope": "user:u1", "query": Q,
              "query_key": Q.casefold(), "trace_id": "inv", "grade": 2, "grader": "human", "source": "inspect",
              "updated_at": 5.0}])
    js = JudgmentStore(uri)
    [j] = js.judgments()
    assert (j.who, j.content_hash, j.created_at, j.stale("anything")) == ("human", "", 5.0, False)
    assert js.grades(U1, Q, "human")["human"] == {"inv": 2}
    js.set_grade(U1, Q, "inv", 3, rater="human")  # the same row (old key), now with the new columns
    js.set_grade(U1, Q, "inv", 1, rater="alice", content_hash="h")
    again = JudgmentStore(uri)
    assert {j.who: j.grade for j in again.judgments()} == {"human": 3, "alice": 1}
    assert next(j for j in again.judgments() if j.who == "human").created_at == 5.0  # a re-grade keeps its birth


def test_export_and_import_keep_each_rater(tmp_path):
    js = JudgmentStore(str(tmp_path / "a"))
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments(TEAM + [rated("eve", "=cmd", 2)])
    trec = export_ratings(js, "c", "trec", rater="bob")
    assert trec == "q1 0 a 1\nq1 0 b 2\n"
    assert export_ratings(js, "c", "trec") == "q1 0 =cmd 2\nq1 0 a 2\nq1 0 b 1\n"  # combined by the policy (mean)
    lines = [json.loads(x) for x in export_ratings(js, "c", "jsonl").splitlines()]
    assert {r["rater"] for r in lines} == {"alice", "bob", "carol", "dan", "eve"}
    dan = next(r for r in lines if r["rater"] == "dan")
    assert (dan["grade"], dan["cant_rate"], dan["trace_id"]) == (None, True, "b")
    csv_text = export_ratings(js, "c", "csv")
    assert "'=cmd" in csv_text  # neutralised for a spreadsheet, and imported back as "=cmd"
    for fmt, name in (("jsonl", "r.jsonl"), ("csv", "r.csv")):
        other = JudgmentStore(str(tmp_path / fmt))
        other.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
        data = export_ratings(js, "c", fmt)
        rep = import_ratings(other, "c", data + ('{"qid": "nope"}\n' if fmt == "jsonl" else ""), name,
                             rename={"alice": "alice@example.com"})
        assert set(rep.raters) == {"alice@example.com", "bob", "carol", "dan", "eve"}
        assert len(rep.errors) == (1 if fmt == "jsonl" else 0)
        assert sorted((j.who, j.trace_id, j.grade) for j in other.judgments()) == sorted(
            ({"alice": "alice@example.com"}.get(j.who, j.who), j.trace_id, j.grade) for j in js.judgments())
        assert other.qrels("c") == js.qrels("c")


def test_combined_grades_ignore_stale_and_cant_rate():
    js = [rated("alice", "a", 3, content_hash="h1"), rated("bob", "a", 1), rated("bob", "b", CANT_RATE)]
    assert combined_grades(js, CasePolicy()) == {("user:u1", Q.casefold(), "a"): 2}
    assert combined_grades(js, CasePolicy(), {"a": "h2"}) == {("user:u1", Q.casefold(), "a"): 1}


# ------------------------------------------------------------------ the command line


def test_cli_judge_export_import_agreement_policy(tmp_path, capsys):
    from retrieval.cli.main import main

    db = str(tmp_path / "db")
    js = JudgmentStore(db)
    js.save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    js.add_judgments(TEAM)
    out = tmp_path / "bob.qrels"
    assert main(["judge", "export", "c", "--format", "trec", "--rater", "bob", "--out", str(out), "--db", db]) == 0
    assert out.read_text() == "q1 0 a 1\nq1 0 b 2\n"
    assert json.loads(capsys.readouterr().out)["lines"] == 2
    assert main(["judge", "agreement", "c", "--db", db]) == 0
    agg = json.loads(capsys.readouterr().out)
    assert agg["raters"] == ["alice", "bob", "carol"] and len(agg["pairs"]) == 3 and agg["policy"]["combine"] == "mean"
    assert main(["judge", "policy", "c", "--combine", "rater", "--rater", "alice", "--k", "5", "--db", db]) == 0
    assert json.loads(capsys.readouterr().out)["describe"] == "grades of rater alice only"
    assert js.qrels("c") == {"q1": {"a": 3, "b": 0}} and js.policy("c").k == 5
    assert main(["judge", "policy", "c", "--machine", "--db", db]) == 2
    assert "nothing to calibrate it against" in capsys.readouterr().err
    every = tmp_path / "all.jsonl"
    assert main(["judge", "export", "c", "--out", str(every), "--db", db]) == 0
    other = str(tmp_path / "other")
    JudgmentStore(other).save_case(Case("c", (CaseQuery("q1", Q, U1),)))
    capsys.readouterr()
    assert main(["judge", "import", "c", str(every), "--rename", "bob=bob@example.com", "--no-id-check",
                 "--db", other]) == 0
    assert json.loads(capsys.readouterr().out)["raters"] == ["alice", "bob@example.com", "carol", "dan"]
    assert main(["judge", "import", "c", str(every), "--rename", "bob", "--db", other]) == 2
    assert "is not OLD=NEW" in capsys.readouterr().err


def test_snapshot_diff_carries_rank_biased_overlap():
    from retrieval.metrics import rank_biased_overlap
    from retrieval.judgments.diff import diff_snapshots

    d = diff_snapshots(A, B, {"q1": {"a": 3}})
    by = {q.qid: q.rbo for q in d.queries}
    assert by == {"q1": pytest.approx(rank_biased_overlap(["a", "b", "c"], ["c", "d", "a"])),
                  "q2": pytest.approx(rank_biased_overlap(["x"], ["y", "x"]))}
    assert d.to_dict()["rbo"] == pytest.approx(sum(by.values()) / 2)
