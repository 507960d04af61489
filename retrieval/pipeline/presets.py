"""Presets: the only behavioural switch between the faithful and the improved pipeline (SPEC §6).

`agentos` reproduces the AgentOS HybridRetriever. `hybrid` (the default) changes five things, each
chosen on development data — LoCoMo conversations 1–5 evaluated with the clock one day after each
conversation (`--clock end`, as an agent queries its memory) and SciFact, by the worst-case gain over
the better single side with paired bootstrap 95 % intervals; the 45 demo queries are a sanity check
only. The numbers: docs/BENCHMARKS.md ("Choosing the hybrid defaults", `scripts/choose_hybrid_defaults.py`).

1. sparse-only ids are hydrated from the store (same scope, active only) and scored with their
   real cosine, instead of being dropped;
2. rank completion: each pooled id gets a rank in both lists (a sparse-only hit is appended to the
   dense list by its real score, a dense hit past the sparse top-N by its real BM25 score), so a
   BM25 rank-1 identifier the embedding placed 31st is not capped below dense rank 30;
3. the rerank blend base is the fused score normalised to [0, 1], so fusion weights still matter
   under a reranker;
4. fusion: a convex combination of theoretically normalised scores (Bruch, Gai & Ingber 2023: cosine-based
   cognitive score and BM25 both bounded below by 0, divided by the list's max), dense 0.5 / sparse 0.5,
   over a BM25 that stems (new stores record the `english-stem` analyser; a store keeps the one it
   records); RRF (k = 10, equal weights) stays one switch away;
5. a temporal question ("where did I live first?") injects the history of the asked predicates,
   not every fact ever stored about the subject (which pushes every real trace out of the top k).

A preset is a frozen record; a variant for an experiment is `dataclasses.replace(HYBRID_PRESET, …)`
passed to `HybridRetriever(preset=…)`, never an edit of a global. Its fusion defaults are fusion strategy values
(`retrieval.fusion`): the first is the preset's fusion, each other one the defaults a switch to that fusion finds
(`RRF(k=10, …)` under `hybrid`); a knob none of them sets is its declared default.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from retrieval.fusion import FUSION_PARAM_DEFAULTS, FUSIONS, FusionStrategy, RRF, Convex

AGENTOS = "agentos"
HYBRID = "hybrid"
PRESETS = (AGENTOS, HYBRID)


@dataclass(frozen=True)
class Preset:
    """What a preset decides: pipeline behaviour plus its fusion defaults, as strategy values (`strategies[0]` is
    its fusion)."""

    name: str
    hydrate_sparse_only: bool
    complete_ranks: bool
    blend_base: str  # "cognitive" (AgentOS) or "fused"
    temporal_facts: str  # "subject" (AgentOS: every fact of the subject) or "predicates"
    strategies: tuple[FusionStrategy, ...]
    rerank_weight: float
    fusions: tuple[str, ...] = FUSIONS  # the fusion strategies this preset allows (default: every registered one)

    def __post_init__(self) -> None:
        names = [s.name for s in self.strategies if isinstance(s, FusionStrategy)]
        if not names or len(names) != len(self.strategies) or not set(names) <= set(self.fusions):
            raise ValueError(f"preset {self.name!r}: its default strategies {self.strategies!r} must be fusion "
                             f"strategies among its fusions {self.fusions}")

    @property
    def fusion(self) -> str:
        return self.strategies[0].name

    @property
    def dense_weight(self) -> float:
        return self.strategies[0].weights[0]

    @property
    def sparse_weight(self) -> float:
        return self.strategies[0].weights[1]

    @property
    def rrf_k(self) -> float:
        return float(self.defaults()["rrf_k"])

    @property
    def normalization(self) -> str:
        return str(self.defaults()["normalization"])

    def check_fusion(self, fusion: str) -> None:
        """ValueError when this preset does not allow `fusion` (AgentOS has one fusion: RRF)."""
        if fusion not in self.fusions:
            allowed = (f"is always {self.fusions[0].upper()}" if len(self.fusions) == 1
                       else f"allows only {', '.join(self.fusions)}")
            raise ValueError(f"fusion={fusion!r}: the {self.name} preset {allowed}; use preset='hybrid' for the others")

    def defaults(self) -> dict[str, Any]:
        """The knobs a preset supplies when a call leaves them as None: each strategy's (the first's weights and
        fusion win), then the declared defaults."""
        knobs: dict[str, Any] = dict(FUSION_PARAM_DEFAULTS)
        for s in reversed(self.strategies):
            knobs.update(s.knobs())
        return {**knobs, "rerank_weight": self.rerank_weight}


AGENTOS_PRESET = Preset(AGENTOS, hydrate_sparse_only=False, complete_ranks=False, blend_base="cognitive",
                        temporal_facts="subject", strategies=(RRF(k=60, weights=(0.7, 0.3)),), rerank_weight=0.3,
                        fusions=("rrf",))
HYBRID_PRESET = Preset(HYBRID, hydrate_sparse_only=True, complete_ranks=True, blend_base="fused",
                       temporal_facts="predicates", strategies=(Convex(normalization="theoretical", weights=(0.5, 0.5)),
                                                                RRF(k=10, weights=(0.5, 0.5))), rerank_weight=0.3)
_BY_NAME = {p.name: p for p in (AGENTOS_PRESET, HYBRID_PRESET)}


def get_preset(preset: str | Preset) -> Preset:
    """The preset named (or the `Preset` given); ValueError naming the allowed names otherwise."""
    if isinstance(preset, Preset):
        return preset
    if preset not in _BY_NAME:
        raise ValueError(f"preset {preset!r} is not one of {', '.join(PRESETS)}")
    return _BY_NAME[preset]


def preset_defaults(preset: str | Preset) -> dict[str, float | str]:
    return get_preset(preset).defaults()

