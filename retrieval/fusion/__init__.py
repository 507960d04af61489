"""Fusion of ranked lists (SPEC §4, §13, §19): one module per strategy, the shared parts in `base`.

RRF (`rrf.py`) fuses ranks; convex (`convex.py`) fuses per-list normalised scores (`normalize.py`). Pure
functions over lists; every strategy returns the same `Fused` records, so explain shows each the same way.
The SPEC §17 import paths (`reciprocal_rank_fusion`, `convex_fusion`, `normalize`) are re-exported here.
"""
from __future__ import annotations

from retrieval.fusion.base import Fused, _Choice, _check_weights
from retrieval.fusion.convex import convex_fusion
from retrieval.fusion.normalize import NORMALIZATIONS, Normalization, normalize
from retrieval.fusion.rrf import reciprocal_rank_fusion


class Fusion(_Choice):
    """How the dense and sparse lists become one (SPEC §13)."""

    RRF = "rrf"
    CONVEX = "convex"


FUSIONS = tuple(m.value for m in Fusion)

__all__ = ["FUSIONS", "NORMALIZATIONS", "Fused", "Fusion", "Normalization", "_Choice", "_check_weights",
           "convex_fusion", "normalize", "reciprocal_rank_fusion"]
