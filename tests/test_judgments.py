"""Judgments, cases and snapshots: validation, parsers, the LanceDB tables, metrics, diffs, machine grades."""
from __future__ import annotations

import math
import random
import string

import pytest
from conftest import NOW, U1, U2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.pipeline.config import PipelineConfig
from retrieval import metrics as hand
from retrieval.judgments import Case, CaseQuery, Judgment, JudgmentStore, SnapshotQuery, check_case_name, check_grade
from retrieval.judgments.diff import Move, diff_snapshots, paired_p_value
from retrieval.judgments.io import export_case, import_case, import_files, parse_jsonl, parse_qrels, parse_queries
from retrieval.judgments.machine import (agreement, cohen_kappa, grade_prompt, grader_label, machine_grade,
                                         parse_grade)
from retrieval.metrics import evaluate, mean_metrics
from retrieval.judgments.model import Snapshot
from retrieval.judgments.snapshots import run_snapshot
from retrieval.pipeline.records import STAGES

# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("name", ["demo", "demo-v2", "a", "Q1_2026.b", "x" * 64])
def test_good_case_names_pass(name):
    assert check_case_name(name) == name


@pytest.mark.parametrize("name, why", [("my case", r"odd characters \(' '\)"), ("a/b;c", r"odd characters \('/;'\)"),
                                       ("-x", "starts with"), ("x" * 65, "too long"), ("", "empty"),
                                       ("caf\u00e9", "odd characters")])
def test_odd_case_names_name_the_problem_and_the_fix(name, why):
    with pytest.raises(ValueError, match=why) as exc:
        check_case_name(name)
    assert "letters, digits" in str(exc.value) and "e.g. 'demo-v2'" in str(exc.value)


@given(st.text(min_size=1, max_size=70))
def test_case_names_accepted_exactly_when_they_follow_the_rule(name):
    ok = (len(name) <= 64 and name[0] in string.ascii_letters + string.digits
          and all(c in string.ascii_letters + string.digits + "-_." for c in name))
    try:
        check_case_name(name)
        assert ok
    except ValueError:
        assert not ok


def test_grades_on_each_scale():
    assert [check_grade(g) for g in (0, 1, 2, 3, 2.0, "3")] == [0, 1, 2, 3, 2, 3]
    for bad in (4, -1, 1.5, "x", True, None, float("nan")):
        with pytest.raises(ValueError, match="outside the graded scale; use one of 0, 1, 2, 3"):
            check_grade(bad)
    with pytest.raises(ValueError, match="outside the binary scale; use one of 0, 1"):
        check_grade(2, "binary")
    with pytest.raises(ValueError, match="grading scale 'stars' is unknown; use one of graded, binary"):
        check_grade(1, "stars")


# ------------------------------------------------------------------ parsers

QRELS = ("query-id\tcorpus-id\tscore\n"
         "q1\td1\t2\n"
         "q1 0 d2 1\n"
         "q2\td3\n"            # line 4: two columns
         "q2 0 d4 7\n"         # line 5: grade outside the scale
         "\n# comment\n"
         "q2\td5\t0\n"
         "q3 Q0 d6 3 extra\n")  # line 9: five columns


def test_qrels_keep_good_lines_and_name_each_bad_one():
    qrels, errors = parse_qrels(QRELS, name="test.tsv")
    assert qrels == {"q1": {"d1": 2, "d2": 1}, "q2": {"d5": 0}}
    assert [(e.line, e.reason.split(";")[0]) for e in errors] == [
        (4, "has 2 column(s)"), (5, "grade '7' is outside the graded scale"), (9, "has 5 column(s)")]
    assert str(errors[0]).startswith("test.tsv line 4: has 2 column(s); expected TREC `qid 0 docid grade`")


ids = st.text(alphabet=string.ascii_letters + string.digits + "-_:.", min_size=1, max_size=12)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(ids, st.dictionaries(ids, st.integers(0, 3), min_size=1, max_size=5), max_size=6),
       st.sampled_from(["trec", "beir"]))
def test_qrels_round_trip_in_both_formats(qrels, fmt):
    if fmt == "trec":
        text = "".join(f"{q} 0 {d} {g}\n" for q, r in qrels.items() for d, g in r.items())
    else:
        text = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, r in qrels.items()
                                                         for d, g in r.items())
    assert parse_qrels(text.encode()) == (qrels, [])


@given(st.text(max_size=300))
def test_qrels_parser_never_raises_on_garbage(text):
    qrels, errors = parse_qrels(text)
    assert all(0 <= g <= 3 for r in qrels.values() for g in r.values())
    assert all(e.line >= 1 for e in errors)


def test_queries_and_jsonl_parsers_report_bad_lines():
    texts, errs = parse_queries(b'{"_id": "q1", "text": "refund"}\nnot json\n{"_id": 2, "text": "  flight "}\n'
                                b'{"_id": "q3"}\n')
    assert texts == {"q1": "refund", "2": "flight"} and [e.line for e in errs] == [2, 4]
    qs, qr, errs = parse_jsonl('{"qid": "a", "query": "refund", "scope": "user:u1", "relevant": {"inv": 2}}\n'
                               '{"qid": "b", "query": "x", "relevant": {"inv": 5}}\n'
                               '{"qid": "c", "query": "hike", "relevant": {}, "note": "to grade"}\n')
    assert qs == [CaseQuery("a", "refund", U1), CaseQuery("c", "hike", None, "to grade")]
    assert qr == {"a": {"inv": 2}} and [e.line for e in errs] == [2]
    assert "grade 5 is outside the graded scale" in errs[0].reason
    with pytest.raises(ValueError, match="not UTF-8"):
        parse_queries(b"\xff\xfe\x00bad")


# ------------------------------------------------------------------ the store


def test_grades_persist_apart_by_grader_and_scope(tmp_path):
    uri = str(tmp_path / "db")
    js = JudgmentStore(uri)
    js.set_grade(U1, "Refund  for INV-8842", "inv", 3)
    js.set_grade(U1, "refund for inv-8842", "billing", 1)  # same query once whitespace and case are folded
    js.set_grade(U1, "refund for INV-8842", "inv", 1, grader="machine", source="fake")
    js.set_grade(U2, "refund for INV-8842", "other", 2)
    again = JudgmentStore(uri)  # a restart
    assert again.grades(U1, "refund for inv-8842") == {"human": {"inv": 3, "billing": 1}, "machine": {"inv": 1}}
    assert again.grades(U2, "refund for inv-8842") == {"human": {"other": 2}, "machine": {}}
    assert again.grades(None, "refund for inv-8842") == {"human": {}, "machine": {}}
    again.clear_grade(U1, "refund for inv-8842", "billing")
    assert JudgmentStore(uri).grades(U1, "refund for inv-8842")["human"] == {"inv": 3}
    with pytest.raises(ValueError, match="grade 9 is outside"):
        js.set_grade(U1, "q", "inv", 9)
    with pytest.raises(ValueError, match="grader 'robot' is unknown"):
        js.add_judgments([Judgment(U1, "q", "inv", 1, "robot")])


def test_cases_append_add_and_replace(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c1", (CaseQuery("a", "refund", U1), CaseQuery("b", "hike", U1))))
    js.save_case(Case("c1", (CaseQuery("a", "refund", U1), CaseQuery("z", "lisbon", U1))))  # appends z only
    js.add_to_case("c1", "  flight to Madrid ", U1)
    js.add_to_case("c1", "hike", U1)  # already there: kept once
    c = js.case("c1")
    assert [q.query for q in c.queries] == ["refund", "hike", "lisbon", "flight to Madrid"]
    assert [q.qid for q in c.queries][:3] == ["a", "b", "z"] and c.queries[3].qid.startswith("q-")
    js.save_case(Case("c1", (CaseQuery("n", "recipe", None),)), replace=True)
    assert [q.qid for q in js.case("c1").queries] == ["n"]
    js.set_grade(None, "recipe", "recipe", 2)
    assert js.cases() == [{"case": "c1", "queries": 1, "judged_queries": 1, "scale": "graded", "snapshots": 0,
                           "note": ""}]
    with pytest.raises(ValueError, match=r"no case named 'nope' .* known: c1"):
        js.case("nope")
    with pytest.raises(ValueError, match="odd characters"):
        js.add_to_case("bad name", "q", U1)


def test_import_lists_unknown_ids_and_queries_and_keeps_the_rest(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    qrels, errors = parse_qrels("q1 0 inv 2\nq1 0 ghost 1\nq9 0 inv 1\nq2 0 hike 1\nbad line\n")
    rep = import_case(js, "c", [CaseQuery("q1", "refund", U1), CaseQuery("q2", "hike", U1),
                                CaseQuery("q3", "never judged", U1)], qrels,
                      known_ids=lambda ids: [i for i in ids if i != "ghost"], errors=errors)
    assert (rep.queries, rep.judgments, rep.unknown_ids, rep.unknown_queries) == (2, 2, ("ghost",), ("q9",))
    assert [str(e) for e in rep.errors] == ["qrels line 5: has 2 column(s); expected TREC `qid 0 docid grade` "
                                            "or BEIR `query-id<TAB>corpus-id<TAB>score`"]
    assert js.qrels("c") == {"q1": {"inv": 2}, "q2": {"hike": 1}}
    with pytest.raises(ValueError, match="nothing to import"):
        import_case(js, "d", [CaseQuery("x", "y", U1)], {"q1": {"inv": 1}})


def test_export_then_import_round_trips(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", "refund", U1, "a note"), CaseQuery("q2", "hike", U1))))
    js.add_judgments([Judgment(U1, "refund", "inv", 2), Judgment(U1, "refund", "billing", 0),
                      Judgment(U1, "hike", "hike", 3), Judgment(U1, "hike", "x", 1, "machine")])
    paths = export_case(js, "c", tmp_path / "out")
    assert [p.name for p in paths] == ["queries.jsonl", "test.tsv", "qrels.trec", "c.jsonl"]
    assert paths[2].read_text() == "q1 0 billing 0\nq1 0 inv 2\nq2 0 hike 3\n"  # human grades only
    other = JudgmentStore(str(tmp_path / "db2"))
    import_files(other, "from-jsonl", jsonl=paths[3])
    import_files(other, "from-beir", queries=paths[0], qrels=paths[1], scope=U1)
    import_files(other, "from-trec", queries=paths[0], qrels=paths[2], scope=U1)
    for name in ("from-jsonl", "from-beir", "from-trec"):
        assert other.qrels(name) == js.qrels("c")
        assert [(q.qid, q.query, q.scope) for q in other.case(name).queries] == [("q1", "refund", U1),
                                                                                 ("q2", "hike", U1)]
    assert other.case("from-jsonl").queries[0].note == "a note"


# ------------------------------------------------------------------ metrics


def test_metrics_golden_values():
    qrels = {"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"z": 1}, "q3": {"a": 1}}
    got = evaluate({"q1": ["x", "a", "b", "c"], "q2": ["y"], "q3": [], "q4": ["a"]}, qrels, k=10)
    idcg = 2 + 1 / math.log2(3)
    assert set(got) == {"q1", "q2", "q3"}  # q4 has no judgment: not scored
    assert got["q1"]["ndcg@10"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(4)) / idcg)
    assert (got["q1"]["recall@10"], got["q1"]["mrr"], got["q1"]["p@10"], got["q1"]["judged@10"]) == \
        pytest.approx((1.0, 0.5, 0.2, 0.75))
    assert got["q2"] == got["q3"] == {"ndcg@10": 0, "recall@10": 0, "mrr": 0, "p@10": 0, "judged@10": 0,
                                      "err@10": 0}
    assert mean_metrics(got)["mrr"] == pytest.approx(0.5 / 3)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_ir_measures_agree_with_the_hand_computed_metrics(data):
    docs = [f"d{i}" for i in range(12)]
    ranked = data.draw(st.lists(st.sampled_from(docs), unique=True, max_size=12))
    qrels = data.draw(st.dictionaries(st.sampled_from(docs), st.integers(0, 3), min_size=1, max_size=8))
    k = data.draw(st.integers(1, 10))
    got = evaluate({"q": ranked}, {"q": qrels}, k=k)["q"]
    assert got[f"ndcg@{k}"] == pytest.approx(hand.ndcg_at_k(ranked, qrels, k), abs=1e-4)
    assert got[f"recall@{k}"] == pytest.approx(hand.recall_at_k(ranked, qrels, k), abs=1e-4)
    assert got["mrr"] == pytest.approx(hand.mrr(ranked, qrels), abs=1e-4)
    assert got[f"p@{k}"] == pytest.approx(sum(qrels.get(d, 0) > 0 for d in ranked[:k]) / k, abs=1e-4)
    shown = min(k, len(ranked))  # judged@k: share of what was retrieved in the top k
    assert got[f"judged@{k}"] == pytest.approx(sum(d in qrels for d in ranked[:k]) / shown if shown else 0, abs=1e-4)


def test_paired_p_value_matches_scipy_ttest_rel():
    from scipy.stats import ttest_rel

    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(2, 40)
        a = [rng.random() for _ in range(n)]
        b = [x + rng.gauss(0.05, 0.2) for x in a]
        assert paired_p_value(a, b) == pytest.approx(ttest_rel(b, a).pvalue, rel=1e-9)
    assert paired_p_value([0.5, 0.2], [0.5, 0.2]) == 1.0
    assert paired_p_value([0.1, 0.2, 0.3], [0.2, 0.3, 0.4]) == 0.0
    assert paired_p_value([0.1], [0.9]) is None


# ------------------------------------------------------------------ diff (hand-made snapshots)


def sq(qid, final, merged=None, dense=(), sparse=(), reranked=(), credit=None, query=None):
    ids = {"dense": tuple(dense), "sparse": tuple(sparse), "merged": tuple(merged if merged is not None else final),
           "reranked": tuple(reranked), "final": tuple(final)}
    return SnapshotQuery(qid, query or f"query {qid}", U1, ids, {s: (0.0,) * len(v) for s, v in ids.items()},
                         credit or {})


def snap(sid, queries, cfg=PipelineConfig()):
    return Snapshot(sid, "c", 0.0, cfg, tuple(queries), {})


QRELS_DIFF = {"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"y": 1}, "q3": {"v": 3}}
SNAP_A = snap("A", [sq("q1", "abxc", dense="abx", sparse="bc"), sq("q2", "yz", reranked="yz"),
                    sq("q3", ["fx", "w"], dense="vw", credit={"fx": "v"})])
SNAP_B = snap("B", [sq("q1", "bacx", dense="abx", sparse="bc"), sq("q2", "zy", merged="yz", reranked="zy"),
                    sq("q3", "wv", dense="vw"), sq("q4", "a")],
              PipelineConfig().with_(dense_weight=0.9, sparse_weight=0.1))


def test_diff_finds_the_stage_where_each_judged_trace_moved():
    d = diff_snapshots(SNAP_A, SNAP_B, QRELS_DIFF, k=3)
    by = {q.qid: q for q in d.queries}
    assert by["q1"].moved == (Move("a", 2, 1, 2, "merged", 1, 2), Move("b", 1, 2, 1, "merged", 2, 1),
                              Move("c", 0, 4, 3, "merged", 4, 3))
    assert (by["q1"].entered, by["q1"].left) == (("c",), ("x",))
    assert by["q2"].moved == (Move("y", 1, 1, 2, "reranked", 1, 2),)  # merged identical: moved by the reranker
    assert by["q3"].moved == (Move("v", 3, 1, 2, "merged", 1, 2),)  # the fact trace fx counts as its source v
    assert (by["q2"].a, by["q2"].b) == pytest.approx((1.0, 1 / math.log2(3)))
    assert [q.qid for q in d.queries] == ["q2", "q3", "q1"]  # worst delta first (q2 = q3 < q1, then by qid)
    assert (d.only_in_a, d.only_in_b) == ((), ("q4",))
    assert d.config_changes == {"dense_weight": (0.5, 0.9), "sparse_weight": (0.5, 0.1)}
    m = {x.metric: x for x in d.metrics}
    from scipy.stats import ttest_rel

    va, vb = [by[q].a for q in ("q1", "q2", "q3")], [by[q].b for q in ("q1", "q2", "q3")]
    assert m["ndcg@3"].delta == pytest.approx(sum(vb) / 3 - sum(va) / 3)
    assert d.p_value == m["ndcg@3"].p_value == pytest.approx(ttest_rel(vb, va).pvalue)
    assert m["mrr"].b == pytest.approx((1 + 0.5 + 0.5) / 3) and m["mrr"].n == 3
    out = d.to_dict()
    assert out["metrics"]["ndcg@3"]["delta"] == m["ndcg@3"].delta and out["queries"][0]["qid"] == "q2"


def test_diff_of_a_snapshot_with_itself_is_zero():
    d = diff_snapshots(SNAP_A, SNAP_A, QRELS_DIFF)
    assert all(m.delta == 0 and m.p_value == 1.0 for m in d.metrics)
    assert all(not q.moved and not q.entered and not q.left for q in d.queries)
    with pytest.raises(ValueError, match="metric 'map' is unknown"):
        diff_snapshots(SNAP_A, SNAP_A, QRELS_DIFF, metric="map")


# ------------------------------------------------------------------ snapshots over a real workspace


@pytest.fixture
def ws(tmp_path, traces):
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    w = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    w.ingest(traces)
    return w


def test_run_snapshot_keeps_every_stage_list_and_scores_with_human_grades(ws):
    js = JudgmentStore(ws.uri)
    js.save_case(Case("c", (CaseQuery("q1", "refund for invoice INV-8842", U1), CaseQuery("q2", "hiking the ridge", U1),
                            CaseQuery("q3", "nobody graded this", U1))))
    js.add_judgments([Judgment(U1, "refund for invoice INV-8842", "inv", 3),
                      Judgment(U1, "refund for invoice INV-8842", "billing", 1),
                      Judgment(U1, "hiking the ridge", "hike", 2),
                      Judgment(U1, "hiking the ridge", "recipe", 3, "machine")])  # machine: never in the metrics
    calls = []
    cfg = PipelineConfig.for_preset("hybrid")
    s = run_snapshot(ws, "c", cfg, js, progress=lambda d, t: calls.append((d, t)), label="base")
    assert calls == [(1, 3), (2, 3), (3, 3)]
    direct = ws.retriever().retrieve("refund for invoice INV-8842", scope=U1, recall_top_k=10, over_fetch_multiplier=3)
    stored = js.snapshot(s.id)
    assert {st_: list(ids) for st_, ids in stored.queries[0].stage_ids.items()} == \
        {st_: list(direct.diagnostics.stage_ids[st_]) for st_ in STAGES}
    assert stored.qrels == {"q1": {"billing": 1, "inv": 3}, "q2": {"hike": 2}}
    assert stored.judged_queries == 2 and stored.queries[2].metrics == {}
    expect = evaluate({q.qid: q.credited("final") for q in stored.queries}, stored.qrels)
    assert {q.qid: dict(q.metrics) for q in stored.queries[:2]} == expect
    assert stored.metrics == pytest.approx(mean_metrics(expect))
    assert stored.config == cfg and stored.label == "base" and stored.embedder == "hashing"
    s2 = run_snapshot(ws, "c", PipelineConfig.for_preset("hybrid", dense_weight=1.0, sparse_weight=0.0), js)
    assert [r["id"] for r in js.snapshot_rows("c")] == [s.id, s2.id]
    d = diff_snapshots(stored, js.snapshot(s2.id), js.qrels("c"))
    assert d.config_changes == {"dense_weight": (0.5, 1.0), "sparse_weight": (0.5, 0.0)}
    assert [m.n for m in d.metrics] == [2] * 6  # nDCG, R, MRR, P, judged and ERR at 10
    with pytest.raises(ValueError, match="no case named 'zz'"):
        run_snapshot(ws, "zz", cfg, js)


# ------------------------------------------------------------------ machine grading


@pytest.fixture(scope="module")
def server():
    from fake_llm_server import FakeServer

    with FakeServer() as s:
        yield s


def graded_setup(tmp_path):
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", "query q1", U1), CaseQuery("q2", "query q2", U1))))
    js.set_grade(U1, "query q1", "a", 3)  # a human grade: never machine-graded
    s = snap("S", [sq("q1", "abc"), sq("q2", "bd")])
    texts = {i: f"passage {i}" for i in "abc"}  # d is missing from the store
    return js, s, (lambda ids: {i: texts[i] for i in ids if i in texts})


@pytest.mark.parametrize("backend", ["openai", "cohere"])
def test_machine_grades_are_stored_apart_from_human_ones(tmp_path, server, backend):
    from retrieval.models.generators import CohereGenerator, OpenAICompatibleGenerator

    server.mode, server.chat_text = "ok", "2"
    gen = (OpenAICompatibleGenerator(server.url, "m", api_key="k") if backend == "openai"
           else CohereGenerator(api_key="k", base_url=server.url))
    js, s, texts = graded_setup(tmp_path)
    rep = machine_grade(js, s, gen, texts)
    assert (rep.graded, rep.skipped, rep.stopped) == (3, 1, None)
    assert rep.failures == (("q2", "d", "trace not in the store"),)
    assert js.grades(U1, "query q1") == {"human": {"a": 3}, "machine": {"b": 2, "c": 2}}
    assert js.qrels("c") == {"q1": {"a": 3}}  # metrics read human grades only
    body = server.requests[-3]["body"]
    prompt = (body.get("messages") or [{}])[-1].get("content")
    assert isinstance(prompt, str) and prompt.endswith("Query: query q1\nPassage: passage b\n\nScore (0/1/2/3):")
    again = machine_grade(js, s, gen, texts)  # everything graded: nothing asked
    assert (again.graded, again.skipped) == (0, 4)


def test_a_machine_grading_run_over_two_scopes_shows_each_visitor_their_count(tmp_path, server):
    from dataclasses import replace

    from retrieval.models.generators import OpenAICompatibleGenerator

    server.mode, server.chat_text = "ok", "2"
    js = JudgmentStore(str(tmp_path / "db"))
    js.save_case(Case("c", (CaseQuery("q1", "query q1", U1), CaseQuery("q2", "query q2", U2))))
    s = snap("S", [sq("q1", "ab"), replace(sq("q2", "c"), scope=U2)])
    rep = machine_grade(js, s, OpenAICompatibleGenerator(server.url, "m", api_key="k"),
                        lambda ids: {i: f"passage {i}" for i in ids})
    assert rep.graded == 3
    run = [e for e in js.audit.entries() if e.action == "grade"]
    assert [(e.traces, e.scopes) for e in run] == [(3, tuple(sorted((str(U1), str(U2)))))]
    assert [(e.traces, e.scopes) for e in js.audit.entries(scopes={str(U1)}) if e.action == "grade"] == [
        (2, (str(U1),))]
    assert [(e.traces, e.scopes) for e in js.audit.entries(scopes={str(U2)}) if e.action == "grade"] == [
        (1, (str(U2),))]


@pytest.mark.parametrize("mode, text, expect", [
    ("ok", "Relevant, I would say.", "holds no grade"), ("ok", "5", "holds no grade"),
])
def test_a_malformed_grade_is_recorded_and_grading_goes_on(tmp_path, server, mode, text, expect):
    from retrieval.models.generators import OpenAICompatibleGenerator

    server.mode, server.chat_text = mode, text
    js, s, texts = graded_setup(tmp_path)
    rep = machine_grade(js, s, OpenAICompatibleGenerator(server.url, "m", api_key="k"), texts)
    assert rep.graded == 0 and rep.stopped is None and len(rep.failures) == 4
    assert all(expect in f[2] for f in rep.failures[:3]) and rep.failures[3] == ("q2", "d", "trace not in the store")
    assert js.grades(U1, "query q1")["machine"] == {}


@pytest.mark.parametrize("mode, words", [("429", "429"), ("500", "500"), ("malformed", "JSON")])
def test_a_backend_error_stops_the_run_and_keeps_what_was_graded(tmp_path, server, mode, words):
    from retrieval.models.generators import OpenAICompatibleGenerator

    server.mode = mode
    js, s, texts = graded_setup(tmp_path)
    rep = machine_grade(js, s, OpenAICompatibleGenerator(server.url, "m", api_key="k"), texts)
    server.mode = "ok"
    assert rep.graded == 0 and rep.stopped is not None and words.lower() in rep.stopped.lower()
    assert "k" not in rep.stopped.split()  # the key is never echoed


def test_prompt_parse_kappa_and_the_weak_label():
    p = grade_prompt("where do I live?", "I live in Lisbon.", "binary")
    assert p.endswith("Query: where do I live?\nPassage: I live in Lisbon.\n\nScore (0/1):")
    assert [parse_grade(t) for t in ("2", " 3\n", "Score: 1", "##final score: 0")] == [2, 3, 1, 0]
    for bad in ("", "two", "7", "-1"):
        with pytest.raises(ValueError, match="holds no grade on the graded scale"):
            parse_grade(bad)
    assert cohen_kappa([0, 1, 2, 2, 3, 3], [0, 1, 2, 3, 3, 2]) == pytest.approx(14 / 26)
    assert cohen_kappa([1, 1], [1, 1]) == 1.0 and cohen_kappa([], []) is None
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    js = [Judgment(U1, "Q", "a", 2), Judgment(U1, "q", "a", 2, "machine"), Judgment(U1, "q", "b", 0),
          Judgment(U1, "q", "b", 1, "machine"), Judgment(U1, "q", "c", 3)]
    assert agreement(js) == {"n": 2, "kappa": pytest.approx(cohen_kappa([2, 0], [2, 1])), "agree": 1}
    from retrieval.models.generators import LocalGemmaGenerator

    assert "weak" in grader_label(LocalGemmaGenerator()) and grader_label(type("G", (), {"name": "x"})()) == "x"


def test_unicode_line_separators_inside_a_query_do_not_split_it():
    from retrieval.eval.datasets import beir_judgments
    from retrieval.judgments.io import parse_queries

    data = '{"_id": "1", "text": "a\u2028b"}\n{"_id": "2", "text": "c\u0085d"}\r\n'
    assert parse_queries(data) == ({"1": "a\u2028b", "2": "c\u0085d"}, [])
    got = beir_judgments(data.encode(), b"query-id\tcorpus-id\tscore\n1\tx\t1\n2\ty\t2\n", None)
    assert [(q.qid, q.query) for q in got] == [("1", "a\u2028b"), ("2", "c\u0085d")]
