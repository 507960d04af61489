"""The retrieval knobs as command-line flags, generated from their declarations and checked by the same rules as the
API: the fusion (`--fusion`, the registry's names), the weights and each strategy's parameters (`retrieval.fusion`'s
`Param`s: `--dense-weight`, `--rrf-k`, `--normalization`, …), the rerank weight (`KNOBS`); and `--settings STRING`,
the one settings value's canonical form (`RetrievalSettings`), which holds every knob at once.

A bad value is a usage error naming the knob and its range (one `error:` line, exit code 2), before any store is
opened. `--settings` with a knob flag beside it is refused rather than merged: one place says what a run used."""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from retrieval.fusion import FUSIONS, FusionStrategy
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.settings import CHOICES, FUSION_PARAMS, KNOBS, RetrievalSettings, check_choice, check_knob

# The knobs a command takes as flags of their own (the others — preset, top k, over-fetch, split, adaptive — keep
# the flags each command already had, with their defaults).
FLAG_KNOBS: tuple[str, ...] = ("fusion", *FUSION_PARAMS, "rerank_weight")
# The knob flags `eval` takes (`--dense-weight` is a balance there: sparse = 1 − dense, `FusionStrategy.balanced`).
EVAL_KNOBS: tuple[str, ...] = ("fusion", "normalization", "dense_weight", "rrf_k")
SETTINGS_HELP = ("every retrieval knob at once, in the canonical form of the one settings value, e.g. "
                 "'preset=hybrid fusion=rrf(dense_weight=0.7,sparse_weight=0.3,rrf_k=60.0) recall_top_k=10' "
                 "(a part left out is the preset's); not combined with the knob flags")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _knob_type(name: str):
    """An argparse `type` checking a number by the knob's declaration (`check_knob`)."""
    def parse(text: str) -> float | int:
        try:
            value: float | int = int(text) if KNOBS[name].integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={text!r} must be {KNOBS[name].describe()}") from None
        try:
            return check_knob(name, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = name  # argparse names the type in its message
    return parse


def _choice_type(name: str):
    def parse(text: str) -> str:
        try:
            return check_choice(name, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = name
    return parse


def settings_arg(text: str) -> RetrievalSettings:
    """`--settings STRING` as the one settings value, or a usage error naming the part that does not parse."""
    try:
        return RetrievalSettings.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _help(name: str) -> str:
    if name == "fusion":
        return "the fusion strategy: " + " | ".join(FUSIONS) + " (default: the preset's)"
    p = FUSION_PARAMS.get(name)
    what = p.help if p is not None and p.help else name.replace("_", " ")
    allowed = " | ".join(CHOICES[name]) if name in CHOICES else KNOBS[name].describe()
    return f"{what} ({allowed}; default: the preset's)"


def add_knob_flags(sp: argparse.ArgumentParser, names: Sequence[str] = FLAG_KNOBS, settings: bool = True,
                   notes: Mapping[str, str] | None = None) -> None:
    """One flag per knob in `names` (default None: the preset's, or the store's calibration), generated from the
    declarations; and `--settings STRING` unless `settings` is False. `notes` adds a command's own sentence to a
    flag's help (by knob name, or `settings`)."""
    notes = notes or {}

    def helped(name: str, text: str) -> str:
        return f"{text}; {notes[name]}" if name in notes else text

    if settings:
        sp.add_argument("--settings", type=settings_arg, metavar="STRING", help=helped("settings", SETTINGS_HELP))
    for name in names:
        if name in CHOICES:
            sp.add_argument(flag(name), type=_choice_type(name), metavar="|".join(CHOICES[name]),
                            help=helped(name, _help(name)))
        else:
            sp.add_argument(flag(name), type=_knob_type(name), metavar="X", help=helped(name, _help(name)))


def flag_knobs(args: argparse.Namespace, names: Sequence[str] = FLAG_KNOBS) -> dict[str, Any]:
    """The knob flags given (not None), by knob name."""
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def settings_knobs(args: argparse.Namespace, others: dict[str, tuple[str, Any]]) -> dict[str, Any] | None:
    """`--settings` as `PipelineConfig` fields (every knob the value holds), or None without it. ValueError when a
    knob flag is given beside it, or one of the command's `others` flags (dest → (knob, its value when not given):
    `--preset`, `--top-k`, …) is given and says something else."""
    s: RetrievalSettings | None = getattr(args, "settings", None)
    if s is None:
        return None
    clash = [flag(n) for n in flag_knobs(args)]
    fields = s.config_fields()
    clash += [flag(dest) for dest, (knob, unset) in others.items()
              if getattr(args, dest) not in (unset, fields[knob])]
    if clash:
        raise ValueError(f"--settings holds every retrieval knob; drop {', '.join(clash)} or put it in the string")
    return fields


def with_calibrated(cfg: PipelineConfig, calibrated: FusionStrategy | None, given: Mapping[str, Any]
                    ) -> PipelineConfig:
    """`cfg` fusing with the store's calibrated strategy as it is, unless none is recorded or a fusion knob was
    `given` (explicit knobs win as a whole, never mixed with calibrated ones)."""
    if calibrated is None or any(k in given for k in ("fusion", *FUSION_PARAMS)):
        return cfg
    return cfg.with_(settings=cfg.settings.with_(fusion=calibrated))
