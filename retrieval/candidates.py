"""warlock.js-compatible hybrid helpers (SPEC §5; seed 002).

These work over a caller-supplied candidate set, with warlock's documented quirks kept on
purpose: fixed k1=1.5/b=0.75, `[^a-z0-9]+` tokens with no stopwords, query terms de-duplicated,
df/avgLen over the candidates only, 0-based RRF ranks, and multi-query keeping the first n
variants *before* de-duplication.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Sequence

import numpy as np

import retrieval.bm25.formula as scoring
from retrieval.fusion import reciprocal_rank_fusion

WARLOCK_K1 = 1.5
WARLOCK_B = 0.75
_SPLIT = re.compile(r"[^a-z0-9]+")
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)])\s*")


@dataclass(frozen=True)
class RankedItem:
    id: str
    score: float

    def __getitem__(self, key: str) -> Any:  # warlock returns plain objects: item["id"]
        if key not in ("id", "score"):
            raise KeyError(key)
        return getattr(self, key)


def _tokens(text: str) -> list[str]:
    return [t for t in _SPLIT.split(text.lower()) if t]


def _field(doc: Any, name: str) -> Any:
    if isinstance(doc, dict):
        return doc[name]
    if isinstance(doc, (tuple, list)):
        return doc[0 if name == "id" else 1]
    if isinstance(doc, str) and name == "id":
        return doc
    return getattr(doc, name)


def bm25_rank(query: str, docs: Iterable[Any]) -> list[RankedItem]:
    """BM25 over `docs` (`{"id", "text"}` dicts, `(id, text)` tuples or objects); zero scores dropped."""
    q_terms = list(dict.fromkeys(_tokens(query or "")))
    docs = [(str(_field(d, "id")), _tokens(_field(d, "text") or "")) for d in docs]
    if not q_terms or not docs:
        return []
    n = len(docs)
    avg_len = sum(len(t) for _, t in docs) / n or 1.0
    tfs = [Counter(toks) for _, toks in docs]
    lens = np.asarray([len(toks) for _, toks in docs], dtype=np.float64)
    scores = np.zeros(n)
    for term in q_terms:  # de-duplicated: each query term counts once (warlock)
        tf = np.asarray([c.get(term, 0) for c in tfs], dtype=np.float64)
        df = int(np.count_nonzero(tf))
        if df:
            scores += np.where(tf > 0, scoring.term_score(1, n, df, tf, lens, avg_len, WARLOCK_K1, WARLOCK_B), 0.0)
    out = [RankedItem(doc_id, float(s)) for (doc_id, _), s in zip(docs, scores.tolist()) if s > 0]
    out.sort(key=lambda r: (-r.score, r.id))
    return out


def rrf_0based(ranked_lists: Sequence[Sequence[str]], k: float = 60) -> list[RankedItem]:
    """warlock's `reciprocalRankFusion`: unweighted, ranks counted from 0."""
    return [RankedItem(f.id, f.score) for f in reciprocal_rank_fusion(ranked_lists, k=k, rank_start=0)]


def hybrid_rank(query: str, dense: Sequence[Any], candidates: Sequence[Any], k: float = 60) -> list[RankedItem]:
    """Fuse the dense order with a BM25 pass over `candidates` (which never adds a new document)."""
    dense_ids = [str(_field(d, "id")) for d in dense]
    lexical = [r.id for r in bm25_rank(query, candidates)]
    return rrf_0based([dense_ids, lexical], k=k)


MULTI_QUERY_SYSTEM = "You rewrite search queries. Answer with one query per line and nothing else."


def multi_query_prompt(query: str, n: int) -> str:
    """Few-shot, so a base model continues it as a list and a chat model answers in kind."""
    return (
        f"Rewrite the search query in {n} different ways, one per line, using other words "
        "(synonyms, more or less specific).\n\n"
        "Query: how do I cancel my plan?\nRewrites:\ncancel my subscription\nend my membership\n"
        "stop the monthly payments\n\n"
        f"Query: {query.strip()}\nRewrites:\n"
    )


def parse_variants(text: str) -> list[str]:
    """Strip bullets/numbering (-, *, •, 1., 1)) and drop blank lines."""
    lines = (_BULLET.sub("", line).strip() for line in (text or "").splitlines())
    return [line for line in lines if line]


def multi_query(llm: Any, query: str, n: int = 3, include_original: bool = True) -> list[str]:
    """Ask `llm` for `n` phrasings; returns the original first (optional) plus up to n variants.

    `llm` is a text generator (`generate(system, prompt)`) or a plain callable `prompt -> str`.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n!r}")
    prompt = multi_query_prompt(query, n)
    raw = llm.generate(MULTI_QUERY_SYSTEM, prompt) if hasattr(llm, "generate") else llm(prompt)
    variants = parse_variants(raw)[:n]
    out: list[str] = []
    seen: set[str] = set()
    for q in ([query] if include_original else []) + variants:
        key = q.lower()
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out
