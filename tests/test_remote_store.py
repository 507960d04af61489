"""A store on S3 (moto's server mode, started here on 127.0.0.1): storage options from the environment,
identity, BM25 built in memory on open with progress, FTS, reembed. Skipped only where moto cannot
start — never under CI=true."""
from __future__ import annotations


import pytest

from conftest import NOW, U1, U2, make_trace
from s3server import moto_s3
from retrieval.models import HashingEmbedder
from retrieval.store.remote import storage_options_from_env
from retrieval.store.identity import StoreIdentity
from retrieval.workspace.core import Workspace

BUCKET = "memories"


@pytest.fixture(scope="module")
def s3_endpoint():
    with moto_s3(BUCKET) as url:
        yield url


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch, request):
    for k, v in {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                 "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    return f"s3://{BUCKET}/{request.node.name}"


def test_storage_options_come_from_the_environment():
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
           "AWS_REGION": "eu-west-1", "LANCEDB_STORAGE_OPTIONS": '{"timeout": "30s"}'}
    assert storage_options_from_env("s3://b/db", env) == {
        "aws_endpoint": "http://127.0.0.1:9000", "aws_access_key_id": "k", "aws_secret_access_key": "s",
        "aws_region": "eu-west-1", "allow_http": "true", "timeout": "30s"}
    assert storage_options_from_env("data/lancedb", env) is None
    assert storage_options_from_env("az://c/db", {"AZURE_STORAGE_ACCOUNT_NAME": "a"}) == {
        "azure_storage_account_name": "a"}
    with pytest.raises(ValueError, match="LANCEDB_STORAGE_OPTIONS is not a JSON object"):
        storage_options_from_env("gs://b/db", {"LANCEDB_STORAGE_OPTIONS": "{oops"})


def test_a_store_on_s3_round_trips_with_bm25_built_in_memory(s3_env, traces):
    ws = Workspace(s3_env, embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None)
    assert ws.store.storage_options["aws_endpoint"].startswith("http://127.0.0.1:")
    assert ws.ingest(traces).written == 8
    assert ws.bm25_path is None

    progress = []
    again = Workspace(s3_env, clock=lambda: NOW, fact_extractor=None, progress=lambda d, t: progress.append((d, t)))
    assert again.store.identity() == StoreIdentity("hashing", 64, "english-stem", "scope")
    res = again.retriever(fact_store=None).retrieve("refund for invoice INV-8842", scope=U1)
    assert progress[-1] == (7, 7)  # built in memory on open, with progress
    assert res.traces[0].id == "inv" and "other" not in {t.id for t in res.traces}
    assert again.store.count(scope=U2) == 1
    again.ingest([make_trace("kayak", "Kayak rental by the river", "u1")])
    third = Workspace(s3_env, clock=lambda: NOW, fact_extractor=None)
    assert [i for i, _ in third.bm25.search("kayak", scopes=[U1])] == ["kayak"]
    with pytest.raises(ValueError, match=r"opened with hashing \(32-d\)"):
        Workspace(s3_env, embedder=HashingEmbedder(32)).store.count()


def test_fts_and_reembed_on_s3(s3_env, traces):
    from retrieval.store.reembed import reembed

    ws = Workspace(s3_env, embedder=HashingEmbedder(64), clock=lambda: NOW, fact_extractor=None, sparse="fts")
    ws.ingest(traces)
    assert [i for i, _ in ws.bm25.search("refund invoice", scopes=[U1])] == ["inv", "billing"]
    out = reembed(ws.store, HashingEmbedder(32))
    assert out["rows"] == 8
    fresh = Workspace(s3_env, clock=lambda: NOW, fact_extractor=None, sparse="fts")
    assert fresh.store.identity().dim == 32
    assert fresh.retriever(fact_store=None).retrieve("refund invoice", scope=U1).traces[0].id == "inv"


def test_facts_audit_and_judgments_live_on_s3_beside_the_traces(s3_env):
    """The side tables open with the store's storage options: facts on, a grade, the audit log."""
    from retrieval.judgments import JudgmentStore

    ws = Workspace(s3_env, embedder=HashingEmbedder(64), clock=lambda: NOW)
    ws.ingest([make_trace("home", "I live in Lisbon.", scope_id="u1")])
    assert ws.facts.count() == 1
    JudgmentStore(ws.uri, storage_options=ws.store.storage_options).set_grade(U1, "where do I live", "home", 3)
    again = Workspace(s3_env, clock=lambda: NOW)  # a fresh process's view
    assert again.facts.latest(U1, "user", "livesIn").object == "Lisbon"
    assert [e.action for e in again.audit.entries()][:2] == ["grade", "ingest"]
    assert JudgmentStore(again.uri).grades(U1, "where do I live")["human"] == {"home": 3}
