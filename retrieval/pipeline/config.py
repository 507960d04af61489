"""`PipelineConfig`: the whole pipeline as plain data — the one settings value and the components — with JSON I/O.

The app's sidebar, the CLI and evaluation all describe a pipeline with it, and `retrieval.pipeline.factory`
builds the retriever from it. Its retrieval knobs are one `RetrievalSettings` (`settings`), handed on unchanged to
the retriever and to `reweight`; its components (HyDE and its generator, facts, the reranker, multi-query, mood) are
fields of their own. `cfg.with_(**changes)` takes either: a knob name is routed into the settings value and
validated by it. Ranges come from `retrieval.pipeline.settings.KNOBS` (one rule per knob).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, fields, replace
from typing import Any

from retrieval.fusion import FUSIONS, NORMALIZATIONS
from retrieval.pipeline.presets import PRESETS
from retrieval.pipeline.settings import (FUSION_PARAMS, KNOBS, SETTINGS_KNOBS, SWITCHES, RetrievalSettings, check_knob,
                                        check_switch)

RERANKER_CHOICES = ("none", "embedding", "cohere", "cross-encoder")
GENERATOR_CHOICES = ("gemma", "cohere", "openai")
CLASSIFIER_CHOICES = ("keyword", "agentos")
# The knobs a re-fusion can change without a new search (what `reweight` accepts): the settings value's fusion part.
FUSION_FIELDS = ("fusion", *FUSION_PARAMS, "rerank_weight", "adaptive")
# The settings value's search part: changing one of these needs a new search.
SEARCH_KNOBS = ("preset", "recall_top_k", "over_fetch_multiplier", "split_threshold")
CONFIG_MARKER = "hybrid-retrieval-inspector-config"
# Names older config files and links used for the same knobs (one name per knob now: the API's).
LEGACY_NAMES = {"top_k": "recall_top_k", "over_fetch": "over_fetch_multiplier"}
_CHOICES = {"preset": PRESETS, "reranker": RERANKER_CHOICES, "generator": GENERATOR_CHOICES,
            "classifier": CLASSIFIER_CHOICES, "fusion": FUSIONS, "normalization": NORMALIZATIONS}
# The knobs an old config file held as fields of their own, with their types (read into the settings value).
_FLAT_KNOBS: dict[str, type] = {"preset": str, "dense_weight": float, "sparse_weight": float, "rrf_k": int,
                                "fusion": str, "normalization": str, "adaptive": bool, "over_fetch_multiplier": int,
                                "recall_top_k": int, "rerank_weight": float, "split_threshold": float}


@dataclass(frozen=True)
class PipelineConfig:
    settings: RetrievalSettings = field(default_factory=RetrievalSettings)
    hyde: bool = False
    generator: str = "gemma"
    openai_base_url: str = "http://127.0.0.1:11434"
    openai_model: str = "llama3.2"
    multi_query_n: int = 0
    facts: bool = True
    classifier: str = "keyword"
    reranker: str = "none"
    cross_encoder_path: str = ""
    valence: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0

    @classmethod
    def for_preset(cls, preset: str, **changes: Any) -> PipelineConfig:
        """A config with the preset's own settings (agentos: RRF k 60, 0.7/0.3), then `changes` (`with_`)."""
        return cls(settings=RetrievalSettings(preset=preset)).with_(**changes)

    def with_(self, **changes: Any) -> PipelineConfig:
        """A copy with `changes` applied: a knob by its name (`dense_weight`, `rrf_k`, `recall_top_k`, …) goes into
        the settings value and is validated by it (a `split_threshold` of 0 is off), `settings=` replaces the value,
        anything else is a component field. ValueError naming a bad or unknown field."""
        knobs = {k: v for k, v in changes.items() if k in SETTINGS_KNOBS}
        comps = {k: v for k, v in changes.items() if k not in SETTINGS_KNOBS}
        unknown = sorted(set(comps) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}")
        settings = comps.pop("settings", self.settings)
        if knobs:
            settings = _settings_with(settings, knobs)
        return replace(self, settings=settings, **comps).validate()

    def validate(self) -> PipelineConfig:
        """Self, or ValueError naming the field, its value and what is allowed."""
        if not isinstance(self.settings, RetrievalSettings):
            raise ValueError(f"config field 'settings' must be a RetrievalSettings, got {self.settings!r}")
        for name, allowed in _CHOICES.items():
            if name in SETTINGS_KNOBS:
                continue  # the settings value checked its own
            if getattr(self, name) not in allowed:
                raise ValueError(f"config field {name!r} is {getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        for name in ("multi_query_n", "valence", "arousal", "dominance"):
            try:
                check_knob(name, getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"config field {name!r}: {exc}") from None
        return self

    def retrieval_settings(self) -> RetrievalSettings:
        """The one settings value (`settings`)."""
        return self.settings

    def components(self) -> dict[str, Any]:
        """Everything but the settings value: models, facts, expansion, mood."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "settings"}

    def as_fields(self) -> dict[str, Any]:
        """One field per control (the settings value's `controls()`) and per component: what the settings panel
        shows and what a snapshot diff names as changed."""
        return {**self.settings.controls(), **self.components()}

    def search_key(self) -> tuple:
        """What a search depends on: the settings value's search part and the components. When only the fusion
        part (`fusion_knobs`) changes, re-fuse from cache."""
        s = self.settings
        part = (("preset", s.preset_name), *((k, getattr(s, k)) for k in SEARCH_KNOBS[1:]))
        return (*part, *sorted(self.components().items()))

    def fusion_knobs(self) -> dict[str, Any]:
        """The settings value's fusion part: its strategy, the rerank weight and the adaptive switch."""
        s = self.settings
        return {"fusion": s.strategy, "rerank_weight": s.rerank_weight, "adaptive": s.adaptive}

    def to_json(self) -> str:
        """The config file (and a snapshot's stored config): the settings value's canonical string under
        `settings`, the components as fields of their own."""
        return json.dumps({CONFIG_MARKER: 1, "settings": str(self.settings), **self.components()}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> PipelineConfig:
        """A config file or a stored config, validated by pydantic: the current shape (`settings` holding the knobs'
        canonical string) or the old one (one field per knob; older files' names read as the current ones); switches
        JSON true/false only, numbers and strings of their field's type; then ranges. ValueError naming the fault."""
        from pydantic import ValidationError

        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            raise ValueError(f"the config file is not valid JSON ({exc}); export one from the sidebar") from None
        if not isinstance(data, dict):
            raise ValueError("the config file must hold a JSON object")
        data = {LEGACY_NAMES.get(k, k): v for k, v in data.items() if k != CONFIG_MARKER}  # files before the rename
        settings = _settings_field(data) if "settings" in data else None
        try:
            parsed = _file_model().model_validate(data).model_dump(exclude_unset=True)
        except ValidationError as exc:
            raise ValueError(_file_error(exc)) from None
        flat = {k: parsed.pop(k) for k in list(parsed) if k in _FLAT_KNOBS}
        if settings is None:  # an old file: a knob it leaves out is its preset's
            settings = _settings_with(RetrievalSettings(preset=flat.get("preset", "hybrid")), flat)
        return cls(settings=settings).with_(**parsed)


def _settings_with(base: RetrievalSettings, knobs: dict[str, Any]) -> RetrievalSettings:
    """`base` with flat `knobs` applied: each checked by its rule (ValueError naming the config field), then the
    value as a whole (e.g. both weights 0). A `split_threshold` of 0 (the slider's and a file's off) is None."""
    for name, value in knobs.items():
        try:
            if name in _CHOICES and value not in _CHOICES[name]:
                raise ValueError(f"config field {name!r} is {value!r}; allowed: {', '.join(_CHOICES[name])}")
            if name in SWITCHES:
                check_switch(name, value)
            elif name in KNOBS and not (name == "split_threshold" and not value):
                check_knob(name, value)
        except ValueError as exc:
            raise ValueError(exc.args[0] if str(exc).startswith("config field") else
                             f"config field {name!r}: {exc}") from None
    knobs = dict(knobs)
    off = "split_threshold" in knobs and not knobs["split_threshold"]
    if off:
        knobs.pop("split_threshold")
    if "preset" in knobs and knobs["preset"] != base.preset_name:
        base = RetrievalSettings(preset=knobs["preset"])  # another preset: its own defaults under the knobs given
    try:
        out = base.with_(**knobs)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(f"config field 'fusion': {msg}" if msg.startswith("fusion=") else f"config: {msg}") from None
    return replace(out, split_threshold=None) if off else out


@functools.cache  # built once, on the first file read (a constant, not a cache of data)
def _file_model() -> Any:
    """The pydantic model of a config file: one optional field per component, of its default's type (a switch
    strictly JSON true/false), and an old file's knob fields; nothing else."""
    from pydantic import ConfigDict, StrictBool, create_model

    defaults = PipelineConfig().components()
    types = {**{k: type(v) for k, v in defaults.items()}, **_FLAT_KNOBS}
    spec: dict[str, Any] = {name: (StrictBool if t is bool else t, defaults.get(name)) for name, t in types.items()}
    return create_model("PipelineConfigFile", __config__=ConfigDict(extra="forbid"), **spec)


def _file_error(exc: Any) -> str:
    """Pydantic's errors as the one sentence a user reads: unknown fields, else the first field of the wrong type."""
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        return f"unknown config field(s): {', '.join(sorted(unknown))}"
    e = errors[0]
    name, value = str(e["loc"][0]), e.get("input")
    if e["type"].startswith("bool"):
        return f"config field {name!r} must be true or false, got {value!r}"
    kind = _FLAT_KNOBS.get(name) or type(PipelineConfig().components()[name])
    return f"config field {name!r} must be a {kind.__name__}, got {value!r}"


def _settings_field(data: dict[str, Any]) -> RetrievalSettings:
    """A config's `settings` string as the value (popped from `data`); a knob beside it is a ValueError."""
    text = data.pop("settings")
    doubled = sorted(k for k in data if k in SETTINGS_KNOBS)
    if doubled:
        raise ValueError(f"config field(s) {', '.join(doubled)} beside 'settings', which holds every retrieval knob; "
                         "give each knob once")
    if not isinstance(text, str):
        raise ValueError(f"config field 'settings' must be the settings' canonical string, got {text!r}")
    try:
        return RetrievalSettings.parse(text)
    except ValueError as exc:
        raise ValueError(f"config field 'settings': {exc}") from None


def reranker_fields(spec: str) -> dict[str, str]:
    """A CLI reranker spec (`none` | `embedding` | `cohere` | `cross-encoder:PATH`) as config fields."""
    if spec.startswith("cross-encoder:"):
        return {"reranker": "cross-encoder", "cross_encoder_path": spec.split(":", 1)[1]}
    return {"reranker": spec}


def generator_fields(spec: str) -> dict[str, str]:
    """A CLI generator spec (`gemma` | `cohere` | `openai:BASE_URL[#MODEL]`) as config fields."""
    if spec.startswith("openai:"):
        url, _, model = spec[len("openai:"):].partition("#")
        return {"generator": "openai", "openai_base_url": url, "openai_model": model or "default"}
    return {"generator": spec}
