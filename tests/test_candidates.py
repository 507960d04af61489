"""warlock.js-compatible helpers (SPEC §5, seed 002), quirks included."""
import math

import pytest

from retrieval.candidates import bm25_rank, hybrid_rank, multi_query, parse_variants


def test_bm25_rank_doc_example_and_golden_score():
    docs = [{"id": "1", "text": "the cat sat on the mat"}, {"id": "2", "text": "refund for invoice 8842 was processed"},
            {"id": "3", "text": "the weather is nice today"}]
    out = bm25_rank("invoice 8842 refund", docs)
    assert [r.id for r in out] == ["2"] and out[0]["id"] == "2"
    # n=3, avgLen=(6+6+5)/3; doc 2: len 6, each term df=1 → idf=ln(1+2.5/1.5)
    idf = math.log(1 + 2.5 / 1.5)
    per = idf * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 6 / (17 / 3)))
    assert out[0].score == pytest.approx(3 * per)


def test_bm25_rank_quirks():
    docs = [("a", "Refund refund"), ("b", "the the the")]
    # query terms de-duplicated: "refund refund" scores like "refund"
    assert bm25_rank("refund refund", docs)[0].score == pytest.approx(bm25_rank("refund", docs)[0].score)
    # no stopwords: "the" matches b
    assert [r.id for r in bm25_rank("the", docs)] == ["b"]
    assert bm25_rank("", docs) == [] and bm25_rank("x", []) == [] and bm25_rank("zzz", docs) == []


def test_hybrid_rank_zero_based_rrf_and_no_new_documents():
    dense = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    candidates = [{"id": "a", "text": "billing help"}, {"id": "b", "text": "invoice 8842"},
                  {"id": "c", "text": "weather"}]
    out = hybrid_rank("invoice 8842", dense, candidates, k=60)
    scores = {r.id: r.score for r in out}
    assert scores["b"] == pytest.approx(1 / 61 + 1 / 60)
    assert scores["a"] == pytest.approx(1 / 60)
    assert [r.id for r in out] == ["b", "a", "c"]
    assert {r.id for r in out} <= {"a", "b", "c"}


class FakeLLM:
    def __init__(self, text):
        self.text, self.calls = text, []

    def generate(self, system, prompt):
        self.calls.append(prompt)
        return self.text


def test_multi_query_parsing_first_n_then_dedupe():
    llm = FakeLLM("1. Cancel my subscription\n\n- how do I cancel?\n* end my plan\n• how to unsubscribe\n2) extra")
    out = multi_query(llm, "how do I cancel?", n=3)
    # first 3 variants are kept *before* de-duplication, so the duplicate of the original costs a slot
    assert out == ["how do I cancel?", "Cancel my subscription", "end my plan"]
    assert "3" in llm.calls[0]
    assert multi_query(llm, "how do I cancel?", n=3, include_original=False) == [
        "Cancel my subscription", "how do I cancel?", "end my plan"]


def test_parse_variants_strips_bullets_and_blanks():
    assert parse_variants(" 1. a\n\n2) b \n- c\n* d\n• e\n") == ["a", "b", "c", "d", "e"]
