"""The demo corpus, its judgments, and that every Home example really shows its effect (real models)."""
from __future__ import annotations

import json

import pytest

from demostore import copy_demo
from retrieval.ingest.demo import EXAMPLES, JUDGMENTS, TRACES, build_demo_index, load_examples
from retrieval.eval.runner import load_judgments
from retrieval.types import Mood, Scope


def test_corpus_shape_and_judgments_point_at_real_traces():
    rows = [json.loads(line) for line in TRACES.read_text().splitlines()]
    ids = {r["id"] for r in rows}
    assert len(rows) == len(ids) >= 290
    assert {r["scope_id"] for r in rows} == {"maya", "tomas", "priya"}
    assert sum(1 for r in rows if r.get("is_active") is False) >= 3
    assert sum(1 for r in rows if abs(r.get("valence", 0)) >= 0.5) >= 30
    assert sum(1 for r in rows if len(r["content"]) > 350) >= 6  # long multi-topic notes
    queries = load_judgments(JUDGMENTS)
    assert len(queries) >= 40
    for q in queries:
        assert set(q.qrels) <= ids, q.qid
        assert any(g >= 2 for g in q.qrels.values()), q.qid
    assert {q.category for q in queries} >= {"identifier", "paraphrase", "fact", "temporal", "buried", "emotional"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from retrieval.workspace.core import Workspace

    uri = copy_demo(tmp_path_factory.mktemp("demo") / "db", "minilm")  # what build-demo builds (MiniLM), built once
    return Workspace(uri)


def example(name: str) -> dict:
    return next(e for e in load_examples() if e["id"] == name)


def rank(ids: list[str], tid: str) -> int | None:
    return ids.index(tid) + 1 if tid in ids else None


@pytest.mark.slow
def test_identifier_example(demo):
    ex = example("identifier")
    scope = Scope.parse(ex["scope"])
    hybrid = demo.retriever().retrieve(ex["query"], scope=scope)
    agentos = demo.retriever(preset="agentos").retrieve(ex["query"], scope=scope)
    d = hybrid.diagnostics
    assert rank(d.stage_ids["sparse"], ex["target"]) <= 3
    assert ex["target"] not in d.stage_ids["dense"][:10]
    assert ex["target"] in hybrid.ids
    assert ex["target"] not in agentos.ids
    assert agentos.diagnostics.explain(ex["target"]).dropped_at == "hydrate"


@pytest.mark.slow
def test_fact_example_puts_the_latest_fact_first_with_its_source(demo):
    ex = example("fact")
    res = demo.retriever().retrieve(ex["query"], scope=Scope.parse(ex["scope"]))
    first = res.traces[0]
    assert first.trace.source_type == "fact_graph" and "livesIn Berlin" in first.content
    assert res.diagnostics.explain(first.id).fact["source_trace_ids"] == [ex["target"]]


@pytest.mark.slow
def test_temporal_example_injects_history_in_time_order(demo):
    ex = example("temporal")
    res = demo.retriever().retrieve(ex["query"], scope=Scope.parse(ex["scope"]))
    facts = [t for t in res.traces if t.trace.source_type == "fact_graph"]
    assert len(facts) >= 2
    assert [f.content.split()[2] for f in facts] == ["Lisbon", "Porto", "Berlin"]
    times = [f.trace.created_at for f in facts]
    assert times == sorted(times)


@pytest.mark.slow
def test_split_example_replaces_the_long_note_and_lifts_it(demo):
    from retrieval.models import EmbeddingReranker

    ex = example("split")
    scope = Scope.parse(ex["scope"])
    reranker = EmbeddingReranker(demo.store.embedder)
    w = float(ex["params"]["i_rerank_weight"])  # the card's blend weight
    plain = demo.retriever(reranker=reranker).retrieve(ex["query"], scope=scope, rerank_weight=w)
    split = demo.retriever(reranker=reranker, split_ambiguous_threshold=1.0).retrieve(ex["query"], scope=scope,
                                                                                       rerank_weight=w)
    assert ex["target"] in split.diagnostics.split_on_ambiguous["replaced_ids"]
    before = rank(plain.diagnostics.stage_ids["reranked"], ex["target"])
    after = rank(split.diagnostics.stage_ids["reranked"], ex["target"])
    assert after < before
    assert "Berlin operations team" in next(t for t in split.diagnostics.pool.values() if t.id == ex["target"]).content


@pytest.mark.slow
def test_mood_example_lifts_the_warm_memory(demo):
    ex = example("mood")
    scope = Scope.parse(ex["scope"])
    r = demo.retriever()
    neutral = r.retrieve(ex["query"], scope=scope).diagnostics.stage_ids["dense"]
    happy = r.retrieve(ex["query"], scope=scope, mood=Mood(valence=0.9, arousal=0.5)).diagnostics.stage_ids["dense"]
    assert rank(happy, ex["target"]) < rank(neutral, ex["target"])


@pytest.mark.slow
def test_hyde_example_searches_the_hypothesis_and_helps(demo):
    from retrieval.models import HydeGenerator, LocalGemmaGenerator

    ex = example("hyde")
    scope = Scope.parse(ex["scope"])
    raw = demo.retriever().retrieve(ex["query"], scope=scope)
    hyde = demo.retriever(hyde=HydeGenerator(LocalGemmaGenerator())).retrieve(ex["query"], scope=scope)
    h = hyde.diagnostics.hyde
    assert h and h != ex["query"]
    assert not any(e.startswith("hyde:") for e in hyde.diagnostics.escalations)
    assert rank(hyde.ids, ex["target"]) < rank(raw.ids, ex["target"])


def test_examples_file_is_well_formed():
    examples = json.loads(EXAMPLES.read_text())
    assert 4 <= len(examples) <= 6
    for e in examples:
        assert {"title", "query", "scope", "look_for", "params"} <= set(e)
        assert e["params"]["i_q"] == e["query"] and e["params"]["i_scope"] == e["scope"]


def test_build_demo_ships_two_snapshots_of_the_demo_case_once(tmp_path):
    from retrieval.ingest.demo import DEMO_SNAPSHOTS
    from retrieval.judgments.store import JudgmentStore
    from retrieval.models import HashingEmbedder

    uri = str(tmp_path / "db")
    build_demo_index(uri, log=lambda m: None, embedder=HashingEmbedder(384))
    snaps = JudgmentStore(uri).snapshots("demo")
    assert sorted(s.label for s in snaps) == sorted(label for _, label in DEMO_SNAPSHOTS)
    assert {s.config.settings.preset_name for s in snaps} == {"agentos", "hybrid"}
    assert all(len(s.queries) >= 40 and "ndcg@10" in s.metrics for s in snaps)
    build_demo_index(uri, log=lambda m: None, embedder=HashingEmbedder(384))  # reused: none added
    assert len(JudgmentStore(uri).snapshots("demo")) == 2
