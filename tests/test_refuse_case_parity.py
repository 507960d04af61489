"""The browser's case-wide metric (ui/refuse/case.mjs, run in node) equals the library's (issue 35, item 3).

Random cases — 1 to 12 queries each, random records as tests/test_refuse_parity.py makes them (ties, an empty side,
one candidate, huge and tiny scores, facts, a reranker), graded and ungraded queries, a query whose search failed,
grades on ids no list holds, fact-graph traces credited to a source already ranked, ids such as "constructor" and
"__proto__" — are scored by `retrieval.judgments.live.case_scores` over `assemble`'s final lists and, from
`case_payload`, by the JS twin re-fusing every query; the mean nDCG@10 and recall@10 and every query's own must agree
to 1e-9, for every registered strategy.
"""
from __future__ import annotations

import json
import random
import subprocess

import pytest

from retrieval.judgments.live import case_payload, case_scores
from retrieval.judgments.model import Case, CaseQuery
from retrieval.pipeline.assemble import assemble
from test_refuse_parity import NODE, ROOT, random_record, random_settings

CASES = 400
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the parity test runs the JS in node)")
ODD = ("constructor", "__proto__", "toString")


def random_grades(rng: random.Random, ids: list[str]) -> dict[str, float]:
    if rng.random() < 0.2:
        return {}  # an ungraded query: not in the mean
    pool = ids + ["never-ranked", *ODD]
    picked = rng.sample(pool, rng.randint(1, min(len(pool), 8)))
    return {i: float(rng.choice([0, 0, 1, 2, 3])) for i in picked}


def random_case(rng: random.Random, fusion: str):
    s, learned = random_settings(rng, fusion)
    n = rng.randint(1, 12)
    case = Case("c", tuple(CaseQuery(f"q{j}", f"query {j}") for j in range(n)))
    searched, qrels, credit = {}, {}, {}
    for q in case.queries:
        rec = random_record(rng, ODD if rng.random() < 0.3 else ())
        result = assemble(rec, s, learned)
        ids = sorted({i for lst in rec.sparse_lists for i, _ in lst} | {t.id for lst in rec.dense_lists for t in lst})
        searched[q.qid] = "RuntimeError: the store went away" if rng.random() < 0.05 else (None, result)
        qrels[q.qid] = random_grades(rng, ids)
        facts = [t.id for t in rec.fact_traces]
        credit[q.qid] = {f: rng.choice(ids) for f in facts if ids and rng.random() < 0.7}
    return case, searched, qrels, credit, s


def check(fusion: str, seed: int) -> None:
    rng = random.Random(seed)
    cases, expected = [], []
    for _ in range(CASES):
        case, searched, qrels, credit, s = random_case(rng, fusion)
        payload = case_payload(case, searched, qrels)
        for q in payload["queries"]:
            q["credit"] = credit[q["qid"]]  # random records carry no facts' sources: credit as a fact graph would
        finals = {qid: list(got[1].diagnostics.stage_ids["final"]) for qid, got in searched.items()
                  if isinstance(got, tuple)}
        expected.append(case_scores(finals, qrels, credit))
        k = s.fusion_defaults()  # the one setting every query was assembled under
        setting = {"fusion": fusion, "normalization": k["normalization"], "dense_weight": k["dense_weight"],
                   "sparse_weight": k["sparse_weight"], "rrf_k": k["rrf_k"], "rerank_weight": s.rerank_weight,
                   "recall_top_k": s.recall_top_k}
        cases.append({"queries": payload["queries"], "setting": setting, "k": 10})
    out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "refuse_case_parity.mjs")], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(out.stdout)
    graded = 0
    for n, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have["judged"] == want["judged"], n
        assert set(have["queries"]) == set(want["queries"]), n
        for m in ("ndcg", "recall"):
            assert abs(have[m] - want[m]) <= 1e-9, (fusion, n, m, have[m], want[m])
            for qid, v in want["queries"].items():
                assert abs(have["queries"][qid][m] - v[m]) <= 1e-9, (fusion, n, qid, m)
        graded += want["judged"]
    assert graded > CASES  # the cases were graded (the comparison is not over empty means)
    assert len({round(w["ndcg"], 6) for w in expected}) > CASES // 4  # and their metrics vary


@pytest.mark.parametrize("fusion", ["rrf", "convex", "dbsf"])
def test_the_browsers_case_mean_equals_the_librarys(fusion):
    check(fusion, seed={"rrf": 11, "convex": 12, "dbsf": 13}[fusion])


def test_case_scores_by_hand():
    """Two graded queries and one ungraded; a fact credited to a ranked source counts once."""
    finals = {"a": ["x", "fact:1", "y"], "b": ["z"], "c": ["x"]}
    qrels = {"a": {"x": 2.0, "y": 1.0}, "b": {"w": 3.0}, "c": {}}
    got = case_scores(finals, qrels, {"a": {"fact:1": "x"}})
    # a: credited [x, y] is the ideal order: nDCG 1, recall 1; b: nothing relevant found: 0, 0.
    assert got == {"ndcg": 0.5, "recall": 0.5, "judged": 2,
                   "queries": {"a": {"ndcg": 1.0, "recall": 1.0}, "b": {"ndcg": 0.0, "recall": 0.0}}}
