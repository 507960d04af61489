"""Traces read in their context (issue 36): the window a trace gets from its thread, kept right on every write,
reproduced as of a version, changed and undone in place; a no-op without threads."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from retrieval.ingest.parse import trace_from_record
from retrieval.models import HashingEmbedder
from retrieval.store.context import ContextSetting, contexts
from retrieval.types import MemoryTrace
from retrieval.workspace import Workspace

from conftest import NOW, ROOT, U1, U2, make_trace

ON = ContextSetting(window=1, sides="both", max_chars=300)


def turn(tid, text, pos, thread="s1", scope_id="u1", **kw) -> MemoryTrace:
    return make_trace(tid, text, scope_id, thread=thread, position=pos, **kw)


def ws_at(uri, setting: ContextSetting | None = ON) -> Workspace:
    ws = Workspace(str(uri), embedder=HashingEmbedder(32), clock=lambda: NOW, fact_extractor=None)
    if setting is not None:
        ws.store.new_context = setting
    return ws


CONVO = [turn("t0", "Did you adopt the greyhound?", 0), turn("t1", "Yes, last Tuesday!", 1),
         turn("t2", "What colour is the lead?", 2), turn("t3", "That one, the blue one", 3)]


def sparse(ws, q, scope=U1):
    return [i for i, _ in ws.bm25.search(q, top_k=10, scopes=[scope])]


# ------------------------------------------------------------------ assembly (pure, golden)
def test_window_next_and_max_chars_golden():
    got = contexts(CONVO, ContextSetting(window=2, max_chars=300))
    assert got == {"t0": (None, None), "t1": ("Did you adopt the greyhound?", "both"),
                   "t2": ("Did you adopt the greyhound?\nYes, last Tuesday!", "both"),
                   "t3": ("Yes, last Tuesday!\nWhat colour is the lead?", "both")}
    nxt = contexts(CONVO, ContextSetting(window=1, next=True, sides="bm25"))
    assert nxt["t0"] == ("Yes, last Tuesday!", "bm25")
    assert nxt["t1"] == ("Did you adopt the greyhound?\nWhat colour is the lead?", "bm25")
    assert nxt["t3"] == ("What colour is the lead?", "bm25")
    # the nearest turn first within the budget; each piece cut at the end; the separator counts
    short = contexts(CONVO, ContextSetting(window=2, max_chars=10))
    assert short["t3"] == ("What colou", "both")
    assert contexts(CONVO, ContextSetting(window=2, max_chars=25))["t3"] == ("What colour is the lead?", "both")
    assert contexts(CONVO, ContextSetting(window=2, max_chars=28))["t3"] == ("Yes\nWhat colour is the lead?", "both")


def test_order_is_position_not_input_order_and_inactive_lends_nothing():
    shuffled = [CONVO[2], CONVO[0], CONVO[3], CONVO[1]]
    assert contexts(shuffled, ON)["t2"] == ("Yes, last Tuesday!", "both")
    hidden = [CONVO[0], MemoryTrace(**{**CONVO[1].__dict__, "is_active": False}), CONVO[2]]
    assert contexts(hidden, ON)["t2"] == ("Did you adopt the greyhound?", "both")


@pytest.mark.parametrize("kw, message", [
    ({"window": -1}, "context window -1 must be a whole number from 0 to 20"),
    ({"window": 1, "sides": "sparse"}, "context sides 'sparse' must be one of bm25, dense, both"),
    ({"window": 1, "max_chars": 0}, "context max_chars 0 must be a whole number from 1 to 20000"),
])
def test_bad_settings_are_refused_by_name(kw, message):
    with pytest.raises(ValueError) as exc:
        ContextSetting(**kw)
    assert str(exc.value) == message


# ------------------------------------------------------------------ data model and loaders
def test_thread_and_position_are_validated_with_clear_errors():
    with pytest.raises(ValueError, match=r"trace 'a': field 'position' is -1; must be a whole number from 0"):
        make_trace("a", "x", thread="s", position=-1).validate()
    with pytest.raises(ValueError, match=r"field 'position' is 3 but the trace has no thread"):
        make_trace("a", "x", position=3).validate()
    with pytest.raises(ValueError, match=r"field 'thread' must be a non-empty string"):
        make_trace("a", "x", thread=" ").validate()
    assert trace_from_record({"id": "a", "text": "hi", "thread": "c1", "position": "4"}).position == 4
    with pytest.raises(ValueError, match="field 'position' is given without 'thread'"):
        trace_from_record({"id": "a", "text": "hi", "position": 2})
    with pytest.raises(ValueError, match="field 'position': 'two' is not a number"):
        trace_from_record({"id": "a", "text": "hi", "thread": "c", "position": "two"})


def test_locomo_loader_sets_sessions_as_threads_in_turn_order():
    from retrieval.eval.datasets import load_locomo

    traces, _ = load_locomo("/work/shared/eval/locomo-dev/locomo-dev.json")
    first = [t for t in traces if t.scope_id == traces[0].scope_id and t.thread == "session_1"][:3]
    assert [(t.id.split("/")[1], t.position) for t in first] == [("D1:1", 0), ("D1:2", 1), ("D1:3", 2)]


# ------------------------------------------------------------------ indexing through the Workspace
def test_ingest_gives_context_to_bm25_and_the_embedding_but_shows_own_text(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest(CONVO + [turn("x0", "greyhound racing tips", 0, scope_id="u2")])
    t1 = ws.store.get(["t1"])[0]
    assert (t1.content, t1.context, t1.context_sides) == ("Yes, last Tuesday!", "Did you adopt the greyhound?",
                                                          "both")
    assert sparse(ws, "greyhound") == ["t0", "t1"]  # found because of the turn before it
    assert sparse(ws, "greyhound", U2) == ["x0"]  # scopes never lend context to each other
    emb = HashingEmbedder(32)
    want = emb.embed(["Yes, last Tuesday!\nDid you adopt the greyhound?"])[0]
    vec = ws.store.get_with_vectors(["t1"])["t1"][1]
    assert np.allclose(vec, want, atol=1e-6)
    reopened = ws_at(tmp_path / "db", None)
    assert sparse(reopened, "greyhound") == ["t0", "t1"]  # the sidecar and a rebuild agree


def test_same_thread_name_in_two_scopes_lends_nothing_across(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest([turn("a0", "alpha words here", 0, scope_id="u1"), turn("b1", "beta reply", 1, scope_id="u2")])
    assert ws.store.get(["b1"])[0].context is None


def test_editing_or_deleting_a_neighbour_reindexes_its_follower(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest(CONVO)
    ws.ingest([turn("t0", "Did you adopt the whippet?", 0)])
    assert ws.store.get(["t1"])[0].context == "Did you adopt the whippet?"
    assert sparse(ws, "greyhound") == [] and sparse(ws, "whippet") == ["t0", "t1"]
    want = HashingEmbedder(32).embed(["Yes, last Tuesday!\nDid you adopt the whippet?"])[0]
    assert np.allclose(ws.store.get_with_vectors(["t1"])["t1"][1], want, atol=1e-6)
    ws.delete(["t2"])
    assert ws.store.get(["t3"])[0].context == "Yes, last Tuesday!"
    assert sparse(ws, "tuesday") == ["t1", "t3"]
    ws.set_active(["t1"], False)
    assert ws.store.get(["t3"])[0].context == "Did you adopt the whippet?"
    assert sparse(ws, "tuesday") == []
    fresh = ws_at(tmp_path / "db", None)
    assert fresh.status()["in_step"] and sparse(fresh, "whippet") == ["t0", "t3"]


def test_as_of_reproduces_the_context_as_it_was(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest(CONVO)
    before = ws.store.version()
    ws.ingest([turn("t0", "Did you adopt the whippet?", 0)])
    from retrieval.history.view import open_as_of

    view = open_as_of(ws.store, None, before, sidecar=ws.bm25_path)  # from the newer sidecar plus the rows
    assert view.bm25_source.startswith("the sidecar of version")
    assert view.store.get(["t1"])[0].context == "Did you adopt the greyhound?"
    assert [i for i, _ in view.bm25.search("greyhound", top_k=5, scopes=[U1])] == ["t0", "t1"]


def test_setting_change_reindexes_in_place_and_undo_restores(tmp_path):
    ws = ws_at(tmp_path / "db", ContextSetting())
    ws.ingest(CONVO)
    assert ws.store.get(["t1"])[0].context is None and sparse(ws, "greyhound") == ["t0"]
    seen = []
    out = ws.set_context(ContextSetting(window=1, sides="bm25"), progress=lambda d, t: seen.append((d, t)))
    assert (out["rewritten"], out["reembedded"]) == (3, 0)  # BM25 only: vectors kept
    assert sparse(ws, "greyhound") == ["t0", "t1"] and seen[-1] == (4, 4)  # BM25 rebuilt over 4 rows
    out = ws.set_context(ContextSetting(window=1, sides="both"))
    assert (out["rewritten"], out["reembedded"]) == (3, 3)
    out = ws.set_context(None, undo=True)
    assert out["to"] == ContextSetting(window=1, sides="bm25").describe()
    assert ws.store.get(["t1"])[0].context_sides == "bm25"
    ws.set_context(None, undo=True)
    assert ws.store.get(["t1"])[0].context is None and sparse(ws, "greyhound") == ["t0"]
    with pytest.raises(ValueError, match="has no context setting to undo"):
        ws.set_context(None, undo=True)


def test_no_threads_means_identical_results(tmp_path):
    plain = [make_trace(f"d{i}", text) for i, text in enumerate(["refund invoice", "hiking trail", "lentil soup"])]
    off, on = ws_at(tmp_path / "off", ContextSetting()), ws_at(tmp_path / "on", ContextSetting(window=3, next=True))
    off.ingest(plain)
    on.ingest(plain)
    for q in ("refund", "soup trail", "invoice hiking"):
        a = [(s.id, round(s.retrieval_score, 9)) for s in off.retriever().retrieve(q, scope=U1).traces]
        b = [(s.id, round(s.retrieval_score, 9)) for s in on.retriever().retrieve(q, scope=U1).traces]
        assert a == b and len(a) == 3
    assert [t.context for t in on.store.get(["d0", "d1", "d2"])] == [None, None, None]


def test_a_table_without_the_context_columns_opens_and_gains_them(tmp_path):
    import lancedb
    import pyarrow as pa

    from retrieval.store.rows import CONTEXT_COLUMNS, schema

    ws = ws_at(tmp_path / "db", ContextSetting())
    ws.ingest([make_trace("a", "refund invoice")])
    db = lancedb.connect(str(tmp_path / "db"))
    tbl = db.open_table("traces")
    old = tbl.to_arrow().drop_columns(list(CONTEXT_COLUMNS))
    sch = pa.schema([f for f in schema(32) if f.name not in CONTEXT_COLUMNS])
    db.create_table("traces", old.cast(sch), mode="overwrite")
    again = ws_at(tmp_path / "db", None)
    assert again.store.get(["a"])[0].thread is None and sparse(again, "refund") == ["a"]
    again.ingest(CONVO[:2])
    assert again.store.get(["t1"])[0].context is None  # the old table records no setting: off
    assert set(CONTEXT_COLUMNS) <= set(db.open_table("traces").schema.names)


def test_cli_context_sets_and_undoes_and_refuses_in_demo_mode(tmp_path):
    ws = ws_at(tmp_path / "db", ContextSetting())
    ws.ingest(CONVO)
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-m", "retrieval", "context", "--db", str(tmp_path / "db")]
    done = subprocess.run(run + ["--window", "1", "--sides", "bm25"], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 trace(s) re-indexed, 0 re-embedded" in done.stdout
    bad = subprocess.run(run + ["--window", "99"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: context window 99 must be a whole number from 0 to 20"
    demo = subprocess.run(run + ["--undo"], capture_output=True, text=True, env={**env, "RETRIEVAL_MODE": "demo"},
                          cwd=tmp_path)
    assert demo.returncode == 2 and "demo mode" in demo.stderr and "Traceback" not in demo.stderr
    undo = subprocess.run(run + ["--undo"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert undo.returncode == 0 and "-> off" in undo.stdout
    assert json.loads(json.dumps(ws_at(tmp_path / "db", None).store.get(["t1"])[0].context)) is None


# ------------------------------------------------------------------ explanations
def test_explanation_shows_terms_matched_only_in_the_context(tmp_path):
    ws = ws_at(tmp_path / "db", ContextSetting(window=1, sides="bm25"))
    ws.ingest(CONVO)
    res = ws.retriever().retrieve("greyhound tuesday", scope=U1)
    ex = res.diagnostics.explain("t1")
    assert (ex.content, ex.context, ex.context_sides) == ("Yes, last Tuesday!", "Did you adopt the greyhound?", "bm25")
    assert ex.bm25_context_terms == ("greyhound",)  # "tuesday" is its own
    assert ex.reason.endswith("; found because of the turns around it in its conversation: BM25 matched greyhound "
                              "only in its context.")
    own = res.diagnostics.explain("t0")
    assert own.context is None and "found because" not in own.reason


def test_dense_side_says_its_text_included_context(tmp_path):
    ws = ws_at(tmp_path / "db", ContextSetting(window=1, sides="dense"))
    ws.ingest(CONVO)
    ex = ws.retriever().retrieve("greyhound", scope=U1).diagnostics.explain("t1")
    assert ex.context_sides == "dense" and ex.bm25_context_terms is None and ex.stages["dense"] is not None
    assert ex.reason.endswith("; found because of the turns around it in its conversation: the dense side embedded "
                              "its text together with its context.")


def test_context_is_shown_as_escaped_text():
    from ui.widgets import context_html

    out = context_html("**bold** <img src=x onerror=alert(1)> [a](http://x)", "both", ("bold",))
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "<img" not in out
    assert "**bold**" in out and "matched only here: bold" in out and "BM25 and the embedding" in out


def test_a_new_store_reads_conversations_in_context_by_default(tmp_path):
    from retrieval.store.threads import setting_of

    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), clock=lambda: NOW, fact_extractor=None)
    ws.ingest(CONVO)
    assert setting_of(ws.store) == ContextSetting(window=3, sides="bm25", max_chars=300)
    t3 = ws.store.get(["t3"])[0]
    assert (t3.context, t3.context_sides) == ("Did you adopt the greyhound?\nYes, last Tuesday!\nWhat colour is the "
                                              "lead?", "bm25")
    assert sparse(ws, "greyhound") == ["t0", "t1", "t2", "t3"]


def test_another_process_catch_up_reindexes_a_follower_whose_context_changed(tmp_path):
    """A second Workspace on the same store, opened before the writes, catches up from the table (SPEC §18): the
    follower a neighbour's edit or delete rewrote must be re-indexed there too, so the catch-up's row hash has to
    change with the context (a hash of the own text alone leaves t1 indexed with the old context)."""
    writer = ws_at(tmp_path / "db")
    writer.ingest(CONVO)
    reader = ws_at(tmp_path / "db", None)
    assert sparse(reader, "greyhound") == ["t0", "t1"]  # opened (BM25 loaded) before the writes below
    writer.ingest([turn("t0", "Did you adopt the whippet?", 0)])
    assert reader.refresh()
    assert sparse(reader, "whippet") == ["t0", "t1"] and sparse(reader, "greyhound") == []
    writer.delete(["t2"])
    assert reader.refresh()
    assert sparse(reader, "tuesday") == ["t1", "t3"] and sparse(reader, "colour") == []
    assert reader.status()["in_step"]


def test_context_writes_have_one_audit_entry_per_version(tmp_path):
    from retrieval.workspace.audit import MAINTENANCE, audited_versions

    ws = ws_at(tmp_path / "db", ContextSetting())
    ws.ingest(CONVO)
    n = ws.delete(["t2"])
    assert n == 1
    out = ws.set_context(ContextSetting(window=1, sides="bm25"))
    ws.delete(["t1"])  # one merge_insert: t1 removed, t3 rewritten (its context is now t0's text)
    assert ws.store.get(["t3"])[0].context == "Did you adopt the greyhound?"
    entries = ws.audit.entries(limit=1000, maintenance=True)
    by_version = {e.version: e for e in entries if e.version is not None}
    assert sorted(by_version) == audited_versions(ws.store)
    assert by_version[out["version"]].action == "context"
    assert by_version[out["version"] + 1].actor == MAINTENANCE  # the setting recorded: metadata only
    last = by_version[ws.store.version()]
    assert (last.action, last.traces, last.ids) == ("delete", 1, ("t1",))


def test_ray_ingest_refuses_threads_it_cannot_give_context(tmp_path):
    """Ray's ingest writes rows without assembling contexts: on a store that reads threads in context it refuses a
    batch with threads before anything is written (the normal ingest is the one that assembles them)."""
    from retrieval.distributed.ingest import _open

    db = tmp_path / "db"
    with pytest.raises(ValueError, match="this batch has threads: their contexts are assembled by the normal"):
        _open(str(db), HashingEmbedder(32), "traces", CONVO)
    assert not (db / "traces.lance").exists()
    store, _ = _open(str(db), HashingEmbedder(32), "traces", [make_trace("a", "no thread here")])  # no threads: on
    assert store.table() is not None


def test_status_and_home_say_the_recorded_context_setting(tmp_path):
    ws = ws_at(tmp_path / "db")
    ws.ingest(CONVO)
    assert ws.status()["context"] == ON.describe()
    ws.set_context(ContextSetting())
    assert ws_at(tmp_path / "db").status()["context"] == "off (each trace indexed as its own text)"
