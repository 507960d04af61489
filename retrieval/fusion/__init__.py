"""Fusion of ranked lists (SPEC §4, §13): one module per strategy, the shared parts in `base`.

RRF (`rrf.py`) fuses ranks; convex (`convex.py`) fuses per-list normalised scores (`normalize.py`). Pure
functions over lists; every strategy returns the same `Fused` records, so explain shows each the same way.
The SPEC §17 import paths (`reciprocal_rank_fusion`, `convex_fusion`, `normalize`) are re-exported here.
"""
from __future__ import annotations

from typing import Any

from retrieval.fusion.base import WEIGHT_NAMES, WEIGHTS, Fused, FusionStrategy, Param, _Choice, _check_weights
from retrieval.fusion.convex import Convex, convex_fusion
from retrieval.fusion.dbsf import DBSF
from retrieval.fusion.normalize import NORMALIZATIONS, Normalization, normalize
from retrieval.fusion.rrf import RRF, reciprocal_rank_fusion

# The registry: every strategy the API, CLI, links, config files, the panel and the lab offer, in this order.
STRATEGIES: tuple[type[FusionStrategy], ...] = (RRF, Convex, DBSF)
REGISTRY: dict[str, type[FusionStrategy]] = {s.name: s for s in STRATEGIES}
FUSIONS = tuple(REGISTRY)
# Every fusion knob's declared default (the weights, then each strategy's own parameters).
FUSION_PARAM_DEFAULTS: dict[str, Any] = {p.name: p.default for s in STRATEGIES for p in s.declared().values()}
# The declared choice (as Haystack's `JoinMode.from_str`), built from the registry.
Fusion: type[_Choice] = _Choice("Fusion", {n.upper(): n for n in FUSIONS})  # type: ignore[call-arg, assignment]


def get_strategy(name: object) -> type[FusionStrategy]:
    """The registered strategy called `name`, else ValueError naming every registered one."""
    return REGISTRY[Fusion.from_str(name).value]


def strategy_for(knobs: Any, **override: Any) -> FusionStrategy:
    """The strategy `knobs` select (its `fusion`) with its parameters and weights read from them."""
    fusion = override.pop("fusion", None) or (knobs.get("fusion") if isinstance(knobs, dict) else knobs.fusion)
    return get_strategy(fusion).from_knobs(knobs, **override)


def fusion_knobs(text: str) -> dict[str, Any]:
    """A fusion's canonical string (`FusionStrategy.spec`: `name(knob=value,…)`, or just `name`) as knobs, each
    value typed by its declaration (its range is checked when the strategy is built); ValueError naming the part
    that does not parse, an unknown fusion or a parameter the strategy does not declare."""
    form = "e.g. rrf(dense_weight=0.7,sparse_weight=0.3,rrf_k=60.0)"
    name, paren, inner = str(text).partition("(")
    if paren and not inner.endswith(")"):
        raise ValueError(f"fusion {text!r}: the parameters must end with ')'; {form}")
    declared = get_strategy(name).declared()
    knobs: dict[str, Any] = {"fusion": name}
    for item in filter(None, inner[:-1].split(",")) if paren else ():
        key, eq, raw = item.partition("=")
        p = declared.get(key)
        if not eq or p is None:
            raise ValueError(f"fusion {text!r}: {item!r} is not one of its parameters ({', '.join(declared)}) "
                             f"as name=value; {form}")
        try:
            knobs[key] = raw if p.kind == "choice" else int(raw) if p.kind == "int" else float(raw)
        except ValueError:
            raise ValueError(f"{key}={raw!r} is not a number") from None
    return knobs


def parse_fusion(text: str, defaults: Any = None) -> FusionStrategy:
    """The strategy a canonical string names (`FusionStrategy.spec`), valid by construction; a parameter the string
    leaves out is `defaults`' (a mapping of knobs, e.g. a preset's), else its declared default."""
    knobs = fusion_knobs(text)
    return strategy_for({**(defaults or {}), **knobs})


def catalogue() -> list[dict[str, Any]]:
    """Every registered strategy as plain data (name, formula, parameters with type, range, default, step), for a
    UI generated from it (the settings panel, the browser twin in Inspect)."""
    return [s.describe() for s in STRATEGIES]


__all__ = ["FUSIONS", "FUSION_PARAM_DEFAULTS", "NORMALIZATIONS", "REGISTRY", "STRATEGIES", "WEIGHT_NAMES", "WEIGHTS",
           "Convex", "Fused", "Fusion", "FusionStrategy", "Normalization", "Param", "RRF", "_Choice", "_check_weights",
           "catalogue", "convex_fusion", "fusion_knobs", "get_strategy", "normalize", "parse_fusion",
           "reciprocal_rank_fusion", "strategy_for"]
