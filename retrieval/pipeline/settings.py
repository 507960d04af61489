"""The one settings value (`RetrievalSettings`, SPEC §19) and every knob's validation.

The API (`HybridRetriever`), the app, the CLI and evaluation all build one `RetrievalSettings` (the seed's flat
keywords through `resolve_settings`), and `assemble` reads it as it is: its fusion strategy fuses. A value is checked
once, by one rule, with one message. `KNOBS` is the table the rules and the messages are made from (Haystack's
habit: the error is built from the same constant that defines what is allowed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from retrieval.fusion import (FUSIONS, STRATEGIES, WEIGHTS, FusionStrategy, Param, fusion_knobs, get_strategy,
                              strategy_for)
from retrieval.pipeline.presets import PRESETS, Preset, get_preset


@dataclass(frozen=True)
class Knob:
    """A numeric knob's allowed range; `lo_open` excludes the lower bound (k must be > 0).

    `ui` is the range a slider (and so a link) offers, `(lo, hi)`, when it is narrower than what the
    API accepts (an RRF k of 500 is valid, a slider up to 1000 is not useful); `step` its step."""

    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False
    step: float = 1.0
    ui: tuple[float, float] | None = None

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        lo = f"> {self.lo:g}" if self.lo_open else f">= {self.lo:g}"
        return f"{kind} {lo} and <= {self.hi:g}"

    @property
    def ui_range(self) -> tuple[float, float]:
        return self.ui if self.ui is not None else (self.lo, self.hi)


def _knob(p: Param) -> Knob:
    """A fusion parameter's declaration (`retrieval.fusion`) as a knob: the strategy owns its range."""
    assert p.lo is not None and p.hi is not None, p.name
    return Knob(p.lo, p.hi, integer=p.kind == "int", lo_open=p.lo_open, step=p.step or 1.0, ui=p.ui)


FUSION_PARAMS: dict[str, Param] = {p.name: p for s in STRATEGIES for p in (*WEIGHTS, *s.params)}
# The one rule table: the API, PipelineConfig, config files, links and the settings panel all read it. The
# weights and each strategy's numeric parameters come from their declarations in `retrieval.fusion`.
KNOBS: dict[str, Knob] = {
    **{n: _knob(p) for n, p in FUSION_PARAMS.items() if p.kind != "choice"},
    "rerank_weight": Knob(0.0, 1.0, step=0.05),
    "recall_top_k": Knob(1, 1000, integer=True, ui=(1, 100)),
    "over_fetch_multiplier": Knob(1, 100, integer=True, ui=(1, 10)),
    "split_threshold": Knob(0.0, 1.0, lo_open=True, step=0.05),  # None (API) or 0 (slider, config) = off
    "multi_query_n": Knob(0, 5, integer=True),
    "valence": Knob(-1.0, 1.0, step=0.1),
    "arousal": Knob(0.0, 1.0, step=0.1),
    "dominance": Knob(-1.0, 1.0, step=0.1),
}
CHOICES: dict[str, tuple[str, ...]] = {"fusion": FUSIONS,
                                       **{n: p.choices for n, p in FUSION_PARAMS.items() if p.kind == "choice"}}
# On/off knobs (default off) and what each does, for the panel's help and the CLI's flag.
SWITCHES: dict[str, str] = {
    "adaptive": "per-query fusion weights: bounded rules on the query (an identifier, its length, its rarest term's "
                "idf, the score gaps at the top of each list) move the dense weight from the one set; each query's "
                "weights and reasons are in its explanation",
}


def check_knob(name: str, value: Any) -> float | int:
    """`value` as a number within `KNOBS[name]`, else ValueError naming the knob and the range."""
    knob = KNOBS[name]
    ok_type = isinstance(value, int) if knob.integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be {knob.describe()}")
    if value < knob.lo or value > knob.hi or (knob.lo_open and value == knob.lo):
        raise ValueError(f"{name}={value!r} must be {knob.describe()}")
    return int(value) if knob.integer else float(value)


def check_switch(name: str, value: Any) -> bool:
    """`value` as a bool for the switch `name` (`SWITCHES`), else ValueError naming it."""
    if not isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be true or false")
    return value


def check_choice(name: str, value: Any) -> str:
    """`value` as a registered fusion's name or a declared choice parameter's value, else ValueError naming it
    and every allowed value."""
    if name == "fusion":
        return get_strategy(value).name
    return str(FUSION_PARAMS[name].check(value))


def resolve_settings(preset: str | Preset, *, overrides: dict[str, Any] | None = None, recall_top_k: int = 10,
                     split_threshold: float | None = None, over_fetch_multiplier: int = 3) -> RetrievalSettings:
    """The one settings value for `preset`, with each non-None flat override (a seed keyword: `dense_weight`,
    `rrf_k`, `fusion`, …) replacing the preset's default. A fusion the preset does not allow falls back to the
    preset's own (a UI default must not turn AgentOS off)."""
    p = get_preset(preset)
    values: dict[str, Any] = {k: v for k, v in (overrides or {}).items() if v is not None}
    if values.get("fusion", p.fusion) not in p.fusions:
        values["fusion"] = p.fusions[0]
    return RetrievalSettings.from_knobs({"preset": p, **values, "recall_top_k": recall_top_k,
                                         "split_threshold": split_threshold,
                                         "over_fetch_multiplier": over_fetch_multiplier})


# --------------------------------------------------------------------------- the one settings value
_VALUE_KNOBS = ("rerank_weight", "recall_top_k", "over_fetch_multiplier", "split_threshold", "adaptive")
# Every flat knob the one settings value holds (what `from_knobs` accepts, and what its string may name).
SETTINGS_KNOBS = ("preset", "fusion", *FUSION_PARAMS, *_VALUE_KNOBS)


def _text(v: Any) -> str:
    """A value's canonical text: `repr` for a float (exact: it parses back to the same float); -0.0 reads 0.0, as
    the value it equals (one text per value)."""
    return "none" if v is None else ("true" if v else "false") if isinstance(v, bool) else repr(v + 0.0) \
        if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class RetrievalSettings:
    """Every knob of a retrieval as one frozen, typed value: the preset, the fusion strategy with its parameters and
    weights (`retrieval.fusion`: `RRF(k, weights)`, `Convex(normalization, weights)`, `DBSF(weights)`), the rerank
    weight, top k, over-fetch, the split threshold and the adaptive switch. Valid by construction; `fusion` and
    `rerank_weight` left as None are the preset's. `str(s)` is its one canonical form and
    `RetrievalSettings.parse(str(s)) == s` (as ir_measures does for `nDCG@10`):

        preset=hybrid fusion=convex(normalization=theoretical,dense_weight=0.5,sparse_weight=0.5) rerank_weight=0.3
        recall_top_k=10 over_fetch_multiplier=3 split_threshold=none adaptive=false   (one line)

    HyDE, facts and the reranker are components handed to `HybridRetriever`, not knobs, and are not in it."""

    preset: str | Preset = "hybrid"
    fusion: FusionStrategy | None = None
    rerank_weight: float | None = None
    recall_top_k: int = 10
    over_fetch_multiplier: int = 3
    split_threshold: float | None = None
    adaptive: bool = False

    def __post_init__(self) -> None:
        p = get_preset(self.preset)
        # A registered preset travels by name; an experiment's variant (`dataclasses.replace(HYBRID_PRESET, …)`)
        # as itself (its string names the preset it varies, so it does not round-trip).
        object.__setattr__(self, "preset", p.name if p.name in PRESETS and get_preset(p.name) == p else p)
        if self.fusion is None:
            object.__setattr__(self, "fusion", strategy_for(p.defaults()))
        if not isinstance(self.fusion, FusionStrategy):
            raise ValueError(f"fusion={self.fusion!r} must be a fusion strategy, e.g. RRF(k=60, weights=(0.7, 0.3))")
        p.check_fusion(self.fusion.name)
        if self.fusion.weights == (0.0, 0.0):
            raise ValueError("dense_weight and sparse_weight are both 0: nothing would rank the merged list; "
                             "give at least one a positive weight")
        if self.rerank_weight is None:
            object.__setattr__(self, "rerank_weight", p.rerank_weight)
        for name in ("rerank_weight", "recall_top_k", "over_fetch_multiplier"):
            object.__setattr__(self, name, check_knob(name, getattr(self, name)))
        if self.split_threshold is not None:
            object.__setattr__(self, "split_threshold", check_knob("split_threshold", self.split_threshold))
        check_switch("adaptive", self.adaptive)

    @property
    def strategy(self) -> FusionStrategy:
        assert self.fusion is not None  # set in __post_init__
        return self.fusion

    @property
    def rules(self) -> Preset:
        """The preset's behaviour (hydration, rank completion, blend base, temporal facts) that assembly follows."""
        return get_preset(self.preset)

    @property
    def preset_name(self) -> str:
        return self.rules.name

    def knobs(self) -> dict[str, Any]:
        """The flat knobs (`fusion`, weights, the strategy's own parameters and the rest), as links and configs
        spell them."""
        return {"preset": self.preset_name, **self.strategy.knobs(), **{k: getattr(self, k) for k in _VALUE_KNOBS}}

    def as_dict(self) -> dict[str, Any]:
        """Plain data for display and JSON: `knobs()`."""
        return self.knobs()

    def __getitem__(self, key: str) -> Any:  # `diagnostics.settings["dense_weight"]` reads the flat knob
        return self.knobs()[key]

    def fusion_defaults(self) -> dict[str, Any]:
        """Every fusion knob: the strategy's own, the ones it does not use at the preset's value (what a switch to
        another fusion starts from: the browser twin's controls, the fusion lab's baseline)."""
        return {**self.rules.defaults(), **self.strategy.knobs()}

    def controls(self) -> dict[str, Any]:
        """The value as the settings panel's controls show it: every fusion knob (another strategy's at the preset's
        value, so a switch finds it), the rest as `config_fields`."""
        return {**self.fusion_defaults(), **self.config_fields()}

    def config_fields(self) -> dict[str, Any]:
        """The knobs as a config file and the panel spell them (a split threshold of None is 0, off)."""
        return {**self.knobs(), "split_threshold": self.split_threshold or 0.0}

    def with_(self, **changes: Any) -> RetrievalSettings:
        """A copy with the non-None `changes` applied and validated: a knob by its name (`dense_weight`, `rrf_k`,
        `recall_top_k`, …; routed into the strategy when it is one of its parameters) or `fusion` as a
        `FusionStrategy`. A knob this value does not hold is a ValueError naming it."""
        given = {k: v for k, v in changes.items() if v is not None}
        if not given:
            return self
        if isinstance(given.get("fusion"), FusionStrategy):  # a strategy as it is; any loose knob then goes into it
            own = {k: given.pop(k) for k in list(given) if k in ("preset", "fusion", *_VALUE_KNOBS)}
            return replace(self, **own).with_(**given)
        return self.from_knobs({**self.knobs(), "preset": self.preset, **given})

    @classmethod
    def from_knobs(cls, knobs: dict[str, Any]) -> RetrievalSettings:
        """From flat knobs (a link's, a config file's, the seed's keywords): a knob left out or None is the
        preset's; a knob this value does not hold is a ValueError naming it."""
        allowed = set(SETTINGS_KNOBS)
        unknown = sorted(set(knobs) - allowed)
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(unknown)}; use {', '.join(sorted(allowed))}")
        given = {k: v for k, v in knobs.items() if v is not None}
        for k in given.keys() & FUSION_PARAMS.keys():  # a knob the chosen strategy does not use is still checked
            FUSION_PARAMS[k].check(given[k])
        p = get_preset(given.get("preset", "hybrid"))
        fusion = strategy_for({**p.defaults(), **given})
        return cls(preset=p, fusion=fusion, **{k: given[k] for k in _VALUE_KNOBS if k in given})

    def __str__(self) -> str:
        rest = " ".join(f"{k}={_text(getattr(self, k))}" for k in _VALUE_KNOBS)
        return f"preset={self.preset_name} fusion={self.strategy.spec} {rest}"

    @classmethod
    def parse(cls, text: str) -> RetrievalSettings:
        """The value `text` (its canonical form, or any subset of its `key=value` parts) names; ValueError naming
        the part that does not parse and the form."""
        form = "e.g. 'preset=hybrid fusion=rrf(rrf_k=60.0,dense_weight=0.7,sparse_weight=0.3) recall_top_k=10'"
        knobs: dict[str, Any] = {}
        for part in str(text).split():
            key, eq, raw = part.partition("=")
            if not eq:
                raise ValueError(f"settings part {part!r} is not key=value; {form}")
            if key == "fusion":
                knobs.update(fusion_knobs(raw))  # the fusion's own canonical form (`FusionStrategy.spec`)
            else:
                knobs[key] = _value(key, raw)
        return cls.from_knobs(knobs)


def _value(key: str, raw: str) -> Any:
    """A knob's text as its type (by the knob's declaration); the range is checked where the value is built."""
    if raw == "none":
        return None
    if key in ("preset", "fusion") or key in CHOICES:
        return raw
    if key in SWITCHES:
        if raw not in ("true", "false"):
            raise ValueError(f"{key}={raw!r} must be true or false")
        return raw == "true"
    knob = KNOBS.get(key)
    try:
        return int(raw) if knob is not None and knob.integer else float(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r} is not a number") from None
