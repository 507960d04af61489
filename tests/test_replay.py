"""Log replay: JSONL and OpenInference spans in (bad lines by number), the query log, implicit grades, and
then-vs-now-vs-as-of comparisons."""
from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings, strategies as st

from conftest import NOW, U1, make_trace
from retrieval.history import WorkspaceAsOf, pin
from retrieval.judgments.store import JudgmentStore
from retrieval.models import HashingEmbedder
from retrieval.replay import (BadLine, LoggedQuery, QueryLog, compare_lists, implicit_grades, parse_lines,
                              record_implicit_grades, replay, sample)
from retrieval.workspace import Workspace

JSONL = [
    json.dumps({"timestamp": "2026-03-01T12:00:00Z", "query": "invoice refund", "scope": "user:u1",
                "results": [{"id": "inv", "score": 0.9}, {"id": "billing", "score": 0.4}], "feedback": "up"}),
    "not json at all",
    json.dumps({"timestamp": "2026-03-01T12:00:00", "query": "x", "results": []}),
    "",
    json.dumps({"timestamp": "2026-03-02T12:00:00+01:00", "query": "billing", "scope": {"scope": "user",
                "scope_id": "u1"}, "results": [{"id": "billing", "score": 0.5}], "feedback": {"billing": 3}}),
    json.dumps({"timestamp": "2026-03-02T12:00:00Z", "query": "q", "results": [{"score": 1}]}),
    json.dumps({"timestamp": "2026-03-02T12:00:00Z", "query": "q", "results": [], "feedback": "meh"}),
]


def _span_flat(query="where do I live", start="2026-03-01T10:00:00+00:00"):
    return json.dumps({"name": "retrieve", "span_kind": "RETRIEVER", "start_time": start,
                       "attributes": {"input.value": query, "retrieval.documents.0.document.id": "lisbon",
                                      "retrieval.documents.0.document.score": 0.8,
                                      "retrieval.documents.0.document.content": "I live in Lisbon",
                                      "retrieval.documents.1.document.id": "hike",
                                      "retrieval.documents.1.document.score": 0.2,
                                      "metadata": json.dumps({"scope": "user:u1"})}})


SPANS = [
    _span_flat(),
    json.dumps({"name": "llm", "span_kind": "LLM", "start_time": "2026-03-01T10:00:01Z", "attributes": {}}),
    json.dumps({"name": "retrieve", "start_time": "2026-03-01T11:00:00Z",  # nested documents, kind in attributes
                "attributes": {"openinference": {"span": {"kind": "RETRIEVER"}}, "input": {"value": "trail"},
                               "retrieval": {"documents": [{"document": {"id": "hike", "score": 0.7}}]}}}),
    json.dumps({"name": "retrieve", "startTimeUnixNano": str(int(NOW.timestamp() * 1e9)),  # OTLP attribute list
                "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                               {"key": "input.value", "value": {"stringValue": "flight"}},
                               {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "flight"}},
                               {"key": "retrieval.documents.0.document.score", "value": {"doubleValue": 0.3}}]}),
    json.dumps({"name": "retrieve", "span_kind": "RETRIEVER", "start_time": "2026-03-01T10:00:00Z",
                "attributes": {"input.value": "broken", "retrieval.documents.0.document.score": 0.3}}),
]


def test_jsonl_lines_parse_and_bad_ones_are_reported_by_number():
    out = list(parse_lines(JSONL))
    bad = {b.line: b.reason for b in out if isinstance(b, BadLine)}
    assert sorted(bad) == [2, 3, 6, 7]
    assert bad[2].startswith("not JSON") and "no time zone" in bad[3] and "'id'" in bad[6] and "feedback" in bad[7]
    good = [q for q in out if isinstance(q, LoggedQuery)]
    assert [q.query for q in good] == ["invoice refund", "billing"]
    assert good[0].scope == U1 and good[0].result_ids == ("inv", "billing") and good[0].result_scores == (0.9, 0.4)
    assert good[1].timestamp == datetime(2026, 3, 2, 11, 0, tzinfo=UTC) and good[1].feedback == {"billing": 3}
    assert out[3] is None  # a blank line


def test_openinference_spans_in_three_shapes_and_other_kinds_skipped():
    out = list(parse_lines(SPANS))
    assert out[1] is None and isinstance(out[4], BadLine) and out[4].line == 5 and "document.id" in out[4].reason
    flat, nested, otlp = out[0], out[2], out[3]
    assert (flat.query, flat.result_ids, flat.result_scores, flat.scope) == (
        "where do I live", ("lisbon", "hike"), (0.8, 0.2), U1)
    assert flat.source == "openinference" and flat.timestamp == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert (nested.query, nested.result_ids) == ("trail", ("hike",))
    assert (otlp.query, otlp.result_ids, otlp.timestamp) == ("flight", ("flight",), NOW)


def test_implicit_grades_from_feedback():
    q = next(x for x in parse_lines(JSONL[:1]))
    assert implicit_grades(q) == {"inv": 2, "billing": 1}
    neg = LoggedQuery("k", NOW, "q", U1, ("a", "b", "c", "d"), (1, 1, 1, 1), "down")
    assert implicit_grades(neg) == {"a": 0, "b": 0, "c": 0}
    assert implicit_grades(LoggedQuery("k", NOW, "q", U1, ("a",), (1,), None)) == {}


def test_import_is_idempotent_filters_and_writes_implicit_grades(tmp_path):
    log = QueryLog(str(tmp_path / "db"))
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(JSONL + SPANS) + "\n")
    rep = log.import_file(path)
    assert (rep.added, rep.already, len(rep.errors)) == (5, 0, 5)
    assert [e.line for e in rep.errors] == [2, 3, 6, 7, 12]
    again = log.import_file(path)
    assert (again.added, again.already) == (0, 5) and log.count() == 5
    assert [q.query for q in log.queries(scope=U1)] == ["billing", "invoice refund", "where do I live"]
    assert [q.query for q in log.queries(feedback="positive")] == ["invoice refund"]
    assert {q.query for q in log.queries(max_top_score=0.5)} == {"billing", "flight"}
    assert len(sample(log.queries(), 2, seed=1)) == 2 and sample(log.queries(), 2, 1) == sample(log.queries(), 2, 1)
    js = JudgmentStore(str(tmp_path / "db"))
    assert record_implicit_grades(js, rep.with_feedback, "log.jsonl") == 3
    implicit = {j.trace_id: (j.grade, j.grader) for j in js.ratings(U1, "invoice refund") if j.rater == "implicit"}
    assert implicit == {"inv": (2, "implicit"), "billing": (1, "implicit")}
    grades = js.grades(U1, "invoice refund")  # kept apart from human and machine grades
    assert grades.get("human", {}) == {} and grades.get("machine", {}) == {}
    assert log.get(log.queries(scope=U1)[0].key).query == "billing"


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="is not a file"):
        QueryLog(str(tmp_path / "db")).import_file(tmp_path / "nope.jsonl")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8), st.lists(st.sampled_from("abcdefgh"),
       unique=True, max_size=8), st.integers(1, 8))
def test_compare_lists_is_overlap_and_rbo_of_the_logged_top_k(then, now, k):
    q = LoggedQuery("k", NOW, "q", None, tuple(then), tuple(1.0 for _ in then))
    r = compare_lists(q, now, None, k)
    assert 0.0 <= r.overlap_now <= 1.0 and -1e-9 <= r.rbo_now <= 1 + 1e-9
    if then[:k] == now[:k]:
        assert r.overlap_now == 1.0 and math.isclose(r.rbo_now, 1.0) and math.isclose(r.drift, 0.0, abs_tol=1e-9)
    if not set(then[:k]) & set(now[:k]) and then and now:
        assert r.overlap_now == 0.0 and r.rbo_now == 0.0


def test_replay_compares_then_now_and_as_of_the_log_time(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 approved"), make_trace("hike", "trail with the dog")])
    logged_at = pin(ws.store, ws.store.version()).timestamp + timedelta(microseconds=1)
    ws.ingest([make_trace("inv2", "invoice refund invoice refund INV-8842")])
    q = LoggedQuery("k", logged_at, "invoice refund", U1, ("inv", "hike"), (0.9, 0.1))

    def run(as_of):
        return ws.retriever(as_of=as_of).retrieve(q.query, scope=q.scope, recall_top_k=2).ids

    r = replay(q, run, lambda t: pin(ws.store, t).version, k=2)
    assert r.asof_ids == ("inv", "hike") and r.overlap_asof == 1.0 and math.isclose(r.rbo_asof, 1.0)
    assert "inv2" in r.now_ids and r.overlap_now == 0.5 and r.drift > 0
    early = LoggedQuery("k2", NOW - timedelta(days=9000), "invoice refund", U1, ("inv",), (1.0,))
    r2 = replay(early, run, lambda t: pin(ws.store, t).version, k=2)
    assert r2.asof_ids is None and "before the first stored version" in r2.note
    assert isinstance(WorkspaceAsOf(ws, None).retriever(), type(ws.retriever()))


def test_a_writer_limited_to_some_scopes_imports_only_lines_of_their_scopes(tmp_path):
    from retrieval.access import Access

    writer = Access(user="u2@example.com", scopes=frozenset({"user:u2"}), write=True, grade=True)
    log = QueryLog(str(tmp_path / "db"))
    path = tmp_path / "log.jsonl"
    mine = json.dumps({"timestamp": "2026-03-03T12:00:00Z", "query": "my notes", "scope": "user:u2",
                       "results": [{"id": "n1", "score": 0.7}], "feedback": "up"})
    path.write_text("\n".join([JSONL[0], mine, JSONL[4]]) + "\n")
    rep = log.import_file(path, allowed=writer.sees)
    assert rep.added == 1 and [q.query for q in log.queries()] == ["my notes"]
    assert [(e.line, "user:u1 is not one of yours" in e.reason) for e in rep.errors] == [(1, True), (3, True)]
    js = JudgmentStore(str(tmp_path / "db"))
    assert record_implicit_grades(js, rep.with_feedback, "log.jsonl", access=writer) == 1
    other = LoggedQuery("k", NOW, "invoice refund", U1, ("inv",), (0.9,), "up")
    with pytest.raises(PermissionError):  # an implicit grade in another scope is refused, nothing written
        record_implicit_grades(js, [other], "log.jsonl", access=writer)
    assert js.ratings(U1, "invoice refund") == []
