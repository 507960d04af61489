"""The shared parts of every fusion strategy: the `Fused` record each returns, the weight check, and the
declared-choice enum (as Haystack's `JoinMode`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class _Choice(StrEnum):
    """A declared choice (as Haystack's `JoinMode`): members compare equal to their strings; `from_str` turns
    config, link and CLI text into a member or a ValueError naming the parameter and every allowed value."""

    @classmethod
    def parameter(cls) -> str:
        return cls.__name__.lower()

    @classmethod
    def from_str(cls, value: object) -> _Choice:
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
        raise ValueError(f"{cls.parameter()}={value!r} is unknown; use one of {', '.join(m.value for m in cls)}")


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    ranks: tuple[int | None, ...]
    contributions: tuple[float, ...]


def _check_weights(weights: Sequence[float], n: int, what: str) -> tuple[float, ...]:
    weights = tuple(float(w) for w in weights)
    if len(weights) != n:
        raise ValueError(f"got {len(weights)} weights for {n} {what}; give one weight per list")
    for i, w in enumerate(weights):
        if not math.isfinite(w):
            raise ValueError(f"weights[{i}]={w!r} is not finite; give a finite weight >= 0")
        if w < 0:
            raise ValueError(f"weights[{i}]={w!r} is negative; weights must be >= 0")
    return weights


