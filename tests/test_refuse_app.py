"""The live tuning panel's server side (ui/refuse.py) in AppTest: what it sends and what it takes back.

The panel gets the search's record once, with the server's own final list (the browser checks itself against it) and
the query's grades; a setting the browser commits lands in the sidebar's widget state (so the search re-fuses and the
link follows), checked by the library's rules; a panel that cannot be built leaves a warning and the server's table.
"""
from __future__ import annotations

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.fusion import FUSIONS

TIMEOUT = 60
PARAMS = {"i_q": "status of ticket FX-209847", "i_scope": "user:priya"}


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "refuse_app")


def test_the_panel_gets_the_record_once_with_the_servers_final_list(demo_env):
    at = open_page("pages/2_Inspect.py", TIMEOUT, **PARAMS)
    assert not at.exception
    payload = at.session_state["i_refuse_payload"][1]
    d = at.session_state["i_result"][1].diagnostics
    assert [i for i, _ in payload["server_final"]] == list(d.stage_ids["final"])
    assert payload["setting"]["fusion"] == "convex" and payload["setting"]["normalization"] == "theoretical"
    assert [s["name"] for s in payload["strategies"]] == list(FUSIONS)  # the registry, dbsf included
    assert payload["texts"]["priya-lens-repair"].startswith("The 56mm lens focus motor")
    assert [r["term"] for r in payload["dense_terms"]["priya-lens-repair"]][:2] == ["strength", "similarity"]
    assert payload["bm25_terms"]["priya-lens-repair"]  # its BM25 terms, for an explanation without a round trip


def test_a_committed_setting_lands_in_the_sidebar_and_a_bad_one_is_refused():
    from ui.refuse import commit

    state: dict = {"i_refuse": {"commit": {"dense_weight": 0.25, "sparse_weight": 0.75, "rrf_k": 30,
                                           "fusion": "rrf", "normalization": "minmax", "recall_top_k": 10,
                                           "rerank_weight": 0.3}}}
    commit("i_", "i_refuse", state)
    assert (state["i_dense_weight"], state["i_sparse_weight"], state["i_fusion"], state["i_rrf_k"]) == \
        (0.25, 0.75, "rrf", 30)
    bad: dict = {"i_refuse": {"commit": {"dense_weight": 7.0, "fusion": "convex"}}}
    commit("i_", "i_refuse", bad)
    assert "i_dense_weight" not in bad and "i_fusion" not in bad
    assert bad["i_refuse_note"].startswith("The live panel sent a setting the server refused: dense_weight=7.0")


@pytest.mark.parametrize("fusion", FUSIONS)
def test_the_write_back_is_generated_from_the_payloads_declared_knobs(fusion):
    """Every knob the browser's setting holds (one declaration: `SETTING_KNOBS`, from the registered strategies'
    parameters) lands in the sidebar's widget of that name, a whole-step slider's value as an int; nothing else."""
    from retrieval.fusion import get_strategy
    from retrieval.pipeline.browser import SETTING_KNOBS, browser_setting, controls
    from retrieval.pipeline.settings import FUSION_PARAMS, RetrievalSettings
    from ui.refuse import commit

    sent = browser_setting(RetrievalSettings(fusion=get_strategy(fusion).from_knobs({"dense_weight": 0.35})))
    assert set(sent) == set(SETTING_KNOBS) >= set(FUSION_PARAMS)
    state: dict = {"i_refuse": {"commit": {**sent, "at": "1-1", "not_a_knob": 3}}}
    commit("i_", "i_refuse", state)
    assert {k: v for k, v in state.items() if k not in ("i_refuse", "i_refuse_applied")} == \
        {f"i_{k}": v for k, v in sent.items()}
    assert state["i_refuse_applied"] == "1-1" and state["i_dense_weight"] == 0.35
    for name, control in controls().items():
        assert isinstance(state[f"i_{name}"], int) == (control["kind"] == "int"), name
    assert type(state["i_rrf_k"]) is int


def test_a_panel_that_cannot_be_built_says_so_and_the_servers_table_stays(demo_env, monkeypatch):
    from ui import refuse

    monkeypatch.setattr(refuse, "_MOUNT", None)
    monkeypatch.setattr(refuse, "_ERROR", "RuntimeError: no components here")
    at = open_page("pages/2_Inspect.py", TIMEOUT, **PARAMS)
    assert not at.exception
    assert any("live tuning panel could not be built" in w.value for w in at.warning)
    assert any("class='rt-stages'" in h.value for h in at.get("html"))


def test_homes_traces_per_scope_come_largest_first_with_the_rest_on_one_row():
    from ui.refuse import scope_rows

    assert scope_rows({"b": 3, "a": 3, "c": 9}) == [("c", 9), ("a", 3), ("b", 3)]  # ties by name
    assert scope_rows({"a": 5, "b": 4, "c": 2, "d": 1}, top=2) == [("a", 5), ("b", 4), ("2 more scopes", 3)]
    assert scope_rows({"a": 5, "b": 4, "c": 2}, top=2)[-1] == ("1 more scope", 2)


def test_home_draws_its_scope_table_with_the_panels_component_or_a_plain_table(demo_env, monkeypatch):
    """Home's traces per scope are the live panel's component (so Inspect's live rows draw at once after an
    example, docs/BENCHMARKS.md); without the component, a plain table says the same."""
    from ui import refuse

    sent: list[dict] = []
    real = refuse._MOUNT
    monkeypatch.setattr(refuse, "_MOUNT", lambda **kw: sent.append(kw) or real(**kw))
    at = open_page("app.py", TIMEOUT)
    assert not at.exception
    (home,) = [kw for kw in sent if kw["key"] == "home_scopes"]
    assert home["data"] == {"mode": "scopes", "rows": [("user:maya", 113), ("user:tomas", 98), ("user:priya", 83)]}
    monkeypatch.setattr(refuse, "_MOUNT", None)
    at = open_page("app.py", TIMEOUT)
    assert not at.exception
    assert [list(r) for r in at.table[-1].value.itertuples(index=False)] == [["user:maya", 113], ["user:tomas", 98],
                                                                             ["user:priya", 83]]


def test_a_click_while_a_commit_is_pending_applies_that_commit_again():
    """The click's request carries the sidebar's value from before the commit (the browser had not drawn the
    commit's run): naming the commit as pending re-applies it; a stale or absent `pending` changes no setting."""
    from ui.refuse import explained

    commit_ = {"dense_weight": 0.4, "sparse_weight": 0.5, "fusion": "convex", "at": "9-2"}
    state: dict = {"i_refuse": {"commit": commit_, "explain": {"id": "t1", "pending": "9-2", "at": "9-5"}},
                   "i_dense_weight": 0.5}
    explained("i_", "i_refuse", "i_typed", state)
    assert (state["i_dense_weight"], state["i_typed"], state["i_refuse_applied"]) == (0.4, "t1", "9-2")
    assert state["i_refuse_explained"] == "9-5"  # sent back: the browser knows which of its clicks has landed
    for pending in (None, "9-1"):  # nothing pending, or an older commit than the one held: the sidebar stands
        other: dict = {"i_refuse": {"commit": commit_, "explain": {"id": "t2", "pending": pending}},
                       "i_dense_weight": 0.7}
        explained("i_", "i_refuse", "i_typed", other)
        assert (other["i_dense_weight"], other["i_typed"]) == (0.7, "t2")
    legacy: dict = {"i_refuse": {"explain": "t3"}}  # a plain id still explains
    explained("i_", "i_refuse", "i_typed", legacy)
    assert legacy["i_typed"] == "t3"
