"""The evaluation clock: `end` is one day after each scope's newest trace, recency changes with it,
`--clock` takes now | end | an ISO time and refuses anything else, and every JSON the eval writes records it."""
from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.cli.main import build_parser, main
from retrieval.eval.clock import (EVAL_NOW, ClockSpec, ScopeClock, has_real_timestamps, make_clock, parse_clock,
                                  scope_ends)
from retrieval.eval.runner import LabelledQuery, run_queries
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace, Scope
from retrieval.workspace.core import Workspace

A, B = Scope("thread", "conv-a"), Scope("thread", "conv-b")
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turn(tid: str, text: str, scope: Scope, days: float) -> MemoryTrace:
    return MemoryTrace(id=tid, content=text, scope=scope.scope, scope_id=scope.scope_id,
                       created_at=T0 + timedelta(days=days), source_type="dialogue_turn")


# Two conversations: A's sessions on day 0 and day 30, B's on day 2 only.
TRACES = [turn("a1", "Caroline: I adopted a puppy named Max.", A, 0),
          turn("a2", "Caroline: Max chewed my running shoes.", A, 30),
          turn("b1", "Melanie: I painted a sunset over the lake.", B, 2),
          turn("b2", "Melanie: the lake painting sold at the fair.", B, 2.5)]


def test_end_is_one_day_after_each_scopes_newest_trace():
    ends = scope_ends(TRACES)
    assert ends == {A: T0 + timedelta(days=31), B: T0 + timedelta(days=3.5)}
    clock = make_clock("end", TRACES)
    assert clock.mode == "end" and clock.by_scope == ends
    assert clock.default == T0 + timedelta(days=31)  # an unscoped query: after the newest trace of all
    assert clock() == clock.default  # outside a query
    with clock.scoped(B) as at:
        assert at == clock() == T0 + timedelta(days=3.5)
        seen = []
        worker = threading.Thread(target=lambda: seen.append(clock()))  # the dense search runs on a worker thread
        worker.start()
        worker.join()
        assert seen == [T0 + timedelta(days=3.5)]
    assert clock() == clock.default
    # a newer access time counts as the trace's time
    assert scope_ends([replace(TRACES[2], last_accessed_at=T0 + timedelta(days=9))]) == {B: T0 + timedelta(days=10)}


def test_default_is_end_with_real_timestamps_and_now_without():
    assert has_real_timestamps(TRACES) and make_clock(None, TRACES).mode == "end"
    flat = [turn("d1", "doc one", A, 0), turn("d2", "doc two", B, 0)]  # one instant for all, as BEIR is stamped
    assert not has_real_timestamps(flat)
    for spec in (None, "end", "now"):
        c = make_clock(spec, flat)
        assert (c.mode, c.default, c.by_scope) == ("now", EVAL_NOW, {})
    assert make_clock(None, flat).describe()["requested"] == "now"
    assert make_clock("end", flat).describe()["requested"] == "end"  # what was asked is recorded too
    at = make_clock("2024-02-03T04:05:06+00:00", TRACES)
    assert (at.mode, at.default, at.by_scope) == ("at", datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC), {})
    assert make_clock("now", TRACES).describe() == {"requested": "now", "mode": "now",
                                                    "default": "2026-01-01T00:00:00+00:00", "by_scope": {}}


def test_recency_under_end_differs_from_now_on_a_tiny_dataset(tmp_path):
    clock = make_clock("now", TRACES)
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=clock, fact_extractor=None)
    ws.ingest(TRACES, extract_facts=False)
    queries = [LabelledQuery("qa", "Max the puppy shoes", {"a2": 1.0}, A),
               LabelledQuery("qb", "lake painting", {"b2": 1.0}, B)]
    r = ws.retriever(fact_store=None)

    def recency(clk: ScopeClock) -> dict[str, float]:
        ws.store.clock = clk
        runs = run_queries(r, queries, clock=clk)
        assert [x.now for x in runs] == [clk.at(A), clk.at(B)]
        return {t.id: t.score_breakdown.recency for x in runs for t in x.result.diagnostics.record.dense_lists[0]}

    now, end = recency(make_clock("now", TRACES)), recency(make_clock("end", TRACES))
    assert set(now) == set(end) == {"a1", "a2", "b1", "b2"}
    assert all(v < 1e-100 for v in now.values())  # years before 2026: no recency for anyone
    # under `end` the last session of each conversation is one day old: exp(-1); B's day-2 turn 1.5 days old
    assert end["a2"] == pytest.approx(2.718281828 ** -1)
    assert end["b2"] == pytest.approx(2.718281828 ** -1) and end["b1"] == pytest.approx(2.718281828 ** -1.5)
    assert end["a1"] == pytest.approx(2.718281828 ** -31)  # A's first session: 31 days before A's end


@pytest.mark.parametrize("text, want", [
    ("now", ClockSpec("now")), ("END", ClockSpec("end")), (" end ", ClockSpec("end")),
    ("2023-08-01T09:00:00+00:00", ClockSpec("at", datetime(2023, 8, 1, 9, tzinfo=UTC))),
    ("2023-08-01T09:00:00Z", ClockSpec("at", datetime(2023, 8, 1, 9, tzinfo=UTC))),
    ("2023-08-01", ClockSpec("at", datetime(2023, 8, 1, tzinfo=UTC))),  # no zone: UTC
    ("2023-08-01T11:00:00+02:00", ClockSpec("at", datetime(2023, 8, 1, 9, tzinfo=UTC))),
])
def test_the_clock_flag_parses_all_three_forms(text, want):
    assert parse_clock(text) == want
    args = build_parser().parse_args(["eval", "--dataset", "demo", "--clock", text])
    assert args.clock == want
    assert build_parser().parse_args(["eval", "--dataset", "demo"]).clock is None  # the dataset's default


@pytest.mark.parametrize("bad", ["yesterday", "", "2023-13-45", "end-ish", "1690880400"])
def test_the_clock_flag_rejects_garbage_with_a_clear_error(bad, capsys):
    with pytest.raises(ValueError, match=r"is not one of now, end, ISO-TIME: use now, end or an ISO time"):
        parse_clock(bad)
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["eval", "--dataset", "demo", "--clock", bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --clock: clock {bad!r} is not one of now, end, ISO-TIME" in err
    with pytest.raises(ValueError, match="timezone-aware"):
        ScopeClock("x", "at", datetime(2023, 1, 1))


def test_eval_records_the_clock_in_its_json(tmp_path):
    out = tmp_path / "eval.json"
    common = ["eval", "--dataset", "demo", "--cache-dir", str(tmp_path / "cache"), "--embedder", "hashing",
              "--preset", "hybrid", "--max-queries", "4", "--out", str(out)]
    assert main([*common, "--clock", "2024-06-01T00:00:00Z", "--lab"]) == 0
    data = json.loads(out.read_text())
    assert data["clock"] == {"requested": "2024-06-01T00:00:00+00:00", "mode": "at",
                             "default": "2024-06-01T00:00:00+00:00", "by_scope": {}}
    assert data["configs"]["hybrid"]["lab"]["clock"] == data["clock"]
    assert main(common) == 0
    default = json.loads(out.read_text())["clock"]
    assert default["mode"] == "end" and default["by_scope"]  # the demo traces carry real times
