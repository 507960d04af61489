"""BM25Index against a plain reference of the SPEC §3 formula, rank_bm25, and its own contracts."""
from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval import BM25Index, Scope
from retrieval.bm25 import default_tokenizer

U1, U2 = Scope("user", "u1"), Scope("user", "u2")


def reference_scores(docs: dict[str, str], query: str, k1=1.2, b=0.75) -> dict[str, float]:
    """Straightforward SPEC §3 BM25: a loop over documents, nothing shared with the index."""
    toks = {i: default_tokenizer(t) for i, t in docs.items()}
    n = len(toks)
    avgdl = sum(len(t) for t in toks.values()) / n
    df = Counter(term for t in toks.values() for term in set(t))
    out = {}
    for i, dt in toks.items():
        tf = Counter(dt)
        s = 0.0
        for q in default_tokenizer(query):  # not de-duplicated
            if tf[q]:
                idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
                s += idf * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(dt) / avgdl))
        if s > 0:
            out[i] = s
    return out


WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "8842", "inv"]
doc_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(doc_text, min_size=1, max_size=25), query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
def test_matches_reference_formula_on_random_corpora(docs, query):
    corpus = {f"d{i:02d}": t for i, t in enumerate(docs)}
    idx = BM25Index()
    idx.add_documents(corpus.items())
    q = " ".join(query)
    got = idx.search(q, top_k=100)
    ref = reference_scores(corpus, q)
    assert [i for i, _ in got] == sorted(ref, key=lambda i: (-ref[i], i))
    for i, s in got:
        assert s == pytest.approx(ref[i], rel=1e-9)


def test_parity_with_rank_bm25_using_the_same_idf():
    from rank_bm25 import BM25Okapi

    class SameIdf(BM25Okapi):  # rank_bm25 floors negative idf; give it the +1 form of SPEC §3
        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choices(vocab, weights=[1 / (r + 1) for r in range(300)], k=rng.randint(5, 40)))
             for _ in range(400)]
    ours = BM25Index()
    ours.add_documents((f"d{i:03d}", t) for i, t in enumerate(texts))
    ref = SameIdf([default_tokenizer(t) for t in texts], k1=1.2, b=0.75)
    for q in ["w1 w7 w150", "w3 w3 w42", "w299 w0"]:
        expect = ref.get_scores(default_tokenizer(q))
        got = dict(ours.search(q, top_k=400))
        for i, s in enumerate(expect):
            assert got.get(f"d{i:03d}", 0.0) == pytest.approx(s, rel=1e-9, abs=1e-12)


def test_large_candidate_sets_take_the_exact_top_k():
    # > 4096 matching documents exercises the sampled pre-filter in search(); it must stay exact.
    rng = random.Random(11)
    words = [f"t{i}" for i in range(40)]
    corpus = {f"d{i:05d}": "common " + " ".join(rng.choices(words, k=rng.randint(1, 12))) for i in range(6000)}
    idx = BM25Index()
    idx.add_documents(corpus.items())
    for q in ["common t1 t2", "common", "t3 t3 common t39"]:
        ref = reference_scores(corpus, q)
        expect = sorted(ref, key=lambda i: (-ref[i], i))[:25]
        got = idx.search(q, top_k=25)
        assert [i for i, _ in got] == expect
        assert [s for _, s in got] == pytest.approx([ref[i] for i in expect], rel=1e-12)


def test_golden_two_documents_by_hand():
    idx = BM25Index()
    idx.add_documents([("a", "refund invoice 8842"), ("b", "refund help")])
    # N=2, avgdl=2.5; "8842": df=1 → idf=ln(1+1.5/1.5)=ln 2; a: dl=3, tf=1
    # term = ln2 * 2.2 / (1 + 1.2*(0.25+0.75*3/2.5)) = ln2*2.2/2.38
    # "refund": df=2 → idf=ln(1+0.5/2.5)=ln 1.2; a: ln1.2*2.2/2.38, b: ln1.2*2.2/(1+1.2*(0.25+0.75*0.8))=ln1.2*2.2/2.02
    got = idx.search("refund 8842", top_k=5)
    assert [i for i, _ in got] == ["a", "b"]
    assert got[0][1] == pytest.approx((math.log(2) + math.log(1.2)) * 2.2 / 2.38)
    assert got[1][1] == pytest.approx(math.log(1.2) * 2.2 / 2.02)


def test_repeated_query_word_counts_twice():
    idx = BM25Index()
    idx.add_documents([("a", "alpha beta"), ("b", "gamma")])
    once = dict(idx.search("alpha"))["a"]
    assert dict(idx.search("alpha alpha"))["a"] == pytest.approx(2 * once)


def test_tokenizer_examples():
    assert default_tokenizer("INV-8842") == ["inv", "8842"]
    assert default_tokenizer("The café's Übermenschen, a b 42!") == ["café", "übermenschen", "42"]
    assert default_tokenizer("I am at the") == []


def test_only_matching_documents_sorted_with_id_ties():
    idx = BM25Index()
    idx.add_documents([("c", "twin words"), ("a", "twin words"), ("b", "twin words"), ("z", "other")])
    got = idx.search("twin", top_k=10)
    assert [i for i, _ in got] == ["a", "b", "c"]
    assert len({s for _, s in got}) == 1
    assert idx.search("nothing here") == []
    assert idx.search("") == []
    assert idx.search("twin", top_k=2) == got[:2]


def test_top_k_boundary_ties_break_by_id():
    idx = BM25Index()
    idx.add_documents([(f"d{i}", "tie word") for i in (5, 3, 9, 1)] + [("top", "tie tie word")])
    assert [i for i, _ in idx.search("tie", top_k=3)] == ["top", "d1", "d3"]


def test_incremental_add_and_remove_equal_a_fresh_build():
    rng = random.Random(3)
    texts = {f"d{i}": " ".join(rng.choices(WORDS, k=rng.randint(1, 10))) for i in range(60)}
    inc = BM25Index()
    for i, (k, t) in enumerate(texts.items()):
        inc.add_document(k, t)
        if i % 7 == 0:
            inc.search("alpha")  # interleave searches with adds
    for k in ["d3", "d10", "d59"]:
        assert inc.remove_document(k)
    assert not inc.remove_document("d3")
    inc.add_document("d10", "alpha alpha kappa")  # re-add a removed id
    inc.add_document("d11", "beta")  # re-adding an id replaces it
    fresh_docs = {k: t for k, t in texts.items() if k not in ("d3", "d59")}
    fresh_docs["d10"], fresh_docs["d11"] = "alpha alpha kappa", "beta"
    fresh = BM25Index()
    fresh.add_documents(fresh_docs.items())
    for q in ["alpha", "beta gamma", "kappa 8842 inv", "zeta eta theta"]:
        a, b = inc.search(q, top_k=100), fresh.search(q, top_k=100)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert np.allclose([s for _, s in a], [s for _, s in b])
    assert len(inc) == len(fresh_docs)


def test_scope_filter_never_leaks_and_stats_stay_global():
    idx = BM25Index()
    idx.add_document("a", "invoice 8842", U1)
    idx.add_document("b", "invoice 8842", U2)
    idx.add_document("c", "invoice 8842")
    assert [i for i, _ in idx.search("8842", scopes=[U1])] == ["a"]
    assert [i for i, _ in idx.search("8842", scopes=[U1, U2])] == ["a", "b"]
    assert [i for i, _ in idx.search("8842")] == ["a", "b", "c"]
    assert idx.search("8842", scopes=[Scope("user", "nobody")]) == []
    # N and df are global: a scoped score equals the unscoped one.
    assert dict(idx.search("8842", scopes=[U1]))["a"] == pytest.approx(dict(idx.search("8842"))["a"])


def test_explain_sums_to_the_score():
    idx = BM25Index()
    idx.add_documents([("a", "refund invoice 8842 refund"), ("b", "refund help"), ("c", "unrelated")])
    parts = idx.explain("refund 8842 missing", "a")
    assert set(parts) == {"refund", "8842", "missing"}
    assert parts["missing"] == 0.0
    assert sum(parts.values()) == pytest.approx(dict(idx.search("refund 8842 missing"))["a"])
    with pytest.raises(KeyError, match="nope"):
        idx.explain("x", "nope")
    many = idx.scores_for("refund 8842 missing", ["a", "b", "c", "nope"])
    assert set(many) == {"a", "b", "c"} and many["c"] == 0.0
    assert many["a"] == pytest.approx(sum(parts.values())) and many["b"] == pytest.approx(idx.score("refund 8842", "b"))


def test_save_and_load_round_trip(tmp_path):
    idx = BM25Index(k1=1.5, b=0.6)
    idx.add_documents([("a", "alpha beta", U1), ("b", "beta gamma", U2), ("c", "gamma")])
    idx.remove_document("b")
    idx.save(tmp_path / "bm25.npz")
    back = BM25Index.load(tmp_path / "bm25.npz")
    assert (back.k1, back.b, len(back)) == (1.5, 0.6, 2)
    for q in ["alpha", "gamma", "beta"]:
        assert back.search(q) == idx.search(q)
    assert back.search("alpha", scopes=[U1]) == [("a", idx.search("alpha")[0][1])]
    back.add_document("d", "alpha")  # still incremental after loading
    assert {i for i, _ in back.search("alpha")} == {"a", "d"}


def test_load_rejects_a_foreign_file(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not an index")
    with pytest.raises(ValueError, match="rebuild"):
        BM25Index.load(bad)


@pytest.mark.parametrize("k1,b", [(-1, 0.75), (1.2, 1.5)])
def test_rejects_bad_parameters(k1, b):
    with pytest.raises(ValueError, match="k1|b must"):
        BM25Index(k1=k1, b=b)
