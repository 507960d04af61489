"""Inspecting an existing LanceDB table in place: foreign column names, defaults, read-only, no copy."""
from __future__ import annotations

from datetime import datetime, UTC

import pytest

from conftest import CORPUS, NOW
from retrieval.cli.main import main
from retrieval.store.columns import DEFAULT_TIME, ColumnMap
from retrieval.models import HashingEmbedder
from retrieval.types import Scope
from retrieval.workspace.core import Workspace

EMB = HashingEmbedder(64)
MAPPING = "id=doc_key,text=body,vector=emb,scope_id=tenant,created_at=ts"
ACME, GLOBEX = Scope("user", "acme"), Scope("user", "globex")


def make_foreign(tmp_path, emb=EMB) -> str:
    """A team's own table: other names, epoch-second timestamps, no scope kind, a valence column."""
    import lancedb
    import pyarrow as pa

    rows = [(tid, text, "acme" if sid == "u1" else "globex", days) for tid, text, sid, days in CORPUS]
    vecs = emb.embed([r[1] for r in rows])
    table = pa.table({
        "doc_key": [r[0] for r in rows], "body": [r[1] for r in rows], "tenant": [r[2] for r in rows],
        "ts": [int(NOW.timestamp()) - 86400 * r[3] for r in rows], "valence": [0.5] * len(rows),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), emb.dim),
    })
    uri = str(tmp_path / "theirs")
    lancedb.connect(uri).create_table("notes", data=table)
    return uri


@pytest.fixture
def foreign(tmp_path):
    return make_foreign(tmp_path)


def open_ws(uri, **kw):
    return Workspace(uri, embedder=EMB, clock=lambda: NOW, fact_extractor=None, table="notes",
                     columns=ColumnMap.parse(MAPPING), **kw)


def test_rows_read_through_the_mapping_with_documented_defaults(foreign):
    ws = open_ws(foreign)
    assert ws.store.count() == 8 and ws.store.read_only and ws.read_only
    t = ws.store.get(["flight"])[0]
    assert (t.content, t.scope, t.scope_id, t.valence) == (CORPUS[4][1], "user", "acme", 0.5)
    assert t.created_at == datetime(2026, 2, 24, 12, 0, tzinfo=UTC) and t.last_accessed_at == t.created_at
    assert (t.type, t.confidence, t.encoding_strength, t.is_active, t.tags) == ("episodic", 1.0, 0.5, True, ())
    assert ws.store.scope_counts() == {ACME: 7, GLOBEX: 1}
    assert ws.store.count(scope=GLOBEX) == 1 and ws.store.count(scope=Scope("thread", "acme")) == 0
    assert [x.id for x in ws.store.browse(scope=ACME, contains="INV-8842")] == ["inv", "old"]


def test_hybrid_retrieval_over_the_table_in_place(foreign):
    ws = open_ws(foreign)
    progress = []
    ws.progress = lambda d, t: progress.append((d, t))
    res = ws.retriever(fact_store=None).retrieve("refund for invoice INV-8842", scope=ACME)
    assert progress[-1] == (8, 8)  # BM25 built in memory from the table, with progress
    assert res.traces[0].id == "inv" and "other" not in {t.id for t in res.traces}
    assert ws.bm25_path is None


def test_writes_refuse_and_nothing_is_copied_or_written(foreign, tmp_path):
    import lancedb

    before = sorted(p.name for p in (tmp_path / "theirs").iterdir())
    version = lancedb.connect(foreign).open_table("notes").version
    ws = open_ws(foreign)
    ws.retriever(fact_store=None).retrieve("refund", scope=ACME)
    for write in (lambda: ws.ingest([ws.store.get(["inv"])[0]]), lambda: ws.delete(["inv"]),
                  lambda: ws.set_active(["inv"], False), lambda: ws.set_analyzer("english-stem")):
        with pytest.raises(ValueError, match="'notes' is read-only"):
            write()
    assert lancedb.connect(foreign).open_table("notes").version == version
    assert sorted(p.name for p in (tmp_path / "theirs").iterdir()) == before  # no traces table, sidecar, journal


def test_missing_timestamp_and_scope_columns_take_defaults(foreign):
    ws = Workspace(foreign, embedder=EMB, table="notes", fact_extractor=None,
                   columns=ColumnMap.parse("id=doc_key,text=body,vector=emb"))
    t = ws.store.get(["inv"])[0]
    assert (t.scope, t.scope_id, t.created_at) == ("user", "default", DEFAULT_TIME)
    assert ws.store.count(scope=Scope("user", "default")) == 8 and ws.store.count(scope=ACME) == 0


def test_bad_mappings_are_explained(foreign):
    with pytest.raises(ValueError, match="table has no column 'content' for text; columns: body, doc_key"):
        Workspace(foreign, embedder=EMB, table="notes", columns=ColumnMap.parse("id=doc_key,vector=emb")).store.count()
    with pytest.raises(ValueError, match="column mapping key 'body' is not one of"):
        ColumnMap.parse("body=text")
    with pytest.raises(ValueError, match="has no table 'nope'"):
        Workspace(foreign, embedder=EMB, table="nope", columns=ColumnMap.parse(MAPPING)).store.count()
    with pytest.raises(ValueError, match=r"opened with hashing \(32-d\)"):
        Workspace(foreign, embedder=HashingEmbedder(32), table="notes", columns=ColumnMap.parse(MAPPING)).store.count()


def test_fts_needs_an_index_on_a_read_only_table_and_uses_one_that_exists(foreign):
    import lancedb

    ws = open_ws(foreign, sparse="fts")
    with pytest.raises(ValueError, match="has no full-text index on 'body'"):
        ws.bm25.search("refund", scopes=[ACME])
    from retrieval.sparse.fts import fts_config

    lancedb.connect(foreign).open_table("notes").create_index("body", config=fts_config("plain"))
    ws = open_ws(foreign, sparse="fts")
    assert [i for i, _ in ws.bm25.search("refund invoice", scopes=[ACME])] == ["inv", "billing", "old"]


def test_cli_query_with_table_and_columns(tmp_path, capsys):
    uri = make_foreign(tmp_path, HashingEmbedder(384))  # the CLI's `hashing` is 384-d
    flags = ["--db", uri, "--table", "notes", "--columns", MAPPING, "--embedder", "hashing"]
    assert main(["query", "refund for invoice INV-8842", "--scope", "user:acme", "--json", *flags]) == 0
    assert capsys.readouterr().out.index('"id": "inv"') > 0
    assert main(["status", *flags]) == 0
    out = capsys.readouterr().out
    assert '"in_place": true' in out and '"read_only": true' in out and '"traces": 8' in out
    with pytest.raises(ValueError,
                       match=r"built with embedder unrecorded \(384-d\) but is opened with hashing \(64-d\)"):
        Workspace(uri, embedder=EMB, table="notes", columns=ColumnMap.parse(MAPPING)).store.count()
