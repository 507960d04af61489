"""`PipelineConfig`: the whole pipeline as plain data — fusion knobs and model choices — with JSON I/O.

The app's sidebar, the CLI and evaluation all describe a pipeline with it, and `retrieval.pipeline.factory`
builds the retriever from it. Knob ranges come from `retrieval.pipeline.settings.KNOBS` (one rule per knob).
"""
from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from retrieval.fusion import FUSIONS, NORMALIZATIONS
from retrieval.pipeline.presets import HYBRID_PRESET, PRESETS, get_preset
from retrieval.pipeline.settings import SETTINGS_KNOBS, SWITCHES, RetrievalSettings, check_knob, check_switch

RERANKER_CHOICES = ("none", "embedding", "cohere", "cross-encoder")
GENERATOR_CHOICES = ("gemma", "cohere", "openai")
CLASSIFIER_CHOICES = ("keyword", "agentos")
# The knobs a re-fusion can change without a new search (what `reweight` accepts).
FUSION_FIELDS = ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight", "fusion", "normalization", "adaptive")
CONFIG_MARKER = "hybrid-retrieval-inspector-config"
# Names older config files and links used for the same knobs (one name per knob now: the API's).
LEGACY_NAMES = {"top_k": "recall_top_k", "over_fetch": "over_fetch_multiplier"}
_CHOICES = {"preset": PRESETS, "reranker": RERANKER_CHOICES, "generator": GENERATOR_CHOICES,
            "classifier": CLASSIFIER_CHOICES, "fusion": FUSIONS, "normalization": NORMALIZATIONS}
# Config field -> settings knob, for the fields whose range KNOBS defines.
KNOB_OF = {"dense_weight": "dense_weight", "sparse_weight": "sparse_weight", "rrf_k": "rrf_k",
           "rerank_weight": "rerank_weight", "recall_top_k": "recall_top_k",
           "over_fetch_multiplier": "over_fetch_multiplier",
           "multi_query_n": "multi_query_n", "split_threshold": "split_threshold", "valence": "valence",
           "arousal": "arousal", "dominance": "dominance"}


@dataclass(frozen=True)
class PipelineConfig:
    preset: str = HYBRID_PRESET.name
    dense_weight: float = HYBRID_PRESET.dense_weight
    sparse_weight: float = HYBRID_PRESET.sparse_weight
    rrf_k: int = int(HYBRID_PRESET.rrf_k)
    fusion: str = HYBRID_PRESET.fusion
    normalization: str = HYBRID_PRESET.normalization
    adaptive: bool = False  # per-query weights (retrieval.pipeline.adaptive)
    over_fetch_multiplier: int = 3
    recall_top_k: int = 10
    hyde: bool = False
    generator: str = "gemma"
    openai_base_url: str = "http://127.0.0.1:11434"
    openai_model: str = "llama3.2"
    multi_query_n: int = 0
    facts: bool = True
    classifier: str = "keyword"
    reranker: str = "none"
    cross_encoder_path: str = ""
    rerank_weight: float = HYBRID_PRESET.rerank_weight
    split_threshold: float = 0.0  # 0 = off
    valence: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0

    @classmethod
    def for_preset(cls, preset: str, **kw) -> PipelineConfig:
        """A config with the preset's own fusion defaults (agentos: 0.7/0.3, k 60, RRF)."""
        p = get_preset(preset)
        base = dict(preset=p.name, dense_weight=p.dense_weight, sparse_weight=p.sparse_weight, rrf_k=int(p.rrf_k),
                    rerank_weight=p.rerank_weight, fusion=p.fusion, normalization=p.normalization)
        return cls(**{**base, **kw}).validate()

    def validate(self) -> PipelineConfig:
        """Self, or ValueError naming the field, its value and what is allowed."""
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"config field {name!r} is {getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        for name, knob in KNOB_OF.items():
            if name == "split_threshold" and not self.split_threshold:
                continue  # 0 = off
            try:
                check_knob(knob, getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"config field {name!r}: {exc}") from None
        for name in SWITCHES:
            try:
                check_switch(name, getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"config field {name!r}: {exc}") from None
        try:
            get_preset(self.preset).check_fusion(self.fusion)
        except ValueError as exc:
            raise ValueError(f"config field 'fusion': {exc}") from None
        try:  # and as a whole, by the one settings value (e.g. both weights 0)
            self.retrieval_settings()
        except ValueError as exc:
            raise ValueError(f"config: {exc}") from None
        return self

    def retrieval_settings(self) -> RetrievalSettings:
        """The retrieval knobs of this config as the one settings value (its models and components are not)."""
        return RetrievalSettings.from_knobs({
            "preset": self.preset, "fusion": self.fusion, "dense_weight": self.dense_weight,
            "sparse_weight": self.sparse_weight, "rrf_k": float(self.rrf_k), "normalization": self.normalization,
            "rerank_weight": self.rerank_weight, "recall_top_k": self.recall_top_k,
            "over_fetch_multiplier": self.over_fetch_multiplier, "split_threshold": self.split_threshold or None,
            "adaptive": self.adaptive})

    def search_key(self) -> tuple:
        """Everything except the fusion knobs: when only those change, re-fuse from cache."""
        return tuple((k, v) for k, v in sorted(asdict(self).items()) if k not in FUSION_FIELDS)

    def fusion_knobs(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FUSION_FIELDS}

    def to_json(self) -> str:
        """The config file (and a snapshot's stored config): the retrieval knobs as the one settings value's
        canonical string under `settings`, the components (models, facts, mood) as fields of their own."""
        parts = {k: v for k, v in asdict(self).items() if k not in SETTINGS_KNOBS}
        return json.dumps({CONFIG_MARKER: 1, "settings": str(self.retrieval_settings()), **parts}, indent=2)

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
        if "settings" in data:
            data = _settings_fields(data)
        try:
            parsed = _file_model().model_validate(data)
        except ValidationError as exc:
            raise ValueError(_file_error(exc)) from None
        return replace(cls(), **parsed.model_dump(exclude_unset=True)).validate()


@functools.cache  # built once, on the first file read (a constant, not a cache of data)
def _file_model() -> Any:
    """The pydantic model of a config file: one optional field per `PipelineConfig` field, of its default's type
    (a switch strictly JSON true/false), nothing else."""
    from pydantic import ConfigDict, StrictBool, create_model

    defaults = PipelineConfig()
    spec: dict[str, Any] = {f.name: (StrictBool if isinstance(getattr(defaults, f.name), bool)
                                     else type(getattr(defaults, f.name)), getattr(defaults, f.name))
                            for f in fields(PipelineConfig)}
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
    return f"config field {name!r} must be a {type(getattr(PipelineConfig(), name)).__name__}, got {value!r}"


def _settings_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A config's `settings` string as its knob fields (the knobs the strategy does not use: the preset's)."""
    text = data.pop("settings")
    doubled = sorted(k for k in data if k in SETTINGS_KNOBS)
    if doubled:
        raise ValueError(f"config field(s) {', '.join(doubled)} beside 'settings', which holds every retrieval knob; "
                         "give each knob once")
    if not isinstance(text, str):
        raise ValueError(f"config field 'settings' must be the settings' canonical string, got {text!r}")
    try:
        s = RetrievalSettings.parse(text)
    except ValueError as exc:
        raise ValueError(f"config field 'settings': {exc}") from None
    base = PipelineConfig.for_preset(s.preset_name)
    knobs = {k: getattr(base, k) for k in FUSION_FIELDS}  # e.g. RRF's k under convex: the preset's
    return {**data, **knobs, **s.config_fields()}


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
