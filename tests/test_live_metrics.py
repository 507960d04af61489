"""One rule for a fact row in a scored list (`retrieval.metrics.credited`): Inspect's live panel (its payload, scored
in node by ui/refuse/case.mjs) and Compare (`score_ranking(credited_ids(...))`, the server) give the same nDCG@10 and
recall@10 for the same list and grades, with a fact-graph row at #1 counting as its source trace, once.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from retrieval.eval.runner import credited_ids, score_ranking
from retrieval.metrics import credited
from retrieval.pipeline.browser import refuse_payload
from ui.refuse import panel_grades

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    from conftest import make_trace
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    w = Workspace(str(tmp_path_factory.mktemp("live") / "db"), embedder=HashingEmbedder(64))
    w.ingest([make_trace("home", "I moved to Porto last weekend.", days=3),
              make_trace("both", "I live in Paris. I moved to Amsterdam.", days=1),
              make_trace("soup", "lentil soup with cumin"), make_trace("trip", "flight to Madrid on Monday"),
              make_trace("flat", "Our flat in Porto has a view of where I live now: the river.", days=2)])
    return w


def panel(datas: list[dict]) -> list[dict]:
    out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "panel_scores.mjs")], input=json.dumps(datas),
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def test_credit_is_read_from_the_injected_traces_including_a_suffixed_id(ws):
    from conftest import U1

    d = ws.retriever().retrieve("where did I live originally?", scope=U1).diagnostics
    ids = [t.id for t in d.record.fact_traces]
    assert any("#" in i for i in ids), ids  # two facts of one instant: the second one's id carries #2
    assert d.credit == {t.id: f.source_trace_ids[0] for t, f in zip(d.record.fact_traces, d.record.facts)}
    assert set(d.credit) == set(ids)
    # snapshots (and so Judge's pools, case mode, `snapshot diff`) credit the #2 fact too
    from retrieval.judgments.model import LabelledQuery
    from retrieval.judgments.snapshots import snapshot_query

    query = "where did I live originally?"
    res = ws.retriever().retrieve(query, scope=U1)
    assert dict(snapshot_query(LabelledQuery("q", query, {}, U1), res).credit) == res.diagnostics.credit
    assert credited(["f1", "a", "f2", "b"], {"f1": "a", "f2": "c"}) == ["a", "c", "b"]


@pytest.mark.skipif(NODE is None, reason="node is not installed (the panel's maths runs in node)")
def test_inspect_live_panel_and_compare_score_a_fact_row_alike(ws):
    from conftest import U1

    cases = []
    for query, grades in [("where do I live now?", {"home": 2, "flat": 1, "soup": 0}),
                          ("where do I live now?", {"home": 2}),
                          ("where did I live originally?", {"both": 1.5, "home": 3, "trip": 1})]:
        res = ws.retriever().retrieve(query, scope=U1)
        assert res.ids[0].startswith("fact-graph:")  # the case the two pages disagreed on: a fact row at #1
        compare = score_ranking(credited_ids(res, "final"), {i: float(g) for i, g in grades.items()})
        cases.append((res, grades, compare))
    got = panel([{**refuse_payload(r.diagnostics), "grades": panel_grades(g)} for r, g, _ in cases])
    for (res, grades, compare), live in zip(cases, got):
        assert live["ndcg"] == pytest.approx(compare["ndcg@10"], abs=1e-12), (res.ids, grades)
        assert live["recall"] == pytest.approx(compare["recall@10"], abs=1e-12)
        assert (live["ndcg0"], live["recall0"]) == (live["ndcg"], live["recall"])  # at the saved setting
    # the fact row counts: the list with its source graded scores above the same list without the credit
    assert any(c["ndcg@10"] > score_ranking(r.ids, {i: float(g) for i, g in gr.items()})["ndcg@10"] + 1e-9
               for r, gr, c in cases)
