"""What Tune and Compare run on a labelled set, as library functions (retrieval.eval.sessions)."""
from __future__ import annotations

import pytest

from conftest import U1, make_trace
from retrieval.eval.lab import fusion_grid
from retrieval.pipeline.presets import HYBRID_PRESET
from retrieval.eval.sessions import COMPARED, Side, compare_sets, tune
from retrieval.judgments.model import LabelledQuery
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

TEXTS = {"soup": "lentil soup with cumin and lemon", "trip": "flight to Madrid on Monday morning",
         "bill": "electricity bill paid for March", "dog": "walked the dog along the river",
         "gym": "leg day at the gym, squats", "book": "finished reading a novel about Lisbon"}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    w = Workspace(str(tmp_path_factory.mktemp("sessions") / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    w.ingest([make_trace(i, t) for i, t in TEXTS.items()])
    return w


def queries() -> list[LabelledQuery]:
    return [LabelledQuery(f"q{n}", q, {i: 2}, U1) for n, (q, i) in enumerate(
        [("lentil soup", "soup"), ("flight Madrid", "trip"), ("bill March", "bill"), ("dog river", "dog"),
         ("squats", "gym"), ("novel Lisbon", "book"), ("!!!", "soup")])]


def side(ws, name: str, **kw) -> Side:
    return Side(ws.retriever(fact_store=None, **kw), name)


def test_tune_runs_the_configuration_and_the_baseline_and_searches_one_grid(ws):
    seen: list[tuple[float, str]] = []
    out = tune(side(ws, "configuration"), side(ws, "agentos baseline", preset="agentos"), queries(),
               progress=lambda f, text: seen.append((f, text)))
    assert {r["stage"] for r in out.stages} >= {"dense", "sparse", "final"}
    assert len(out.deltas) == len(queries()) and [d["delta"] for d in out.deltas] == sorted(
        d["delta"] for d in out.deltas)  # worst first
    assert sum(out.wins_losses_ties) == len(queries())
    assert len(out.lab.scores) == len([c for c in fusion_grid() if c.fusion in HYBRID_PRESET.fusions])
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] == pytest.approx(1.0)
    assert any(t.startswith("agentos baseline: query") for _, t in seen)
    # "!!!" matches no word: merged ran for fewer queries, and the note says why
    merged = next(r for r in out.stages if r["stage"] == "merged")
    assert merged["queries"] < len(queries()) and "BM25 matched no word" in out.note


def test_compare_sets_pairs_the_sides_query_by_query(ws):
    same = compare_sets(side(ws, "A"), side(ws, "B"), queries(), resamples=200)
    assert set(same.intervals) == set(COMPARED)
    assert all(iv.delta == 0 and iv.lo == 0 and iv.hi == 0 for iv in same.intervals.values())
    assert all(r["Δ"] == 0 for r in same.per_query) and len(same.per_query) == len(queries())
    other = compare_sets(side(ws, "A", preset="agentos"), side(ws, "B"), queries(), resamples=200)
    fa, fb = other.final("a"), other.final("b")
    assert other.intervals["ndcg@10"].delta == pytest.approx(fb["ndcg@10"] - fa["ndcg@10"])
    assert [r["Δ"] for r in other.per_query] == sorted(r["Δ"] for r in other.per_query)


def test_an_empty_set_is_a_clear_error(ws):
    with pytest.raises(ValueError, match="no labelled queries"):
        tune(side(ws, "c"), side(ws, "b"), [])
    with pytest.raises(ValueError, match="no labelled queries"):
        compare_sets(side(ws, "a"), side(ws, "b"), [])
