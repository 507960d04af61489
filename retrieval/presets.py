"""Presets: the only behavioural switch between the faithful and the improved pipeline (SPEC §6).

`agentos` reproduces the AgentOS HybridRetriever. `hybrid` (the default) changes four things, each
chosen on development data (LoCoMo conversations 1–5 and the demo judgments; SciFact is only
reported) — see docs/BENCHMARKS.md for the numbers behind every choice:

- sparse-only ids are hydrated from the store (same scope, active only) and scored with their
  real cosine, instead of being dropped;
- rank completion: each pooled id gets a rank in both lists (a sparse-only hit is appended to the
  dense list by its real score, a dense hit past the sparse top-N by its real BM25 score), so a
  BM25 rank-1 identifier the embedding placed 31st is not capped below dense rank 30;
- the rerank blend base is the fused score normalised to [0, 1], so fusion weights still matter
  under a reranker;
- fusion defaults: equal weights (plain RRF) and k = 10, the best region of the dev sweep;
- a temporal question ("where did I live first?") injects the history of the asked predicates,
  not every fact ever stored about the subject (which pushes every real trace out of the top k).
"""
from __future__ import annotations

AGENTOS = "agentos"
HYBRID = "hybrid"
PRESETS = (AGENTOS, HYBRID)

PRESET_OPTIONS: dict[str, dict[str, object]] = {
    AGENTOS: {"hydrate_sparse_only": False, "complete_ranks": False, "blend_base": "cognitive",
              "temporal_facts": "subject"},
    HYBRID: {"hydrate_sparse_only": True, "complete_ranks": True, "blend_base": "fused",
             "temporal_facts": "predicates"},
}
PRESET_DEFAULTS: dict[str, dict[str, float]] = {
    AGENTOS: {"dense_weight": 0.7, "sparse_weight": 0.3, "rrf_k": 60, "rerank_weight": 0.3},
    HYBRID: {"dense_weight": 0.5, "sparse_weight": 0.5, "rrf_k": 10, "rerank_weight": 0.3},
}


def preset_defaults(preset: str) -> dict[str, float]:
    if preset not in PRESETS:
        raise ValueError(f"preset {preset!r} is not one of {', '.join(PRESETS)}")
    return dict(PRESET_DEFAULTS[preset])
