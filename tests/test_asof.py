"""As of (SPEC §16): a store taken through versions answers every as-of query as a fresh store built to that state."""
from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import NOW, U1, U2, make_trace
from retrieval.models import HashingEmbedder
from retrieval.store.versions import create_tag, parse_as_of
from retrieval.workspace import Workspace

QUERIES = [("invoice INV-8842 refund", U1), ("where do I live", U1), ("trail dog", U1), ("invoice", U2),
           ("flight to Madrid", None), ("soup with lemon", U1)]
BASE = [("inv", "Refund for invoice INV-8842 was approved by the billing team.", "u1", 3),
        ("billing", "Billing help: how to ask for a refund on any order or payment.", "u1", 10),
        ("hike", "We hiked the ridge trail with the dog on Sunday; the views were great.", "u1", 1),
        ("lisbon", "I live in Lisbon now, near the river, after moving from Porto.", "u1", 40),
        ("flight", "Flight TP1351 to Madrid leaves at 07:40 from terminal 1.", "u1", 5),
        ("recipe", "The lentil soup recipe needs cumin, lemon and a lot of patience.", "u1", 20),
        ("other", "Invoice INV-8842 is also mentioned in another user's notes.", "u2", 2)]


def _ws(path: Path) -> Workspace:
    return Workspace(str(path), embedder=HashingEmbedder(64), clock=lambda: NOW)


def _steps():
    """(name, write) pairs: ingest, edit, delete, deactivate, re-ingest (and a fact that moves)."""
    base = [make_trace(*row) for row in BASE]
    return [
        ("ingest", lambda ws: ws.ingest(base)),
        ("edit", lambda ws: ws.ingest([make_trace("inv", "Invoice INV-8842 refund was rejected; ask billing again.",
                                                  "u1", 0.5)])),
        ("delete", lambda ws: ws.delete(["flight"])),
        ("deactivate", lambda ws: ws.set_active(["billing"], False)),
        ("re-ingest", lambda ws: ws.ingest([make_trace("flight", "Flight TP1351 to Madrid now leaves at 09:10.",
                                                       "u1", 0.2),
                                            make_trace("porto", "I live in Porto again since May.", "u1", 0.1),
                                            make_trace("inv2", "Second invoice INV-9001 for the refund.", "u1", 0.3)])),
    ]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """The store after each step, its version then, and every trace as stored then."""
    root = tmp_path_factory.mktemp("asof")
    ws = _ws(root / "db")
    states = []
    for name, write in _steps():
        write(ws)
        states.append((name, ws.store.version(), {t.id: t for t in ws.store.all_traces()}))
    return ws, states


def _answer(r, query, scope):
    res = r.retrieve(query, scope=scope, recall_top_k=4)
    d = res.diagnostics
    out = {"final": [(t.id, round(t.retrieval_score, 9)) for t in res.traces],
           "stages": {k: list(v) for k, v in d.stage_ids.items()},
           "scores": {k: {i: round(s, 9) for i, s in v.items()} for k, v in d.stage_scores.items()}}
    for tid in res.ids[:2]:
        ex = d.explain(tid)
        out[f"bm25:{tid}"] = {k: round(v, 9) for k, v in (ex.bm25_terms or {}).items()}
    return out


@pytest.mark.parametrize("bm25", ["sidecar", "rebuilt"])
def test_every_as_of_query_equals_a_fresh_store_built_to_that_state(history, tmp_path, bm25):
    """BM25 from the newest sidecar moved by the rows that differ, or (no sidecar) rebuilt from the rows."""
    ws, states = history
    assert len({v for _, v, _ in states}) == len(states) >= 5
    if bm25 == "rebuilt":
        shutil.copytree(ws.uri, tmp_path / "copy")
        (tmp_path / "copy" / "bm25.npz").unlink()
        ws = _ws(tmp_path / "copy")
    ws.as_of_cache.clear()  # the fixture's workspace may hold these versions from an earlier test
    for n, (name, version, traces) in enumerate(states):
        fresh = _ws(tmp_path / f"fresh{n}")
        fresh.ingest(list(traces.values()))
        then = ws.retriever(as_of=version)
        assert then.as_of_state.pinned.version == version
        source = then.as_of_state.bm25_source
        assert source == "rebuilt" if bm25 == "rebuilt" else (
            source == "sidecar" if n == len(states) - 1 else source.startswith("the sidecar of version"))
        for query, scope in QUERIES:
            assert _answer(then, query, scope) == _answer(fresh.retriever(), query, scope), (name, query)


def test_the_differential_check_can_fail(history):
    """Two states really differ, so equality above is not vacuous."""
    ws, states = history
    first, last = states[0][1], states[-1][1]
    a = _answer(ws.retriever(as_of=first), "flight to Madrid", None)
    b = _answer(ws.retriever(as_of=last), "flight to Madrid", None)
    assert a != b
    top = _answer(ws.retriever(as_of=first), "where do I live", U1)["final"][0][0]
    assert top.startswith("fact-graph:user:livesIn")


def test_tags_and_times_name_versions(history):
    ws, states = history
    tbl = ws.store.table()
    v_delete = states[2][1]
    if "before-deactivate" not in ws.store.tags():
        create_tag(tbl, "before-deactivate", v_delete)
    assert ws.store.tags()["before-deactivate"] == v_delete
    by_tag = ws.retriever(as_of="before-deactivate")
    assert by_tag.as_of_state.pinned.version == v_delete and by_tag.as_of_state.pinned.tag == "before-deactivate"
    committed = by_tag.as_of_state.pinned.timestamp
    assert ws.retriever(as_of=committed).as_of_state.pinned.version == v_delete
    assert ws.retriever(as_of=committed + timedelta(microseconds=1)).as_of_state.pinned.version == v_delete
    status = ws.status()
    assert status["version"] == ws.store.version() and status["tags"]["before-deactivate"] == v_delete


@pytest.mark.parametrize("bad, message", [
    (10_000, r"version 10000 does not exist"),
    ("no-such-tag", r"no tag 'no-such-tag'"),
    (NOW.replace(tzinfo=None), r"no time zone"),
    (NOW - timedelta(days=3650), r"before the first stored version"),
    (True, r"must be a version"),
])
def test_unknown_versions_tags_and_times_are_clear_errors(history, bad, message):
    ws, _ = history
    with pytest.raises(ValueError, match=message):
        ws.retriever(as_of=bad)


def test_parse_as_of_reads_what_a_user_types():
    assert parse_as_of("") is None and parse_as_of("latest") is None
    assert parse_as_of("12") == 12
    assert parse_as_of("2026-03-01T12:00:00Z") == NOW
    assert parse_as_of("release-1") == "release-1"
    with pytest.raises(ValueError, match="no time zone"):
        parse_as_of("2026-03-01T12:00:00")
    with pytest.raises(ValueError, match="tag name"):
        parse_as_of("bad tag!")


def _tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_as_of_reads_never_write(tmp_path):
    ws = _ws(tmp_path / "db")
    for _, write in _steps():
        write(ws)
    # facts a crash left behind: a live open would reconcile them; an as-of read must leave them
    import lancedb

    lancedb.connect(str(tmp_path / "db")).drop_table("fact_sources")
    (tmp_path / "db" / "bm25.npz").unlink()  # a live open would rebuild and save it
    before = _tree_hash(tmp_path / "db")
    reader = _ws(tmp_path / "db")
    for v in (2, reader.store.version()):
        r = reader.retriever(as_of=v)
        r.retrieve("invoice refund", scope=U1)
        r.retrieve("where do I live", scope=U1).diagnostics.explain("inv")
        with pytest.raises(ValueError):
            r.memory_store.add([make_trace("new", "a new trace")])
        with pytest.raises(ValueError):
            r.fact_store.upsert(U1, [])
    assert _tree_hash(tmp_path / "db") == before


def test_a_fact_superseded_later_is_shown_as_it_stood(history):
    """At the first version 'where do I live' is answered by Lisbon; after the re-ingest by Porto."""
    ws, states = history
    def lives(v):
        return [f.object for f in ws.retriever(as_of=v).retrieve("where do I live", scope=U1).diagnostics.facts]
    assert lives(states[0][1]) == ["Lisbon"]
    assert lives(states[-1][1])[-1] == "Porto"


def test_an_edit_is_seen_as_of_each_side(history):
    ws, states = history
    before = ws.retriever(as_of=states[0][1]).memory_store.get(["inv"])[0]
    after = ws.retriever(as_of=states[1][1]).memory_store.get(["inv"])[0]
    assert "approved" in before.content and "rejected" in after.content
    assert replace(before, content=after.content, created_at=after.created_at,
                   last_accessed_at=after.last_accessed_at) == after


def test_facts_injected_then_are_shown_superseded_not_hidden(history):
    from retrieval.history import fact_changes

    ws, states = history
    then = ws.retriever(as_of=states[0][1]).retrieve("where do I live", scope=U1)
    (lisbon,) = fact_changes(then.diagnostics.facts, ws.facts, U1)
    assert (lisbon["object"], lisbon["state"], lisbon["now"]) == ("Lisbon", "superseded", "Porto")
    assert lisbon["sentence"].startswith("user livesIn Lisbon (as of ") and "superseded by Porto" in lisbon["sentence"]
    now = ws.retriever().retrieve("where do I live", scope=U1)
    assert [c["state"] for c in fact_changes(now.diagnostics.facts[-1:], ws.facts, U1)] == ["current"]


def test_a_store_on_lancedb_fts_reads_the_index_of_that_version_or_its_rows(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW, sparse="fts")
    ws.ingest([make_trace("a", "invoice refund approved"), make_trace("b", "hiking trail dog")])
    early = ws.store.version()
    ws.ingest([make_trace("c", "invoice refund for the dog walker")])
    ws.retriever().retrieve("invoice", scope=U1)  # the live side makes its index now
    indexed = ws.store.version()
    ws.ingest([make_trace("d", "invoice invoice invoice refund")])
    ws.retriever().retrieve("invoice", scope=U1)
    then = ws.retriever(as_of=indexed)
    assert then.as_of_state.bm25_source == "fts"
    fresh = Workspace(str(tmp_path / "fresh"), embedder=HashingEmbedder(32), clock=lambda: NOW, sparse="fts")
    fresh.ingest(ws.retriever(as_of=indexed).memory_store.all_traces())
    got = then.retrieve("invoice refund", scope=U1).diagnostics.stage_ids["sparse"]
    assert got == fresh.retriever().retrieve("invoice refund", scope=U1).diagnostics.stage_ids["sparse"]
    assert "d" not in got and set(got) == {"a", "c"}
    first = ws.retriever(as_of=early)
    assert first.as_of_state.bm25_source.startswith("rebuilt") or first.as_of_state.bm25_source == "fts"
    assert first.retrieve("invoice", scope=U1).diagnostics.stage_ids["sparse"] == ["a"]
