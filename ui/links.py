"""Links that reproduce an Inspect view: every knob in the URL (defaults too), bad values named.

Pure Python (no Streamlit): `read_link` turns a URL's query parameters into typed values plus the
list of parameters it ignored and why; `write_link` turns the view back into parameters. The
settings panel takes its widget ranges from `FIELDS`, so a link and a slider accept the same values (and
`Field.clean` keeps a slider's float noise out of the value, so the link need not round it).

The retrieval knobs travel as ONE field, `settings`: the canonical string of `RetrievalSettings`
(`preset=hybrid fusion=convex(dense_weight=0.5,...) rerank_weight=0.3 ...`) written from the value itself (floats
as `repr`, so exactly) and parsed back by its one parser, `RetrievalSettings.parse`. Links made before it, one
parameter per knob (`i_dense_weight=0.3&i_fusion=rrf`), are still read. The
components (reranker, HyDE, generator, facts, classifier, multi-query, mood) are fields of their own.

A link always carries every field — a default written out cannot change meaning when the default
(or the biggest scope) changes later — and the store's table version (`v`), so a reader can be told
that the store changed since the link was made.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping, Sequence

from retrieval.pipeline.config import (CLASSIFIER_CHOICES, GENERATOR_CHOICES, LEGACY_NAMES, RERANKER_CHOICES,
                                       PipelineConfig)
from retrieval.fusion import FUSIONS, NORMALIZATIONS, FusionStrategy
from retrieval.pipeline.presets import PRESETS, get_preset
from retrieval.pipeline.settings import KNOBS, SETTINGS_KNOBS, SWITCHES, RetrievalSettings

from .text import code, plain

ALL_SCOPES = "(all scopes)"
ALL_SCOPES_PARAM = "all"
MAX_QUERY = 2000
MAX_TEXT = 300
DEPTHS = (10, 20, 30, 50)  # rank-flow depths offered


@dataclass(frozen=True)
class Field:
    """What one URL parameter may hold; numeric ranges are the widget's ranges."""

    kind: str  # "choice" | "float" | "int" | "bool" | "text"
    choices: tuple[str, ...] = ()
    lo: float = 0.0
    hi: float = 0.0
    step: float = 1.0
    max_len: int = MAX_TEXT

    def parse(self, raw: str) -> Any:
        """The typed value, or ValueError saying what is allowed."""
        if self.kind == "choice":
            if raw not in self.choices:
                raise ValueError(f"not one of {', '.join(self.choices)}")
            return raw
        if self.kind == "bool":
            if raw.lower() not in ("true", "false"):
                raise ValueError("must be true or false")
            return raw.lower() == "true"
        if self.kind == "text":
            if len(raw) > self.max_len:
                raise ValueError(f"longer than {self.max_len} characters")
            return raw
        try:
            num = float(raw)
        except ValueError:
            raise ValueError(f"not a number; allowed: {self.describe()}") from None
        return self.check(num)

    def check(self, num: float) -> float | int:
        """A number as this field holds it, exactly (no rounding), or ValueError saying what is allowed."""
        if not math.isfinite(num) or not self.lo <= num <= self.hi or (self.kind == "int" and num != int(num)):
            raise ValueError(f"allowed: {self.describe()}")
        return int(num) if self.kind == "int" else float(num)

    def clean(self, num: float) -> float:
        """A slider's value without float noise: within 1e-9 of a step of its grid (0.35000000000000003) it is that
        step (0.35); any other value is kept exactly (a link may hold 0.123456789, and must read back as it)."""
        on_grid = self.lo + round((num - self.lo) / self.step) * self.step
        return round(on_grid, 10) if abs(num - on_grid) <= 1e-9 else float(num)

    def describe(self) -> str:
        kind = "an integer" if self.kind == "int" else "a number"
        return f"{kind} from {self.lo:g} to {self.hi:g}"


def _numeric(name: str) -> Field:
    """A numeric config field's link rule, from the one rule table (`KNOBS`): the slider's range."""
    knob = KNOBS[name]
    lo, hi = knob.ui_range
    if name == "split_threshold":
        lo = 0.0  # the slider's 0 = off
    elif knob.lo_open and lo == knob.lo:
        lo = knob.lo + (1 if knob.integer else knob.step)
    # A slider whose range and step are whole numbers (RRF k) moves in whole numbers.
    whole = all(float(x).is_integer() for x in (lo, hi, knob.step))
    return Field("int" if knob.integer or whole else "float", lo=lo, hi=hi, step=knob.step)


# Config fields: numeric ones from the rule table, the rest the choices the pipeline knows.
FIELDS: dict[str, Field] = {
    "preset": Field("choice", PRESETS),
    "fusion": Field("choice", FUSIONS),
    "normalization": Field("choice", NORMALIZATIONS),
    "reranker": Field("choice", RERANKER_CHOICES),
    "cross_encoder_path": Field("text"),
    "hyde": Field("bool"),
    "generator": Field("choice", GENERATOR_CHOICES),
    "openai_model": Field("text"),
    "facts": Field("bool"),
    "classifier": Field("choice", CLASSIFIER_CHOICES),
    **{name: Field("bool") for name in SWITCHES},  # on/off knobs (`adaptive`); a link without one leaves it off
    **{name: _numeric(name) for name in KNOBS},
}
# View fields: the query, the scope, the explained id, the rank-flow depth and the store version.
VIEW_FIELDS: dict[str, Field] = {"q": Field("text", max_len=MAX_QUERY), "id": Field("text"),
                                 "depth": Field("choice", tuple(str(d) for d in DEPTHS)), "v": Field("int", lo=0,
                                                                                                     hi=2**62)}
SETTINGS = "settings"  # the one field holding the retrieval knobs: `RetrievalSettings`' canonical string
MAX_SETTINGS = 1000
NEVER_FROM_LINK = {"openai_base_url": "the server URL is never read from a link (a link must not choose where "
                                      "a query, or a key, is sent)"}


@dataclass(frozen=True)
class Ignored:
    param: str
    value: str
    why: str

    def __str__(self) -> str:
        """`param=value` as one safe code span and the reason as text: a crafted link's value never
        renders as an image, a link or a tag where Streamlit reads Markdown."""
        value = self.value if len(self.value) <= 40 else self.value[:37] + "…"
        return f"{code(f'{self.param}={value}')} ({plain(self.why)})"


@dataclass(frozen=True)
class Link:
    """A link's valid values (absent ones are not set) and what it ignored."""

    config: dict[str, Any] = field(default_factory=dict)
    query: str | None = None
    scope: str | None = None  # a scope label, or ALL_SCOPES
    target: str | None = None
    depth: int | None = None
    version: int | None = None
    ignored: tuple[Ignored, ...] = ()
    settings: RetrievalSettings | None = None  # the link's `settings` field, when it held a valid one


def read_link(params: Mapping[str, str], prefix: str, scopes: Sequence[str], allow_all: bool = True) -> Link:
    """Typed values from the URL parameters that start with `prefix`; every other one is ignored by name.

    `scopes` are the store's scope labels (`user:maya`); `all` (or "(all scopes)") means every scope. The knobs
    come from the `settings` field when the link has one (an old link's per-knob fields are then ignored), else
    from an old link's per-knob fields.
    """
    cfg: dict[str, Any] = {}
    view: dict[str, Any] = {}
    ignored: list[Ignored] = []
    settings_param = f"{prefix}{SETTINGS}"
    has_settings = settings_param in params
    for param, raw in params.items():
        if not param.startswith(prefix) or param == settings_param:
            continue
        name, raw = param[len(prefix):], str(raw)
        name = LEGACY_NAMES.get(name, name)  # links made before the one-name-per-knob rename still work
        if name in NEVER_FROM_LINK:
            ignored.append(Ignored(param, raw, NEVER_FROM_LINK[name]))
            continue
        if name in SETTINGS_KNOBS and has_settings:
            ignored.append(Ignored(param, raw, f"the link's {settings_param} field holds this knob"))
            continue
        if name == "scope":
            label = ALL_SCOPES if raw in (ALL_SCOPES_PARAM, ALL_SCOPES) else raw
            if (label == ALL_SCOPES and allow_all) or label in scopes:
                view["scope"] = label
            else:
                ignored.append(Ignored(param, raw, "no such scope in this store"))
            continue
        spec = FIELDS.get(name) or VIEW_FIELDS.get(name)
        if spec is None:
            ignored.append(Ignored(param, raw, "unknown parameter"))
            continue
        try:
            value = spec.parse(raw)
        except ValueError as exc:
            ignored.append(Ignored(param, raw, str(exc)))
            continue
        (cfg if name in FIELDS else view)[name] = value
    settings = None
    if has_settings:
        settings = _read_settings(settings_param, str(params[settings_param]), cfg, ignored)
    else:
        _check_old_fusion(prefix, cfg, ignored)
    return Link(config=cfg, query=view.get("q"), scope=view.get("scope"), target=view.get("id") or None,
                depth=int(view["depth"]) if "depth" in view else None, version=view.get("v"), ignored=tuple(ignored),
                settings=settings)


def _check_old_fusion(prefix: str, cfg: dict[str, Any], ignored: list[Ignored]) -> None:
    """An old per-knob link naming a fusion its preset does not allow: the fusion is ignored, by name."""
    preset = get_preset(cfg.get("preset", PipelineConfig().settings.preset_name))
    if "fusion" in cfg and cfg["fusion"] not in preset.fusions:
        why = f"the {preset.name} preset is always {preset.fusions[0].upper()}" if len(preset.fusions) == 1 else \
            f"the {preset.name} preset allows only {', '.join(preset.fusions)}"
        ignored.append(Ignored(f"{prefix}fusion", cfg.pop("fusion"), why))


def _read_settings(param: str, raw: str, cfg: dict[str, Any], ignored: list[Ignored]) -> RetrievalSettings | None:
    """The `settings` field: parsed and validated by `RetrievalSettings` (a bad value is ignored whole, with its
    error); each knob is then put into `cfg` as the panel's field, unless it lies outside its slider's range."""
    if len(raw) > MAX_SETTINGS:
        ignored.append(Ignored(param, raw, f"longer than {MAX_SETTINGS} characters"))
        return None
    try:
        settings = RetrievalSettings.parse(raw)
    except ValueError as exc:
        ignored.append(Ignored(param, raw, str(exc)))
        return None
    for name, value in settings.config_fields().items():
        if name in KNOBS:  # the value's own number, exactly: the slider shows it and makes the same value again
            try:
                value = FIELDS[name].check(value)
            except ValueError as exc:
                ignored.append(Ignored(param, f"{name}={fmt(value)}", f"{name} on the slider: {exc}"))
                continue
        cfg[name] = value
    return settings


def fmt(value: Any) -> str:
    """A value as the URL writes it: booleans lower-case, floats without float noise (0.35, not 0.35000000000000003)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{round(value, 6):g}"
    return str(value)


def write_link(prefix: str, cfg: PipelineConfig, query: str, scope: str | None, target: str | None = None,
               depth: int | None = None, version: int | None = None) -> dict[str, str]:
    """Every parameter of the view, defaults included (never the server URL): the retrieval knobs as the one
    `settings` field, the components as fields of their own."""
    out = {f"{prefix}q": query, f"{prefix}scope": ALL_SCOPES_PARAM if scope in (None, ALL_SCOPES) else scope}
    out[f"{prefix}{SETTINGS}"] = str(cfg.settings)  # the value itself, exactly: it parses back to the same value
    out.update({f"{prefix}{name}": fmt(getattr(cfg, name)) for name in FIELDS if name not in SETTINGS_KNOBS})
    if target:
        out[f"{prefix}id"] = target
    if depth is not None:
        out[f"{prefix}depth"] = str(depth)
    if version is not None:
        out[f"{prefix}v"] = str(version)
    return out


def relinked(params: Mapping[str, str], prefix: str, fusion: FusionStrategy, preset: str | None = None
             ) -> dict[str, str]:
    """The link `params` with its settings value's fusion replaced by `fusion` (and its preset by `preset`), through
    the one value: its `settings` field rewritten, any old per-knob field dropped (it would be ignored beside it).
    The value is the link's own as `read_link` reads it (an old link's per-knob fields on the defaults; a link with
    no valid knobs, the defaults)."""
    field_ = f"{prefix}{SETTINGS}"
    link = read_link(params, prefix, ())
    try:
        base = link.settings or PipelineConfig().with_(**link.config).settings
    except ValueError:  # an old link whose fields are each valid but not together (both weights 0)
        base = RetrievalSettings()
    base = base.with_(preset=preset) if preset is not None else base
    out = {k: v for k, v in params.items()
           if not (k.startswith(prefix) and LEGACY_NAMES.get(k[len(prefix):], k[len(prefix):]) in SETTINGS_KNOBS)}
    out[field_] = str(base.with_(fusion=fusion))
    return out


def store_changed(link_version: int | None, current: int) -> str | None:
    """A sentence when the link was made against another version of the store, else None."""
    if link_version is None or link_version == current:
        return None
    return (f"This link was made when the store was at version {link_version}; it is now at version {current} "
            "(traces were added, changed or deleted since), so the lists may differ from what the sender saw.")


def ignored_sentence(ignored: Sequence[Ignored]) -> str | None:
    if not ignored:
        return None
    return ("Ignored link parameter(s), so their defaults are used instead: "
            + "; ".join(str(i) for i in ignored) + ".")
