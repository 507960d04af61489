"""Ranking metrics as pure functions over id lists and graded judgments.

`qrels` maps doc id → grade (0 = not relevant). Conventions follow trec_eval / BEIR:
nDCG uses gain = grade and log2(rank+1) discounts; Recall@k counts grade > 0.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def dcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    return sum(qrels.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg_at_k(ranked, qrels, k) / idcg if idcg > 0 else 0.0


def mrr(ranked: Sequence[str], qrels: Mapping[str, float], k: int | None = None) -> float:
    for i, d in enumerate(ranked[:k] if k else ranked):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evidence_recall_at_k(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """LoCoMo: share of a question's evidence turns found in the top k (duplicates counted once)."""
    ev = set(evidence)
    if not ev:
        return 0.0
    return len(ev & set(ranked[:k])) / len(ev)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
