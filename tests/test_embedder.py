"""The bundled MiniLM loads offline and embeds sensibly (the first real-model test)."""
import os

import numpy as np
import pytest

from retrieval.models import HashingEmbedder, SentenceTransformerEmbedder


@pytest.mark.slow
def test_bundled_minilm_embeds_offline_and_similar_beats_unrelated():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    emb = SentenceTransformerEmbedder()
    v = emb.embed(["The invoice was refunded yesterday.", "Yesterday the bill was paid back.",
                   "Penguins live in Antarctica."])
    assert v.shape == (3, 384) and emb.dim == 384
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_hashing_embedder_is_deterministic_and_normalised():
    a, b = HashingEmbedder(32), HashingEmbedder(32)
    va, vb = a.embed(["same words here", "other"]), b.embed(["same words here", "other"])
    assert np.array_equal(va, vb)
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0)
    assert a.embed([]).shape == (0, 32)


def test_names_are_stable_identities_and_queries_embed_like_documents(tmp_path):
    import pytest

    assert SentenceTransformerEmbedder().name == "minilm" and SentenceTransformerEmbedder().dim == 384
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert SentenceTransformerEmbedder(str(folder)).name == f"st:{folder.resolve()}"
    assert SentenceTransformerEmbedder(tmp_path / "." / "my-model").name == f"st:{folder.resolve()}"
    with pytest.raises(ValueError, match="no such folder"):
        SentenceTransformerEmbedder(tmp_path / "missing")
    h = HashingEmbedder(32)
    assert h.name == "hashing" and np.array_equal(h.embed_query(["a b"]), h.embed(["a b"]))
