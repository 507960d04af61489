"""Fusion of ranked lists (SPEC §4, §13): one module per strategy, the shared parts in `base`.

RRF (`rrf.py`) fuses ranks; convex (`convex.py`) fuses per-list normalised scores (`normalize.py`). Pure
functions over lists; every strategy returns the same `Fused` records, so explain shows each the same way.
The SPEC §17 import paths (`reciprocal_rank_fusion`, `convex_fusion`, `normalize`) are re-exported here.
"""
from __future__ import annotations

from typing import Any

from retrieval.fusion.base import WEIGHTS, Fused, FusionStrategy, Param, _Choice, _check_weights
from retrieval.fusion.convex import Convex, convex_fusion
from retrieval.fusion.dbsf import DBSF
from retrieval.fusion.normalize import NORMALIZATIONS, Normalization, normalize
from retrieval.fusion.rrf import RRF, reciprocal_rank_fusion

# The registry: every strategy the API, CLI, links, config files, the panel and the lab offer, in this order.
STRATEGIES: tuple[type[FusionStrategy], ...] = (RRF, Convex, DBSF)
REGISTRY: dict[str, type[FusionStrategy]] = {s.name: s for s in STRATEGIES}
FUSIONS = tuple(REGISTRY)
# The declared choice (as Haystack's `JoinMode.from_str`), built from the registry.
Fusion: type[_Choice] = _Choice("Fusion", {n.upper(): n for n in FUSIONS})  # type: ignore[call-arg, assignment]


def get_strategy(name: object) -> type[FusionStrategy]:
    """The registered strategy called `name`, else ValueError naming every registered one."""
    return REGISTRY[Fusion.from_str(name).value]


def strategy_for(knobs: Any, **override: Any) -> FusionStrategy:
    """The strategy `knobs` select (its `fusion`) with its parameters and weights read from them."""
    fusion = override.pop("fusion", None) or (knobs.get("fusion") if isinstance(knobs, dict) else knobs.fusion)
    return get_strategy(fusion).from_knobs(knobs, **override)


def catalogue() -> list[dict[str, Any]]:
    """Every registered strategy as plain data (name, formula, parameters with type, range, default, step), for a
    UI generated from it (the settings panel, the browser twin in Inspect)."""
    return [s.describe() for s in STRATEGIES]


__all__ = ["FUSIONS", "NORMALIZATIONS", "REGISTRY", "STRATEGIES", "WEIGHTS", "Convex", "Fused", "Fusion",
           "FusionStrategy", "Normalization", "Param", "RRF", "_Choice", "_check_weights", "catalogue",
           "convex_fusion", "get_strategy", "normalize", "reciprocal_rank_fusion", "strategy_for"]
