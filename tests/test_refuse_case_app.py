"""The live panel's case mode on the server (issue 35, item 3): the case searched once, its numbers the library's.

On the demo store, `case_payload`'s saved numbers are exactly what a snapshot of the same configuration reports
(nDCG@10 and recall@10, fact-graph traces credited alike); on Inspect, choosing a case sends every query's record with
the case's grades, and a new fusion setting re-fuses the held queries instead of searching them again.
"""
from __future__ import annotations

import pytest

from apphelpers import demo_app_env, open_page

TIMEOUT = 120
PARAMS = {"i_q": "status of ticket FX-209847", "i_scope": "user:priya"}


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "refuse_case")


def test_the_saved_case_metric_is_the_snapshots(demo_env):
    from retrieval.judgments.live import case_payload, search_case
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.judgments.store import JudgmentStore
    from retrieval.models import HashingEmbedder
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace import Workspace

    ws, js = Workspace(demo_env, embedder=HashingEmbedder(384)), JudgmentStore(demo_env)
    case, cfg = js.case("demo"), PipelineConfig().with_(dense_weight=0.3, sparse_weight=0.7)
    searched = search_case(ws, case, cfg)
    payload = case_payload(case, searched, js.qrels(case))
    snap = run_snapshot(ws, case, cfg, js, save=False)
    assert payload["saved"]["judged"] == snap.judged_queries == len(case.queries) == 45
    assert abs(payload["saved"]["ndcg"] - snap.metrics["ndcg@10"]) <= 1e-12
    assert abs(payload["saved"]["recall"] - snap.metrics["recall@10"]) <= 1e-12
    assert any(q["credit"] for q in payload["queries"])  # fact-graph traces are credited to their source
    by_qid = {q.qid: q for q in snap.queries}
    for q in payload["queries"]:  # each query's own number too
        assert abs(payload["saved"]["queries"][q["qid"]]["ndcg"] - by_qid[q["qid"]].metrics["ndcg@10"]) <= 1e-12


def test_choosing_a_case_sends_every_query_once_and_a_new_weight_refuses_them(demo_env):
    at = open_page("pages/2_Inspect.py", TIMEOUT, **PARAMS)
    assert not at.exception
    assert "i_live_case_payload" not in at.session_state  # off until a case is chosen: no search of 45 queries
    pick = at.selectbox(key="i_live_case")
    assert pick.options[0].startswith("off") and "case demo" in pick.options
    pick.set_value("demo").run()
    assert not at.exception
    data = at.session_state["i_live_case_payload"]
    assert data["case"] == "demo" and len(data["queries"]) == 45 and data["saved"]["judged"] == 45
    assert all(q["record"]["server_final"] and q["grades"] and not q["error"] for q in data["queries"])
    held = at.session_state["i_live_case_held"][1]
    assert not any("refusion" in r.diagnostics.timings_ms for _, r in held.values())  # searched
    at.slider(key="i_dense_weight").set_value(0.2).run()
    assert not at.exception
    again = at.session_state["i_live_case_payload"]
    assert {q["record"]["setting"]["dense_weight"] for q in again["queries"]} == {0.2}
    held = at.session_state["i_live_case_held"][1]
    assert all("refusion" in r.diagnostics.timings_ms for _, r in held.values())  # re-fused, not searched
    assert again["saved"]["ndcg"] != data["saved"]["ndcg"]


def test_a_case_query_opened_from_the_panel_becomes_the_pages_query():
    from ui.refuse import opened

    state: dict = {"i_refuse": {"open": {"query": "DRV-517", "scope": "user:maya"}}, "i_typed": "some-id"}
    opened("i_", "i_refuse", "i_typed", state)
    assert (state["i_q"], state["i_scope"], state["i_typed"]) == ("DRV-517", "user:maya", "")
    anywhere: dict = {"i_refuse": {"open": {"query": "q", "scope": ""}}}
    opened("i_", "i_refuse", "i_typed", anywhere)
    assert anywhere["i_scope"] == "(all scopes)"
    bad: dict = {"i_refuse": {"open": {"query": "  "}}}
    opened("i_", "i_refuse", "i_typed", bad)
    assert "i_q" not in bad
