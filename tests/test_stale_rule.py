"""One rule for a stale grade (issue 32, item 12): after a graded trace is edited, every export and agreement path
leaves its grade out, as `snapshot run` does — the exported qrels scored by ir_measures give snapshot run's nDCG@10."""
from __future__ import annotations

import json

import ir_measures
from conftest import NOW, U1, make_trace
from ir_measures import nDCG

from retrieval.cli.main import main
from retrieval.judgments import Case, CaseQuery, JudgmentStore
from retrieval.judgments.exchange import export_ratings
from retrieval.judgments.model import content_hash
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

TEXTS = {"inv": "Refund for invoice INV-8842 was approved by the billing team.",
         "billing": "Billing help: how to ask for a refund on any order.",
         "order": "Order 5521 shipped on Monday with the refund slip inside.",
         "hike": "Saturday hike up the ridge trail, refund policy for the guide.",
         "washer": "The washer shows error E-4102 after a refund request."}
QUERIES = {"q1": "refund for invoice INV-8842", "q2": "how do I get a refund"}
GRADES = {"q1": {"inv": 3, "billing": 1, "order": 0}, "q2": {"billing": 3, "inv": 2, "hike": 1}}


def _store(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace(t, text, days=n) for n, (t, text) in enumerate(TEXTS.items())])
    js = JudgmentStore(ws.uri)
    js.save_case(Case("c", tuple(CaseQuery(q, text, U1) for q, text in QUERIES.items())))
    for rater in ("alice", "bob"):
        for q, grades in GRADES.items():
            for t, g in grades.items():
                js.set_grade(U1, QUERIES[q], t, g, rater=rater, content_hash=content_hash(TEXTS[t]))
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 was REJECTED after review.", days=0)])  # an edit
    return ws, js


def _run(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_every_export_and_agreement_leaves_a_stale_grade_out_like_snapshot_run(tmp_path, capsys):
    ws, js = _store(tmp_path)
    db = ws.uri
    snap = _run(capsys, "snapshot", "run", "c", "--db", db, "--preset", "hybrid")
    stored = js.snapshot(snap["snapshot"])
    assert stored.qrels == {"q1": {"billing": 1, "order": 0}, "q2": {"billing": 3, "hike": 1}}
    run = {q.qid: {t: -n for n, t in enumerate(q.credited("final"))} for q in stored.queries}

    _run(capsys, "judge", "export", "c", "--format", "trec", "--out", str(tmp_path / "j.qrels"), "--db", db)
    _run(capsys, "judge", "export", "c", "--format", "trec", "--rater", "bob", "--out", str(tmp_path / "b.qrels"),
         "--db", db)
    _run(capsys, "case", "export", "c", "--out", str(tmp_path / "case"), "--db", db)
    page = export_ratings(js, "c", "trec")  # what the Judge page's "Download TREC qrels" serves
    for text in ((tmp_path / "j.qrels").read_text(), (tmp_path / "b.qrels").read_text(),
                 (tmp_path / "case" / "qrels.trec").read_text(), page):
        assert " inv " not in text
        qrels = list(ir_measures.read_trec_qrels(text))
        got = ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10]
        assert round(got, 6) == round(snap["metrics"]["ndcg@10"], 6)

    agreement = _run(capsys, "judge", "agreement", "c", "--db", db)
    assert agreement["items"] == 4 and agreement["pairs"][0]["n"] == 4  # the two grades of `inv` are stale
