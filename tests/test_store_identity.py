"""Store identity (SPEC §15): embedder name + dim and BM25 analyzer recorded in the table; reembed; analyzer."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import NOW, U1
from retrieval.bm25.tokenizer import analyzer_of
from retrieval.cli.main import main
from retrieval.models import HashingEmbedder
from retrieval.store.memory import MemoryStore
from retrieval.store.identity import KEY_ANALYZER, KEY_STATISTICS, KEY_DIM, KEY_EMBEDDER, StoreIdentity
from retrieval.workspace.core import Workspace


class OtherEmbedder(HashingEmbedder):
    """Same dimension as hashing, another model: must still be refused."""

    name = "other-model"

    def embed(self, texts):
        return super().embed([t[::-1] for t in texts])


class FailingEmbedder(HashingEmbedder):
    name = "flaky"

    def __init__(self, dim, fail_after):
        super().__init__(dim)
        self.calls, self.fail_after = 0, fail_after

    def embed(self, texts):
        self.calls += 1
        if self.calls > self.fail_after:
            raise RuntimeError("model server went away")
        return super().embed(texts)


@pytest.fixture
def built(tmp_path, traces):
    uri = str(tmp_path / "db")
    ws = Workspace(uri, embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None)
    ws.ingest(traces)
    return uri


def test_new_store_records_embedder_dim_and_analyzer_in_table_metadata(built):
    import lancedb

    meta = lancedb.connect(built).open_table("traces").schema.field("vector").metadata
    assert meta[KEY_EMBEDDER.encode()] == b"hashing"
    assert meta[KEY_DIM.encode()] == b"64"
    assert meta[KEY_ANALYZER.encode()] == b"english-stem"  # what a new store records
    assert meta[KEY_STATISTICS.encode()] == b"scope"
    assert MemoryStore(built).identity() == StoreIdentity("hashing", 64, "english-stem", "scope")


def test_another_embedder_of_the_same_dimension_is_refused_naming_both(built):
    with pytest.raises(ValueError,
                       match=r"built with embedder hashing \(64-d\) but is opened with other-model \(64-d\)"):
        MemoryStore(built, embedder=OtherEmbedder(64)).count()


def test_another_dimension_is_refused_naming_both(built):
    with pytest.raises(ValueError, match=r"built with embedder hashing \(64-d\) but is opened with hashing \(32-d\)"):
        Workspace(built, embedder=HashingEmbedder(32)).store.count()


def test_opening_without_an_embedder_uses_the_recorded_one(built):
    ws = Workspace(built, clock=lambda: NOW, fact_extractor=None)
    emb = ws.store.embedder
    assert (emb.name, emb.dim) == ("hashing", 64)
    hits = ws.retriever(fact_store=None).retrieve("refund invoice INV-8842", scope=U1)
    assert hits.traces[0].id == "inv"
    assert ws.status()["embedder"] == "hashing" and ws.status()["dim"] == 64


def test_a_store_from_before_identities_records_it_on_the_next_write(tmp_path, traces):
    import lancedb

    from retrieval.store.rows import schema

    uri = str(tmp_path / "old")
    lancedb.connect(uri).create_table("traces", schema=schema(64))  # no metadata
    s = MemoryStore(uri, embedder=HashingEmbedder(64))
    assert s.identity() == StoreIdentity(None, 64, "plain")
    s.add(traces[:2])
    assert MemoryStore(uri).identity() == StoreIdentity("hashing", 64, "plain")


def test_set_analyzer_records_it_and_rebuilds_bm25_with_stemming(built):
    ws = Workspace(built, fact_extractor=None)
    ws.set_analyzer("plain")
    assert ws.bm25.search("invoices", scopes=[U1]) == []  # plain: no stemming
    calls = []
    ws.set_analyzer("english-stem", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1] == (7, 7)
    assert [i for i, _ in ws.bm25.search("invoices", scopes=[U1])][:1] == ["inv"]
    again = Workspace(built, fact_extractor=None)  # the sidecar is reused with the recorded analyzer
    assert again.store.identity().analyzer == "english-stem"
    assert analyzer_of(again.bm25.tokenizer) == "english-stem"
    assert again.status()["in_step"] and again.status()["analyzer"] == "english-stem"
    with pytest.raises(ValueError, match="analyzer 'porter' is not one of plain, english-stem"):
        again.set_analyzer("porter")


def test_reembed_replaces_every_vector_and_the_identity(built):
    before = MemoryStore(built).all_traces()
    new = HashingEmbedder(32)
    from retrieval.store.reembed import reembed

    seen = []
    out = reembed(MemoryStore(built), new, progress=lambda d, t: seen.append((d, t)), batch_size=3)
    assert out["rows"] == 8 and seen[-1] == (8, 8) and len(seen) == 3
    s = MemoryStore(built)
    assert s.identity() == StoreIdentity("hashing", 32, "english-stem", "scope")  # BM25 statistics kept
    assert sorted(s.all_traces(), key=lambda t: t.id) == sorted(before, key=lambda t: t.id)
    got = s.get_with_vectors(["inv"], active_only=False)["inv"][1]
    np.testing.assert_allclose(got, new.embed([before[[t.id for t in before].index("inv")].content])[0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"hashing \(32-d\) but is opened with hashing \(64-d\)"):
        MemoryStore(built, embedder=HashingEmbedder(64)).count()
    assert "traces__reembed" not in s.db.table_names()


def test_a_reembed_that_fails_midway_leaves_the_store_as_it_was(built):
    from retrieval.store.reembed import reembed

    s = MemoryStore(built)
    version = s.version()
    with pytest.raises(RuntimeError, match="model server went away"):
        reembed(s, FailingEmbedder(64, fail_after=1), batch_size=3)
    after = MemoryStore(built)
    assert after.identity() == StoreIdentity("hashing", 64, "english-stem", "scope")
    assert after.version() == version and after.count() == 8
    assert "traces__reembed" not in after.db.table_names()
    ws = Workspace(built, embedder=HashingEmbedder(64), fact_extractor=None)
    assert ws.retriever(fact_store=None).retrieve("refund invoice", scope=U1).traces[0].id == "inv"


def test_cli_reembed_analyzer_and_status_default_to_the_recorded_embedder(built, capsys):
    assert main(["status", "--db", built]) == 0
    assert '"embedder": "hashing"' in capsys.readouterr().out
    assert main(["reembed", "--embedder", "hashing", "--db", built]) == 0  # the CLI's hashing is 384-d
    out = capsys.readouterr()
    assert "re-embedded 8 trace(s)" in out.out and "hashing (384-d)" in out.out and "8/8" in out.err
    assert main(["analyzer", "english-stem", "--db", built]) == 0
    assert MemoryStore(built).identity() == StoreIdentity("hashing", 384, "english-stem", "scope")
    assert main(["query", "invoices", "--db", built, "--scope", "user:u1", "--json"]) == 0
    assert '"id": "inv"' in capsys.readouterr().out


def test_cli_refuses_a_mismatched_embedder(built, capsys):
    assert main(["status", "--db", built, "--embedder", "hashing"]) == 2  # 384-d hashing vs the stored 64-d
    assert "built with embedder hashing (64-d) but is opened with hashing (384-d)" in capsys.readouterr().err
