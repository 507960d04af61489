"""Snapshots record the store version they ran against; a re-run at that version reproduces them exactly."""
from __future__ import annotations

from conftest import NOW, U1, make_trace
from retrieval.judgments.snapshots import run_snapshot
from retrieval.judgments.store import JudgmentStore
from retrieval.models import HashingEmbedder
from retrieval.pipeline.config import PipelineConfig
from retrieval.workspace import Workspace

QUERIES = ["invoice refund", "where do I live", "trail with the dog"]


def _lists(snap):
    return [(q.qid, dict(q.stage_ids), dict(q.stage_scores)) for q in snap.queries]


def test_a_snapshot_rerun_at_its_version_is_the_same_after_the_store_moved_on(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 was approved."),
               make_trace("lisbon", "I live in Lisbon now, near the river."),
               make_trace("hike", "We hiked the ridge trail with the dog.")])
    js = JudgmentStore(ws.uri)
    for q in QUERIES:
        js.add_to_case("c", q, U1)
    cfg = PipelineConfig.for_preset("hybrid", recall_top_k=3)
    first = run_snapshot(ws, "c", cfg, js)
    assert first.store_version == ws.store.version()
    assert js.snapshot(first.id).store_version == first.store_version  # stored and read back
    ws.ingest([make_trace("inv2", "invoice refund invoice refund"), make_trace("porto", "I live in Porto again."),
               make_trace("dog", "the dog on the trail, trail dog")])
    ws.set_active(["hike"], False)
    live = run_snapshot(ws, "c", cfg, js, save=False)
    again = run_snapshot(ws, "c", cfg, js, save=False, as_of=first.store_version)
    assert _lists(again) == _lists(first) and again.store_version == first.store_version
    assert _lists(live) != _lists(first) and live.store_version == ws.store.version()


def test_the_cli_reruns_a_snapshot_at_the_version_it_recorded(tmp_path, capsys):
    import json

    from retrieval.cli.main import main

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 was approved."),
               make_trace("lisbon", "I live in Lisbon now, near the river.")])
    js = JudgmentStore(ws.uri)
    js.add_to_case("c", "invoice refund", U1)
    first = run_snapshot(ws, "c", PipelineConfig.for_preset("hybrid", recall_top_k=3), js)
    ws.ingest([make_trace("inv2", "invoice refund invoice refund")])
    capsys.readouterr()
    assert main(["snapshot", "run", "c", "--db", ws.uri, "--top-k", "3",
                 "--as-of", first.id]) == 0
    out = json.loads(capsys.readouterr().out)
    rerun = js.snapshot(out["snapshot"])
    assert rerun.store_version == first.store_version  # the ids are as then (the CLI's clock is today's: scores
    assert [dict(q.stage_ids) for q in rerun.queries] == [dict(q.stage_ids) for q in first.queries]  # may differ)
    assert main(["snapshot", "run", "c", "--db", ws.uri, "--as-of", "no-such-tag"]) == 2
    assert "no-such-tag" in capsys.readouterr().err
