"""The BM25 formula, written once (SPEC §3), as small pure functions over numbers or numpy arrays.

Robertson & Zaragoza (2009), the Lucene "+1" idf, which keeps idf positive so that "shares a term"
⇔ "score > 0":

    idf(t)        = ln(1 + (N − df + 0.5) / (df + 0.5))
    saturation(t) = tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl))
    score(q, d)   = Σ_{t in q} idf(t) · saturation(t, d)

Used by `BM25Index` (retrieval.bm25.index), its explain, and the warlock-compatible `bm25_rank`
(retrieval.candidates), in the style of bm25s' `scoring.py`.
"""
from __future__ import annotations

import numpy as np


def idf(n_docs, df):
    """Lucene-style idf for `df` documents containing the term out of `n_docs` (scalar or array)."""
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def saturation(tf, doc_len, avgdl: float, k1: float, b: float):
    """Term-frequency saturation with length normalisation (scalar or array; `avgdl` > 0)."""
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc_len / avgdl))


def term_score(qtf, n_docs, df, tf, doc_len, avgdl: float, k1: float, b: float):
    """One query term's contribution: `qtf` (how often the query repeats it) · idf · saturation."""
    return qtf * idf(n_docs, df) * saturation(tf, doc_len, avgdl, k1, b)


def safe_avgdl(total_len: float, n_docs: int) -> float:
    """Mean document length; 1.0 for an empty index or one whose documents have no tokens.

    (An index of only token-less documents has avgdl 0; no posting exists then, so the value
    only has to keep the division defined.)
    """
    return total_len / n_docs if n_docs and total_len > 0 else 1.0
