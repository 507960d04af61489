"""Version diffs (the Changes view, `diff-versions`): stage lists at A and B, and who displaced whom and why."""
from __future__ import annotations

import json

import pytest

from conftest import NOW, U1, make_trace
from retrieval.cli.main import main
from retrieval.history import diff_versions
from retrieval.models.registry import make_embedder
from retrieval.pipeline.records import STAGES
from retrieval.store.versions import create_tag
from retrieval.workspace import Workspace


@pytest.fixture
def two_versions(tmp_path):
    """A: inv, billing, hike. B: billing deactivated, hike edited, a new trace inv2 that matches the query best."""
    ws = Workspace(str(tmp_path / "db"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    ws.ingest([make_trace("inv", "Refund for invoice INV-8842 was approved.", "u1", 3),
               make_trace("billing", "Billing help: ask for a refund on any invoice.", "u1", 10),
               make_trace("hike", "We hiked the ridge trail with the dog on Sunday.", "u1", 1)])
    a = ws.store.version()
    create_tag(ws.store.table(), "before", a)
    ws.set_active(["billing"], False)
    ws.ingest([make_trace("inv2", "Invoice refund: the invoice INV-8842 refund was paid.", "u1", 0.5)])
    return ws, a, ws.store.version()


def test_the_diff_names_the_displacing_trace_and_why(two_versions):
    ws, a, b = two_versions
    out = diff_versions(ws.retriever(as_of=a), ws.retriever(as_of=b), "invoice refund", U1, recall_top_k=2)
    assert out["from"]["version"] == a and out["to"]["version"] == b and out["from"]["tag"] == "before"
    assert set(out["stages"]) == set(STAGES)
    final = out["stages"]["final"]
    assert final["a"] == ["inv", "billing"] or final["a"] == ["billing", "inv"]
    assert "inv2" in final["b"] and "billing" not in final["b"]
    assert final["entered"] == ["inv2"] and final["left"] == ["billing"]
    (left,) = out["displaced"]
    assert left["id"] == "billing" and left["why"] == "deactivated" and left["rank_b"] is None
    (by,) = [d for d in left["displaced_by"] if d["id"] == "inv2"]
    assert by["rank_a"] is None and by["reasons"][0] == "new trace (added after version A)"
    # the idf of 'invoic' moved: at A 2 of 3 traces contained it, at B 2 of 3 active (billing left, inv2 came)
    terms = {m["term"]: m for m in out["idf"]}
    assert all(m["from"] != m["to"] for m in out["idf"])
    assert "refund" not in terms or terms["refund"]["df_to"] - terms["refund"]["df_from"] != 0


def test_an_edit_and_an_idf_move_are_named(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    ws.ingest([make_trace("x", "invoice refund approved", "u1"), make_trace("y", "garden tomato soil", "u1"),
               make_trace("z", "invoice paid by card", "u1")])
    a = ws.store.version()
    ws.ingest([make_trace("x", "garden hose and soil", "u1"), make_trace("w1", "invoice one", "u1"),
               make_trace("w2", "invoice two", "u1")])
    out = diff_versions(ws.retriever(as_of=a), ws.retriever(), "invoice refund", U1, recall_top_k=1)
    assert out["stages"]["final"]["a"] == ["x"]
    (left,) = out["displaced"]
    assert left["id"] == "x" and left["why"] == "edited content"
    inv = {m["term"]: m for m in out["idf"]}["invoic"]
    assert (inv["df_from"], inv["df_to"], inv["documents_from"], inv["documents_to"]) == (2, 3, 3, 5)
    assert inv["sentence"].startswith("BM25 idf of 'invoic' moved from ") and "1 more trace(s) contain it" in inv[
        "sentence"]


def test_cli_diff_versions_json_and_tags(two_versions, capsys):
    ws, a, b = two_versions
    db = ws.uri
    assert main(["diff-versions", "invoice refund", "--from", "before", "--to", str(b), "--db", db,
                 "--embedder", "hashing", "--scope", "user:u1", "--top-k", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["displaced"][0]["id"] == "billing" and out["displaced"][0]["why"] == "deactivated"
    assert main(["tag", "after", "--db", db, "--embedder", "hashing"]) == 0
    assert main(["tag", "--list", "--db", db, "--embedder", "hashing"]) == 0
    listed = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert listed["tags"]["after"]["version"] == b and listed["tags"]["before"]["version"] == a
    assert main(["query", "invoice refund", "--as-of", "before", "--db", db, "--embedder", "hashing",
                 "--scope", "user:u1", "--top-k", "2", "--json"]) == 0
    q = json.loads(capsys.readouterr().out)
    assert "billing" in [t["id"] for t in q["final"]] and q["as_of"].startswith(f"version {a} (tag before)")
    assert main(["tag", "after", "--db", db, "--embedder", "hashing"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["diff-versions", "x", "--from", "nope", "--db", db, "--embedder", "hashing"]) == 2
    assert "no tag 'nope'" in capsys.readouterr().err


def test_without_scope_as_of_reads_pick_the_first_scope_of_the_version_read(tmp_path, capsys):
    """Issue 32 item 11: `query --as-of` and `diff-versions` without --scope searched the first scope of the
    newest store (user:u1, added later) — not of the version read — so a fresh store built to that state
    (whose first scope is user:u2) answered differently."""
    traces = [make_trace("a", "invoice refund approved", "u2"), make_trace("b", "garden tomato soil", "u2")]
    ws = Workspace(str(tmp_path / "db"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    ws.ingest(traces)
    a = ws.store.version()
    ws.ingest([make_trace("c", "invoice refund for the first user", "u1")])
    fresh = Workspace(str(tmp_path / "fresh"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    fresh.ingest(traces)
    flags = ["--embedder", "hashing", "--top-k", "2"]

    def query(db, *extra):
        assert main(["query", "invoice refund", "--db", db, *flags, *extra]) == 0
        return capsys.readouterr().out

    then, built = query(ws.uri, "--as-of", str(a)), query(fresh.uri)
    assert then.splitlines()[0] == f"scope: user:u2 (the first in version {a}; pass --scope or --all-scopes)"
    assert built.splitlines()[0] == "scope: user:u2 (the first in the store; pass --scope or --all-scopes)"
    assert [ln for ln in then.splitlines() if ln.startswith("  1.")] == [
        ln for ln in built.splitlines() if ln.startswith("  1.")] and "  1. a  " in then
    assert json.loads(query(ws.uri, "--as-of", str(a), "--json"))["final"][0]["id"] == "a"  # stdout stays JSON
    assert main(["diff-versions", "invoice refund", "--from", str(a), "--db", ws.uri, *flags, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scope"] == "user:u2" and out["stages"]["final"]["a"] == ["a", "b"]


def test_entered_and_left_are_over_the_printed_lists(tmp_path):
    """Issue 32 item 15: "left: X" named an id that was in neither printed list (A's 11th and beyond), while ids
    that visibly dropped out of the printed top 10 (still in B's longer list) were not named."""
    from retrieval.history.diff import SHOWN

    ws = Workspace(str(tmp_path / "db"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    ws.ingest([make_trace(f"t{n:02d}", "invoice refund " + " ".join(["note"] * n), "u1", n) for n in range(40)])
    a = ws.store.version()
    ra = ws.retriever(as_of=a).retrieve("invoice refund", scope=U1, recall_top_k=10)
    below = ra.diagnostics.stage_ids["sparse"][SHOWN + 2]  # printed at neither version
    ws.delete([below])
    ws.ingest([make_trace(f"new{n}", "invoice refund invoice refund", "u1", 0) for n in range(3)])
    out = diff_versions(ws.retriever(as_of=a), ws.retriever(), "invoice refund", U1, recall_top_k=10)
    assert out["shown"] == SHOWN == 10
    for stage, s in out["stages"].items():
        top_a, top_b = s["a"][:SHOWN], s["b"][:SHOWN]
        assert s["left"] == [i for i in top_a if i not in top_b], stage
        assert s["entered"] == [i for i in top_b if i not in top_a], stage
    sparse = out["stages"]["sparse"]
    assert below in sparse["a"] and below not in sparse["left"]
    assert len(sparse["left"]) == 3 and all(i in sparse["b"] for i in sparse["left"])  # dropped to 11–13, named


def test_an_idf_move_is_told_once(tmp_path):
    """Issue 32 item 15: each idf sentence was printed twice (in a displaced trace's reasons and in the list)."""
    ws = Workspace(str(tmp_path / "db"), embedder=make_embedder("hashing"), clock=lambda: NOW)
    ws.ingest([make_trace("x", "invoice refund approved", "u1"), make_trace("y", "garden tomato soil", "u1")])
    a = ws.store.version()
    ws.ingest([make_trace("w1", "invoice refund invoice", "u1"), make_trace("w2", "garden hose", "u1"),
               make_trace("w3", "tomato hose", "u1")])
    out = diff_versions(ws.retriever(as_of=a), ws.retriever(), "invoice refund", U1, recall_top_k=1)
    reasons = [r for d in out["displaced"] for y in d["displaced_by"] for r in y["reasons"]]
    sentences = [m["sentence"] for m in out["idf"]]
    assert [m["term"] for m in out["idf"]] == ["invoic", "refund"]
    assert sentences and not [r for r in reasons if r in sentences]
    assert reasons == ["new trace (added after version A)", "the BM25 idf of 'invoic', 'refund' moved (why: below)"]
