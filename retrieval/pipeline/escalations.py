"""Escalations in plain words: what happened, and what the lists on screen now mean.

The pipeline records machine-readable codes (`hybrid-retriever:sparse-empty`, `reranker:error: …`,
SPEC §6); a person reads `describe(code)` first and the code second.
"""
from __future__ import annotations

from dataclasses import dataclass

from retrieval.pipeline.records import (ESC_EMPTY, ESC_FACTS, ESC_HYDE, ESC_MULTI, ESC_RERANK, ESC_SPARSE_EMPTY,
                                        ESC_SPLIT,
                      ESC_TRUNCATED)

SENTENCES = {
    ESC_SPARSE_EMPTY: ("No query word matched any trace in BM25 — the words may be stopwords, another language, "
                       "punctuation, or simply absent from this scope — so fusion and reranking were skipped. "
                       "The final list is the dense (embedding) list, plus any fact-graph traces."),
    ESC_HYDE: ("HyDE could not write a hypothetical memory note, so the raw query was searched instead; "
               "the dense and sparse lists are for the query as typed."),
    ESC_RERANK: ("The reranker failed, so nothing was reranked: the final list is the merged (fused) order, "
                 "cut to top-k. Fix the reranker settings, or choose 'none'."),
    ESC_SPLIT: ("Scoring the split halves failed, so no trace was replaced by a half; the reranked list is the "
                "blend of the first reranker pass only."),
    ESC_EMPTY: "The query is empty, so nothing was searched. Type some words.",
    ESC_MULTI: ("The text generator could not write query variants, so only the original query was searched; "
                "every list is for that one query."),
    ESC_FACTS: ("The fact graph could not be read, so no fact-graph traces were injected; the lists hold "
                "stored traces only."),
    ESC_TRUNCATED: "The query was too long; only its beginning was searched (see the detail).",
}


@dataclass(frozen=True)
class Escalation:
    code: str  # e.g. "reranker:error"
    sentence: str  # what happened and what the lists now mean
    detail: str  # the recorded reason, if any ("" when none)


def describe(escalation: str) -> Escalation:
    """`"reranker:error: TimeoutError: …"` → its code, a plain sentence and the recorded reason."""
    for code in sorted(SENTENCES, key=len, reverse=True):  # longest first: codes share prefixes
        if escalation == code or escalation.startswith(code + ":"):
            detail = escalation[len(code) + 1:].strip()
            return Escalation(code, SENTENCES[code], detail)
    code, _, detail = escalation.partition(": ")
    return Escalation(code, "Something in the pipeline fell back to a simpler path; see the detail.", detail.strip())
