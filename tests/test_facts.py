"""Fact graph: golden extraction, classifiers, FactStore persistence and scoping, pipeline wiring."""
from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, UTC

import pytest

from retrieval import BM25Index, HybridRetriever
from retrieval.facts import (PREDICATES, AgentOSFactClassifier, Fact, FactStore, KeywordFactClassifier,
                             LLMFactExtractor, RuleFactExtractor, canonical_subject, fact_to_trace)
from retrieval.types import Scope

from conftest import U1, U2, make_trace

T0 = datetime(2025, 1, 1, tzinfo=UTC)

EXTRACTION = [
    ("I live in Lisbon.", [("user", "livesIn", "Lisbon")]),
    ("I moved to Porto in March.", [("user", "livesIn", "Porto")]),
    ("I'm living in Berlin these days.", [("user", "livesIn", "Berlin")]),
    ("My dog Biscuit is afraid of bikes.", [("user", "ownsPet", "Biscuit")]),
    ("I have a cat named Miso.", [("user", "ownsPet", "Miso")]),
    ("I'm allergic to penicillin.", [("user", "allergicTo", "penicillin")]),
    ("I work at Acme Corp.", [("user", "worksAt", "Acme Corp")]),
    ("I started working at Northwind Logistics in June.", [("user", "worksAt", "Northwind Logistics")]),
    ("I bought a Kindle last week.", [("user", "purchased", "Kindle")]),
    ("I was diagnosed with asthma when I was nine.", [("user", "diagnosedWith", "asthma")]),
    ("I take metformin daily.", [("user", "takesMedication", "metformin")]),
    ("My name is Dana Whitfield.", [("user", "isNamed", "Dana Whitfield")]),
    ("I'm a software engineer.", [("user", "is", "software engineer")]),
    ("I drive a Subaru Outback.", [("user", "drives", "Subaru Outback")]),
    ("My wife Lena is a nurse.", [("user", "marriedTo", "Lena")]),
    ("My son Theo turned five.", [("user", "parentOf", "Theo")]),
    ("My colleague Priya Raman reviews my code.", [("user", "colleagueOf", "Priya Raman")]),
    ("I study at the Volkshochschule Neukölln now.", [("user", "studiesAt", "Volkshochschule Neukölln")]),
    ("I enrolled at City of Bristol College for an evening course.", [("user", "studiesAt",
                                                                       "City of Bristol College")]),
    ("I visited Kyoto in April.", [("user", "visited", "Kyoto")]),
    ("I prefer window seats.", [("user", "prefers", "window seats")]),
    ("I avoid gluten.", [("user", "avoids", "gluten")]),
    ("I hate cilantro.", [("user", "dislikes", "cilantro")]),
    ("I identify as nonbinary.", [("user", "identifiesAs", "nonbinary")]),
    ("I decided to sell the Corolla.", [("user", "decidedOn", "sell the Corolla")]),
    ("Sarah lives in Berlin.", [("sarah", "livesIn", "Berlin")]),
    # Negatives: nothing may be extracted.
    ("I don't live in Paris.", []),
    ("I no longer work at Globex.", []),
    ("Do you live in Rome?", []),
    ("Where do I work?", []),
    ("My sister lives in Rome.", []),
    ("Drivers hate the photo step.", []),
    ("Train to Coimbra booked for 22 December.", []),
    ("Mum visited the Leith flat.", []),
    ("I accepted an offer I'd have laughed at a year ago.", []),
]


@pytest.mark.parametrize("text,expected", EXTRACTION, ids=[t for t, _ in EXTRACTION])
def test_rule_extraction_golden(text, expected):
    facts = RuleFactExtractor().extract(text, trace_id="t1", timestamp=T0)
    assert [(f.subject, f.predicate, f.object) for f in facts] == expected
    for f in facts:
        assert f.object in text  # a literal span, never paraphrased
        assert f.source_trace_ids == ("t1",) and f.timestamp == T0 and f.source_span in text


def test_schema_and_subjects():
    assert len(PREDICATES) == 25
    assert [canonical_subject(s) for s in ("I", "my", "Me", "mine", "myself", "Sarah")] == ["user"] * 5 + ["sarah"]
    with pytest.raises(ValueError, match="predicate 'likes'"):
        Fact("I", "likes", "x", T0)
    with pytest.raises(ValueError, match="timezone"):
        Fact("I", "livesIn", "x", datetime(2025, 1, 1))


CLASSIFIER = [
    ("where do I live now?", [("user", "livesIn")], False),
    ("where did I live first?", [("user", "livesIn")], True),
    ("what's my job?", [("user", "worksAt")], False),
    ("where do I work these days?", [("user", "worksAt")], False),
    ("what is my pet's name?", [("user", "ownsPet")], False),
    ("what's my dog called?", [("user", "ownsPet")], False),
    ("am I allergic to anything?", [("user", "allergicTo")], False),
    ("what medication do I take?", [("user", "takesMedication")], False),
    ("what was I diagnosed with?", [("user", "diagnosedWith")], False),
    ("who did I marry?", [("user", "marriedTo")], False),
    ("what car do I drive?", [("user", "drives")], False),
    ("where did I study before?", [("user", "studiesAt")], True),
    ("what was the latest thing I bought?", [("user", "purchased")], True),
    ("what did I buy recently?", [("user", "purchased")], False),  # "recently" is not the word "recent"
    ("when is my appointment scheduled?", [("user", "scheduled")], True),
    ("what do I avoid eating?", [("user", "avoids")], False),
    ("what food do I dislike?", [("user", "dislikes")], False),
    ("which places have I visited?", [("user", "visited")], False),
    ("Where does Sarah live?", [("sarah", "livesIn")], False),
    ("what is the capital of France?", [], False),
    ("tell me about the weather", [], False),
]


@pytest.mark.parametrize("query,pairs,temporal", CLASSIFIER, ids=[q for q, _, _ in CLASSIFIER])
def test_keyword_classifier_golden(query, pairs, temporal):
    assert KeywordFactClassifier().classify(query) == (pairs, temporal)


def test_agentos_classifier_is_the_literal_rule():
    c = AgentOSFactClassifier()
    assert c.classify("where do I live?") == ([], False)  # no camelCase predicate in the text
    assert c.classify("my livesIn fact") == ([("user", "livesIn")], False)
    assert c.classify("livesIn") == ([], False)  # no i/my/me/user
    assert c.classify("what is my latest worksat") == ([("user", "is"), ("user", "worksAt")], True)


def facts_for(scope_id: str) -> list[Fact]:
    return [Fact("I", "livesIn", "Lisbon", T0, ("a",), "I live in Lisbon."),
            Fact("I", "livesIn", "Porto", T0 + timedelta(days=200), ("b",), "I moved to Porto."),
            Fact("I", "worksAt", "Brisa", T0 + timedelta(days=10), ("c",), "I work at Brisa.")]


def test_fact_store_latest_history_idempotence_and_scope(tmp_path):
    fs = FactStore(str(tmp_path / "db"))
    assert fs.upsert(U1, facts_for("u1")) == 3
    assert fs.upsert(U1, facts_for("u1")) == 0  # idempotent re-ingest
    fs.upsert(U2, [Fact("I", "livesIn", "Rome", T0, ("z",), "I live in Rome.")])
    assert fs.latest(U1, "I", "livesIn").object == "Porto"
    assert fs.latest(U2, "user", "livesIn").object == "Rome"
    assert fs.latest(Scope("user", "nobody"), "user", "livesIn") is None
    assert [f.object for f in fs.all_time_ordered(U1, "user")] == ["Lisbon", "Brisa", "Porto"]
    assert fs.delete_for_trace("b") == 1
    assert fs.latest(U1, "user", "livesIn").object == "Lisbon"
    assert fs.count() == 3


def test_fact_store_survives_a_new_process(tmp_path):
    uri = str(tmp_path / "db")
    FactStore(uri).upsert(U1, facts_for("u1"))
    code = ("from retrieval.facts import FactStore; from retrieval.types import Scope;"
            f"print(FactStore({uri!r}).latest(Scope('user','u1'), 'user', 'livesIn').object)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "Porto", out.stderr[-500:]


def test_fact_trace_format():
    f = Fact("I", "livesIn", "Porto", datetime(2025, 3, 1, 12, tzinfo=UTC), ("b",), "I moved to Porto.")
    t = fact_to_trace(f, U1)
    assert t.id == "fact-graph:user:livesIn:1740830400000"
    assert t.content == "user livesIn Porto (as of 2025-03-01)."
    assert t.trace.source_type == "fact_graph" and t.retrieval_score == 1.0
    assert t.trace.tags == ("fact-graph", "predicate:livesIn")


@pytest.fixture
def with_facts(store, tmp_path):
    fs = FactStore(store.uri)
    fs.upsert(U1, facts_for("u1"))
    fs.upsert(U2, [Fact("I", "livesIn", "Rome", T0 + timedelta(days=400), ("x",), "I live in Rome.")])
    r = HybridRetriever(store, bm25=BM25Index(), fact_store=fs)
    r.index([make_trace("a", "I live in Lisbon."), make_trace("b", "I moved to Porto."),
             make_trace("c", "I work at Brisa."), make_trace("x", "The weather in Rome is lovely.", "u2")])
    return r


def test_pipeline_puts_the_latest_fact_first_and_never_another_scope(with_facts):
    res = with_facts.retrieve("where do I live now?", scope=U1)
    assert res.traces[0].content.startswith("user livesIn Porto")
    assert all("Rome" not in t.content for t in res.traces)
    ex = res.diagnostics.explain(res.traces[0].id)
    assert ex.fact["source_trace_ids"] == ["b"] and ex.dropped_at is None
    assert with_facts.retrieve("where do I live now?", scope=U2).traces[0].content.startswith("user livesIn Rome")


def test_temporal_query_gets_history_in_time_order(with_facts):
    hybrid = with_facts.retrieve("where did I live first?", scope=U1)
    assert [t.content.split()[2] for t in hybrid.traces[:2]] == ["Lisbon", "Porto"]
    assert hybrid.diagnostics.fact_ids == [t.id for t in hybrid.traces[:2]]
    # agentos: every fact of the subject, oldest first
    agentos = with_facts.retrieve("where did I live first?", scope=U1, preset="agentos")
    assert [t.content.split()[2] for t in agentos.traces[:3]] == ["Lisbon", "Brisa", "Porto"]


def test_facts_are_built_from_the_original_query_not_the_hypothesis(with_facts):
    class Hyde:
        def hypothesis(self, q):
            return "weather report"

    with_facts.hyde = Hyde()
    res = with_facts.retrieve("where do I live now?", scope=U1)
    assert res.traces[0].content.startswith("user livesIn Porto")


class FakeLLM:
    def __init__(self, text):
        self.text = text

    def generate(self, system, prompt):
        return self.text


def test_llm_extractor_keeps_literal_objects_only():
    text = "I moved to Porto and adopted a beagle called Biscuit."
    llm = FakeLLM('[{"subject": "I", "predicate": "livesIn", "object": "Porto"},'
                  ' {"subject": "I", "predicate": "ownsPet", "object": "a dog"},'
                  ' {"subject": "I", "predicate": "flies", "object": "Porto"}]')
    ex = LLMFactExtractor(llm)
    facts = ex.extract(text, "t9", T0)
    assert [(f.predicate, f.object) for f in facts] == [("livesIn", "Porto")]
    assert any("not a literal span" in w for w in ex.warnings)
    bad = LLMFactExtractor(FakeLLM("sorry, I cannot"))
    assert bad.extract(text) == [] and "invalid JSON" in bad.warnings[0]
