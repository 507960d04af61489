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
from retrieval.bm25.index import default_tokenizer

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


# ---------------------------------------------------------------- token-less documents
def test_documents_without_an_indexable_word_never_crash(tmp_path):
    idx = BM25Index()
    idx.add_documents([("a", "refund"), ("b", "👍"), ("c", "!!!"), ("d", "")])
    assert len(idx) == 4 and "b" in idx
    assert idx.search("👍") == [] and idx.search("!!!") == []
    # N counts token-less documents (they are documents); avgdl = 1/4
    assert idx.search("refund") == [("a", pytest.approx(math.log(1 + 3.5 / 1.5) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4))))]
    assert idx.explain("refund", "b") == {"refund": 0.0}
    idx.save(tmp_path / "x.npz")
    back = BM25Index.load(tmp_path / "x.npz")
    assert len(back) == 4 and back.search("refund") == idx.search("refund")


def test_only_tokenless_documents_then_all_deleted_saves_and_reopens(tmp_path):
    idx = BM25Index()
    idx.add_documents([("b", "👍"), ("c", "!!!")])
    assert idx.search("anything") == [] and idx.stats()["avgdl"] == 0.0
    assert idx.remove_documents(["b", "c", "nope"]) == 2
    idx.save(tmp_path / "x.npz")
    back = BM25Index.load(tmp_path / "x.npz")
    assert len(back) == 0 and back.search("refund") == [] and back.stats()["postings"] == 0
    back.add_document("a", "refund")
    assert [i for i, _ in back.search("refund")] == ["a"]


# ---------------------------------------------------------------- tokenizer (Unicode)
def test_tokenizer_normalises_unicode_examples():
    assert default_tokenizer("INV-8842") == ["inv", "8842"]
    assert default_tokenizer("cafe\u0301") == default_tokenizer("café") == ["café"]  # NFD == NFC
    assert default_tokenizer("ＩＮＶ－８８４２") == ["inv", "8842"]  # full-width
    assert default_tokenizer("re\u200bfund in\u00advoice\ufeff") == ["refund", "invoice"]  # ZWSP, soft hyphen, BOM
    assert default_tokenizer("STRASSE Straße") == ["strasse", "strasse"]  # casefold
    assert default_tokenizer("ﬁnance") == ["finance"]  # ligature


_INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff"]
_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Co", "Cn")), max_size=40)


@settings(max_examples=300, deadline=None)
@given(text=_text)
def test_tokenizer_is_invariant_under_normal_forms(text):
    import unicodedata

    base = default_tokenizer(text)
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert default_tokenizer(unicodedata.normalize(form, text)) == base
    assert default_tokenizer(base and " ".join(base) or "") == base  # tokens are stable


@settings(max_examples=200, deadline=None)
@given(text=_text, data=st.data())
def test_tokenizer_ignores_invisible_characters(text, data):
    pos = data.draw(st.integers(0, len(text)))
    inv = data.draw(st.sampled_from(_INVISIBLES))
    assert default_tokenizer(text[:pos] + inv + text[pos:]) == default_tokenizer(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=30))
def test_full_width_ascii_matches_ascii(text):
    wide = "".join(chr(ord(c) + 0xFEE0) for c in text)  # U+FF01..U+FF5E
    assert default_tokenizer(wide) == default_tokenizer(text)


def test_tokenizer_identity_is_checked_on_load(tmp_path):
    def other(text):
        return text.split()

    idx = BM25Index(tokenizer=other)
    idx.add_document("a", "Alpha beta")
    idx.save(tmp_path / "x.npz")
    with pytest.raises(ValueError, match="tokenizer .*other.*rebuild"):
        BM25Index.load(tmp_path / "x.npz")
    assert BM25Index.load(tmp_path / "x.npz", tokenizer=other).search("Alpha")[0][0] == "a"


@pytest.mark.parametrize("damage", ["truncate", "no_k1", "old_format", "bad_tids", "empty"])
def test_load_rejects_damaged_sidecars_with_value_error(tmp_path, damage):
    import json

    path = tmp_path / "x.npz"
    idx = BM25Index()
    idx.add_documents([("a", "alpha beta"), ("b", "beta gamma")])
    idx.save(path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with np.load(path) as d:
            arrays = {k: d[k] for k in d.files}
        meta = json.loads(bytes(arrays["meta"]).decode())
        if damage == "no_k1":
            del meta["k1"]
        elif damage == "old_format":
            meta["format"] = 1
        else:
            arrays["tids"] = arrays["tids"] + 99
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    with pytest.raises(ValueError, match="rebuild"):
        BM25Index.load(path)


# ---------------------------------------------------------------- snapshots, sync, batches
def test_a_snapshot_is_immutable_while_the_index_moves_on():
    idx = BM25Index()
    idx.add_documents([("a", "alpha beta", U1), ("b", "alpha", U2), ("c", "gamma", U1)])
    snap = idx.snapshot()
    before = snap.search("alpha", top_k=10)
    before_scores = snap.scores_for("alpha gamma", ["a", "b", "c"])
    idx.remove_document("b")
    idx.add_document("a", "delta", U1)  # re-added with other text
    idx.add_documents([(f"n{i}", "alpha alpha") for i in range(50)])
    assert snap.search("alpha", top_k=10) == before and len(snap) == 3
    assert snap.scores_for("alpha gamma", ["a", "b", "c"]) == before_scores
    assert "b" in snap and "n0" not in snap and snap.explain("alpha", "a")["alpha"] > 0
    assert snap.search("delta") == [] and [i for i, _ in idx.search("delta")] == ["a"]
    assert "b" not in idx and len(idx) == 52
    assert idx.snapshot().version > snap.version


def test_sync_is_one_batch_with_inactive_removed_and_complete_resync():
    from conftest import make_trace

    idx = BM25Index()
    idx.sync([make_trace("a", "alpha"), make_trace("b", "beta", "u2"), make_trace("c", "gamma")])
    v = idx.snapshot().version
    idx.sync([make_trace("a", "alpha"), make_trace("b", "beta", "u2", is_active=False),
              make_trace("c", "gamma"), make_trace("c", "delta")])  # last c wins
    assert idx.snapshot().version == v + 1  # one batch, one version
    assert "b" not in idx and idx.search("gamma") == [] and [i for i, _ in idx.search("delta")] == ["c"]
    idx.sync([make_trace("c", "delta")], complete=True)
    assert len(idx) == 1 and "a" not in idx
    fresh = BM25Index()
    fresh.add_document("c", "delta", U1)
    assert idx.search("delta", scopes=[U1]) == fresh.search("delta", scopes=[U1])


def test_many_updates_compact_and_still_equal_a_fresh_build():
    rng = random.Random(5)
    idx = BM25Index()
    current = {}
    for step in range(5000):  # ~4,900 dead slots: at least one compaction into a fresh arena
        k = f"d{rng.randrange(60)}"
        current[k] = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
        idx.add_document(k, current[k])
        if step % 997 == 0:
            gone = f"d{rng.randrange(60)}"
            idx.remove_document(gone)
            current.pop(gone, None)
    fresh = BM25Index()
    fresh.add_documents(current.items())
    assert len(idx) == len(fresh) and idx.stats()["postings"] == fresh.stats()["postings"]
    for q in ["alpha", "beta gamma", "kappa 8842 inv", "zeta eta theta iota"]:
        a, b = idx.search(q, top_k=100), fresh.search(q, top_k=100)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "remove", "batch"]), st.integers(0, 9), doc_text), max_size=40),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_random_add_remove_sequences_match_the_reference(ops, query):
    idx, corpus = BM25Index(), {}
    for op, k, text in ops:
        key = f"d{k}"
        if op == "add":
            idx.add_document(key, text)
            corpus[key] = text
        elif op == "remove":
            assert idx.remove_document(key) == (key in corpus)
            corpus.pop(key, None)
        else:
            idx.add_documents([(key, text), (f"d{(k + 1) % 10}", text + " eta")])
            corpus[key], corpus[f"d{(k + 1) % 10}"] = text, text + " eta"
    q = " ".join(query)
    ref = reference_scores(corpus, q) if corpus else {}
    got = idx.search(q, top_k=100)
    assert [i for i, _ in got] == sorted(ref, key=lambda i: (-ref[i], i))
    assert [s for _, s in got] == pytest.approx([ref[i] for i, _ in got], rel=1e-9)
    assert len(idx) == len(corpus)


def test_readers_never_see_a_half_applied_batch():
    """One writer adds/replaces/removes batches of 10; readers check every snapshot is whole."""
    import threading

    idx = BM25Index()
    errors, stop, corpus = [], threading.Event(), {}

    def writer():
        try:
            for i in range(150):
                batch = [(f"b{i}-{j}", f"common tag{i % 7} word{j}") for j in range(10)]
                idx.add_documents(batch)
                corpus.update(batch)
                if i % 3 == 0 and i:
                    idx.remove_documents([f"b{i - 1}-{j}" for j in range(10)])
                    for j in range(10):
                        corpus.pop(f"b{i - 1}-{j}", None)
                if i % 5 == 0 and "b0-0" in corpus:
                    replace = [(f"b0-{j}", f"common tag0 again{j}") for j in range(10)]
                    idx.add_documents(replace)
                    corpus.update(replace)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def reader():
        try:
            while not stop.is_set():
                snap = idx.snapshot()
                hits = snap.search("common", top_k=100_000)
                assert len(hits) == len(snap) and len(snap) % 10 == 0, (len(hits), len(snap))
                some = [i for i, _ in hits[:5]]
                assert set(snap.scores_for("common", some)) == set(some)
                for i in some:
                    snap.explain("common tag3", i)
                idx.search("tag3 word1", top_k=5, scopes=None)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    fresh = BM25Index()
    fresh.add_documents(corpus.items())
    assert len(idx) == len(fresh) == len(corpus) and idx.stats()["postings"] == fresh.stats()["postings"]
    for q in ["common", "tag3 word1", "again4 tag0", "word9 word9 tag6"]:
        a, b = idx.search(q, top_k=2000), fresh.search(q, top_k=2000)
        assert [i for i, _ in a] == [i for i, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 9), doc_text, st.sampled_from([None, U1, U2])),
                    max_size=30),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_a_saved_and_reloaded_index_scores_and_explains_exactly_the_same(tmp_path_factory, ops, query):
    """The bulk (vectorised) load path rebuilds exactly what the incremental path built."""
    idx = BM25Index()
    for add, k, text, scope in ops:
        if add:
            idx.add_document(f"d{k}", text, scope)
        else:
            idx.remove_document(f"d{k}")
    path = tmp_path_factory.mktemp("rt") / "bm25.npz"
    idx.save(path)
    back = BM25Index.load(path)
    q = " ".join(query)
    for scopes in (None, [U1], [U2, U1]):
        assert back.search(q, top_k=100, scopes=scopes) == idx.search(q, top_k=100, scopes=scopes)
    assert back.stats()["postings"] == idx.stats()["postings"] and len(back) == len(idx)
    for doc_id, _ in idx.search(q, top_k=100):
        assert back.explain_terms(q, doc_id) == idx.explain_terms(q, doc_id)


def test_a_format_2_sidecar_still_loads(tmp_path):
    """Format 2 (int64 term ids, float64 tfs) is read; saving writes the compact format 3."""
    import json

    meta = {"format": 2, "k1": 1.2, "b": 0.75, "tokenizer": __import__("retrieval.bm25.index",
                                                                       fromlist=["x"]).tokenizer_id(
        default_tokenizer), "terms": ["alpha", "beta"], "ids": ["a", "b"], "scopes": [["user", "u1"]], "source": None}
    path = tmp_path / "old.npz"
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), lens=np.array([2, 1], np.int64),
             tids=np.array([0, 1, 1], np.int64), tfs=np.array([1.0, 2.0, 1.0]), scope_code=np.array([0, -1], np.int32))
    old = BM25Index.load(path)
    fresh = BM25Index()
    fresh.add_documents([("a", "alpha beta beta", U1), ("b", "beta")])
    assert old.search("beta alpha") == fresh.search("beta alpha")
    assert old.search("alpha", scopes=[U1])[0][0] == "a"
    old.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as data:
        assert (data["tids"].dtype, data["tfs"].dtype) == (np.int32, np.float32)


@settings(max_examples=80, deadline=None)
@given(docs=st.lists(st.tuples(st.lists(st.sampled_from(WORDS[:6]) | st.sampled_from(WORDS), min_size=1, max_size=12),
                               st.sampled_from([None, U1, U2])), min_size=1, max_size=60),
       query=st.lists(st.sampled_from(WORDS), min_size=2, max_size=5), top_k=st.integers(1, 12),
       scoped=st.sampled_from([None, [U1], [U2, U1]]), removed=st.sets(st.integers(0, 59), max_size=10))
def test_pruned_search_equals_exhaustive_scoring(docs, query, top_k, scoped, removed):
    """MaxScore pruning (tried above a postings threshold, lowered here to 0) returns exactly the
    exhaustive top k: the same ids in the same order (ties by id) and the same score floats."""
    import retrieval.bm25.topk as topk

    idx = BM25Index()
    idx.add_documents([(f"d{i:02d}", " ".join(words), scope) for i, (words, scope) in enumerate(docs)])
    idx.remove_documents([f"d{i:02d}" for i in removed])
    q = " ".join(query)
    snap = idx.snapshot()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(topk, "PRUNE_MIN_POSTINGS", 10**12)
        m.setattr(topk, "SCOPE_EXACT_MAX", -1)
        exhaustive = snap.search(q, top_k, scoped)
    for scope_exact in (-1, 10**6):  # MaxScore for scoped queries too; the small-scope plan
        with pytest.MonkeyPatch.context() as m:
            m.setattr(topk, "PRUNE_MIN_POSTINGS", 0)
            m.setattr(topk, "SCOPE_EXACT_MAX", scope_exact)
            assert snap.search(q, top_k, scoped) == exhaustive
    for doc_id, score in exhaustive:
        assert score == idx.score(q, doc_id) == idx.scores_for(q, [doc_id])[doc_id]


def test_pruning_happens_and_skips_most_postings(monkeypatch):
    """A rare term beside a term in every document: the pruned path is taken and agrees."""
    import retrieval.bm25.topk as topk

    idx = BM25Index()
    idx.add_documents([(f"d{i}", "common " * (1 + i % 3) + ("rare" if i % 50 == 0 else "filler"))
                       for i in range(2000)])
    snap = idx.snapshot()
    calls = []
    real = topk.TopK._exact
    monkeypatch.setattr(topk.TopK, "_exact", lambda self, t, s, a: calls.append(len(s)) or real(self, t, s, a))
    monkeypatch.setattr(topk, "PRUNE_MIN_POSTINGS", 100)
    got = snap.search("rare common", 5)
    assert calls and calls[0] <= 40  # only the documents holding "rare" were scored in full
    monkeypatch.setattr(topk, "PRUNE_MIN_POSTINGS", 10**12)
    assert got == snap.search("rare common", 5)


_lines = st.lists(_text, min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_lines, min_size=1, max_size=6), analyzer=st.sampled_from(["plain", "english-stem"]),
       max_tokens=st.sampled_from([0, 3, 250_000]))
def test_line_by_line_tokens_equal_the_whole_texts_tokens(texts, analyzer, max_tokens):
    """A document read in its context is tokenised line by line, lines remembered (also across documents, and
    across the memo's generations): exactly the tokens of the whole text, for both store analysers."""
    from retrieval.bm25.tokenizer import LineTokens, make_tokenizer, reads_by_line

    tok = make_tokenizer(analyzer)
    assert reads_by_line(tok)
    lines = LineTokens(tok, max_tokens=max_tokens)
    for parts in texts + texts[::-1]:  # the second pass finds every line remembered (or evicted)
        text = "\n".join(parts)
        assert lines(text) == tok(text)
    assert not reads_by_line(lambda text: text.split())  # a tokenizer of the caller's own reads whole texts


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "remove", "batch"]), st.integers(0, 9),
                              st.lists(doc_text, min_size=1, max_size=4)), max_size=30),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_documents_of_several_lines_match_the_reference_and_number_terms_in_order(ops, query):
    """Documents of several lines (a trace and its neighbours' texts), written in batches: scores as the reference
    gives them, and every term numbered at its first occurrence (as one term at a time did), so a saved index is
    the same file."""
    idx, corpus, first = BM25Index(), {}, {}
    for op, k, parts in ops:
        key, text = f"d{k}", "\n".join(parts)
        if op == "remove":
            idx.remove_document(key)
            corpus.pop(key, None)
            continue
        batch = [(key, text)] if op == "add" else [(key, text), (f"d{(k + 1) % 10}", parts[-1] + "\neta " + text)]
        idx.add_documents(batch)
        for i, t in batch:
            corpus[i] = t
            first.update((term, None) for term in default_tokenizer(t) if term not in first)
    assert idx.snapshot().terms == list(first)
    q = " ".join(query)
    ref = reference_scores(corpus, q) if corpus else {}
    got = idx.search(q, top_k=100)
    assert [i for i, _ in got] == sorted(ref, key=lambda i: (-ref[i], i))
    assert [s for _, s in got] == pytest.approx([ref[i] for i, _ in got], rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=30), seed=st.integers(0, 2**16))
def test_posting_runs_hold_every_terms_postings_in_slot_order_for_every_version(sizes, seed):
    """A write's postings are one run (`bm25/arena.py` `PostingRuns`), merged with the runs before it while those are
    small: every term's first n postings are what it was given, in order, for the n of every earlier version too, and
    only about log2(postings) runs stay."""
    from retrieval.bm25.arena import PostingRuns

    rng = np.random.default_rng(seed)
    runs = PostingRuns()
    given_: dict[int, list[tuple[int, float]]] = {}
    versions: list[dict[int, int]] = []
    slot = 0
    for size in sizes:
        t = rng.integers(0, 12, size).astype(np.int32)
        d = np.arange(slot, slot + size, dtype=np.int32)
        f = rng.integers(1, 5, size).astype(np.float32)
        slot += size
        runs.append(t, d, f)
        for term, s, tf in zip(t.tolist(), d.tolist(), f.tolist()):
            given_.setdefault(term, []).append((s, tf))
        versions.append({term: len(p) for term, p in given_.items()})
        assert len(runs.runs) <= 1 + math.log2(runs.postings())
    for plen in [*versions[::-1], *versions]:  # newest first, then oldest first: joins of more and of fewer runs
        for term, n in plen.items():
            docs, tfs = runs.get(term, n)
            assert list(zip(docs.tolist(), tfs.tolist())) == given_[term][:n]


@settings(max_examples=30, deadline=None)
@given(batches=st.lists(st.lists(st.tuples(st.integers(0, 30), doc_text), min_size=1, max_size=12), min_size=1,
                        max_size=25),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_every_version_kept_through_many_writes_scores_as_the_reference(batches, query):
    """Writes of many sizes (their posting runs merged as they come): each version taken along the way still gives
    exactly the reference scores of the documents it held, after every later write."""
    idx, corpus, kept = BM25Index(), {}, []
    q = " ".join(query)
    for batch in batches:
        idx.add_documents([(f"d{k}", text) for k, text in batch])
        corpus.update((f"d{k}", text) for k, text in batch)
        kept.append((idx.snapshot(), dict(corpus)))
    for snap, docs in kept:
        ref = reference_scores(docs, q)
        got = snap.search(q, top_k=100)
        assert [i for i, _ in got] == sorted(ref, key=lambda i: (-ref[i], i))
        assert [s for _, s in got] == pytest.approx([ref[i] for i, _ in got], rel=1e-9)
        assert snap.scores_for(q, list(ref)) == dict(got)
