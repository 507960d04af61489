"""Fact injection: only facts whose source trace is active and in scope are injected (SPEC §12)."""
from __future__ import annotations

from datetime import datetime, timedelta, UTC

import pytest

from retrieval.facts import Fact, FactStore, fact_traces_for_query, visible_in
from retrieval.models import HashingEmbedder

from conftest import NOW, U1, U2, make_trace

T0 = datetime(2025, 1, 1, tzinfo=UTC)
NOW_Q = "where do I live now?"
FIRST_Q = "where did I live first?"


@pytest.fixture
def facts(tmp_path) -> FactStore:
    fs = FactStore(str(tmp_path / "facts"))
    fs.upsert(U1, [Fact("I", "livesIn", "Lisbon", T0, ("a",), "I live in Lisbon."),
                   Fact("I", "livesIn", "Porto", T0 + timedelta(days=200), ("b",), "I moved to Porto."),
                   Fact("I", "worksAt", "Brisa", T0 + timedelta(days=10), ("c", "d"), "I work at Brisa.")])
    return fs


def objects(out) -> list[str]:
    found, traces = out
    assert [t.content.split()[2] for t in traces] == [f.object for f in found]  # aligned, index for index
    return [f.object for f in found]


class Visible:
    """A fake `visible(ids)`: answers from a fixed set and records what it was asked."""

    def __init__(self, shown):
        self.shown, self.calls = set(shown), []

    def __call__(self, ids):
        self.calls.append(list(ids))
        return self.shown & set(ids)


def test_without_visible_every_fact_is_a_candidate(facts):
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject")) == ["Porto"]
    assert objects(fact_traces_for_query(facts, None, FIRST_Q, U1, "subject")) == ["Lisbon", "Brisa", "Porto"]
    assert objects(fact_traces_for_query(facts, None, FIRST_Q, U1, "predicates")) == ["Lisbon", "Porto"]


def test_a_hidden_source_hides_its_fact_and_the_older_visible_fact_answers(facts):
    vis = Visible({"a", "d"})
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject", visible=vis)) == ["Lisbon"]
    assert vis.calls == [["a", "b", "c", "d"]]  # asked once, for every candidate's sources
    # One visible source of several is enough (Brisa: c hidden, d visible).
    assert objects(fact_traces_for_query(facts, None, FIRST_Q, U1, "subject", visible=vis)) == ["Lisbon", "Brisa"]
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject", visible=Visible(set()))) == []


def test_a_fact_with_no_source_stays_injectable(facts):
    facts.upsert(U2, [Fact("I", "livesIn", "Rome", T0, (), "")])
    vis = Visible(set())
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U2, "subject", visible=vis)) == ["Rome"]
    assert vis.calls == []  # nothing to ask about


def test_no_scope_and_a_bad_mode(facts):
    assert fact_traces_for_query(facts, None, NOW_Q, None, visible=Visible({"a"})) == ([], [])
    with pytest.raises(ValueError, match="temporal_mode 'latest' is not one of subject, predicates"):
        fact_traces_for_query(facts, None, NOW_Q, U1, "latest")


def test_two_facts_of_one_instant_both_stay_in_history_and_the_later_is_latest(tmp_path):
    fs = FactStore(str(tmp_path / "facts"))
    note = "I live in Paris. I moved to Amsterdam."
    fs.upsert(U1, [Fact("I", "livesIn", "Paris", T0, ("n",), note), Fact("I", "livesIn", "Amsterdam", T0, ("n",),
                                                                         note)])
    assert objects(fact_traces_for_query(fs, None, NOW_Q, U1, "predicates")) == ["Amsterdam"]
    fs.upsert(U1, [Fact("I", "livesIn", "Paris", T0, ("m",), "I live in Paris.")])  # restated later, elsewhere
    assert objects(fact_traces_for_query(fs, None, NOW_Q, U1, "predicates")) == ["Paris"]
    found, traces = fact_traces_for_query(fs, None, FIRST_Q, U1, "predicates")
    assert [(f.object, f.source_trace_ids) for f in found] == [("Paris", ("n",)), ("Amsterdam", ("n",))]
    assert [t.id for t in traces] == ["fact-graph:user:livesIn:1735689600000",
                                      "fact-graph:user:livesIn:1735689600000#2"]


def test_with_a_real_store_inactive_deleted_and_other_scope_sources_are_not_injected(store, facts):
    store.add([make_trace("a", "I live in Lisbon."), make_trace("b", "I moved to Porto."),
               make_trace("c", "I work at Brisa.", "u2"), make_trace("d", "Brisa again.")])
    vis = visible_in(store, U1)
    assert vis(["a", "b", "c", "d", "zz"]) == {"a", "b", "d"}  # c is u2's, zz does not exist
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject", visible=vis)) == ["Porto"]
    store.set_active(["b"], False)
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject", visible=vis)) == ["Lisbon"]
    store.delete(["a"])
    assert objects(fact_traces_for_query(facts, None, NOW_Q, U1, "subject", visible=vis)) == []
    store.set_active(["d"], False)
    assert objects(fact_traces_for_query(facts, None, FIRST_Q, U1, "subject", visible=vis)) == []
    store.set_active(["b"], True)
    assert objects(fact_traces_for_query(facts, None, FIRST_Q, U1, "subject", visible=vis)) == ["Porto"]


def test_the_pipeline_never_injects_a_fact_of_an_inactive_or_deleted_trace(tmp_path):
    from retrieval.workspace.core import Workspace

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace("a", "I live in Lisbon.", days=30), make_trace("b", "I moved to Porto.", days=5),
               make_trace("c", "Where to live is a question of light.", days=1)])

    def facts():
        res = ws.retriever().retrieve(NOW_Q, scope=U1)
        assert len(res.traces) >= 1
        return [t.content for t in res.traces if t.trace.source_type == "fact_graph"]

    assert facts() == ["user livesIn Porto (as of 2026-02-24)."]
    ws.set_active(["b"], False)
    assert facts() == ["user livesIn Lisbon (as of 2026-01-30)."]
    ws.delete(["a"])
    assert facts() == []
