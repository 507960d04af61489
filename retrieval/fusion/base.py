"""The shared parts of every fusion strategy (LanceDB's `rerankers/` habit: one file per strategy on a small
base): the `Fused` record each returns, the weight check, the declared-choice enum (as Haystack's `JoinMode`),
`score_fusion` (a weighted sum of per-list normalised scores), `Param` (a declared parameter: ir_measures'
`dtype, choices, default`) and `FusionStrategy`, the base every registered strategy subclasses."""
from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar


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




def score_fusion(score_lists: Sequence[Sequence[tuple[str, float]]], weights: tuple[float, ...],
                 normalise: Callable[[int, list[float]], list[float]]) -> list[Fused]:
    """`score(id) = Σ_i weights[i] · normalise(i, list i's scores)[id]`, 0 from a list that lacks the id: the shared
    body of every score-based strategy. Each list is `(id, score)` pairs in rank order, higher better; a repeated
    id keeps its first (best) occurrence and the repeat is left out of the list's statistics. `ranks[i]` is the
    1-based position in list i (None if absent), `contributions[i]` = weights[i] × normalised. Sorted by score
    desc, ties by id asc. Scores must be finite (ValueError naming the list, position and id)."""
    if not score_lists:
        return []
    rank_maps: list[dict[str, int]] = []
    norm_maps: list[dict[str, float]] = []
    for i, lst in enumerate(score_lists):
        ids = [p[0] for p in lst]
        scores = [float(p[1]) for p in lst]
        if not all(map(math.isfinite, scores)):
            pos = next(j for j, s in enumerate(scores) if not math.isfinite(s))
            raise ValueError(f"score_lists[{i}][{pos}] has score {scores[pos]!r} for id {ids[pos]!r}; "
                             "scores must be finite numbers")
        # Built back to front so an id's first (best) position is the one that stays.
        rank_of = {doc_id: pos for pos, doc_id in reversed(list(enumerate(ids, 1)))}
        if len(rank_of) < len(ids):
            ids = list(rank_of)
            scores = [scores[rank_of[doc_id] - 1] for doc_id in ids]
        rank_maps.append(rank_of)
        norm_maps.append(dict(zip(ids, normalise(i, scores))))
    fused = []
    for doc_id in dict.fromkeys(doc_id for m in rank_maps for doc_id in m):
        contrib = tuple([w * m.get(doc_id, 0.0) for w, m in zip(weights, norm_maps)])
        fused.append(Fused(doc_id, sum(contrib), tuple([m.get(doc_id) for m in rank_maps]), contrib))
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused


def g4(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


@dataclass(frozen=True)
class Param:
    """One declared parameter of a strategy: enough to validate it, draw a control for it (the app's panel and the
    browser twin in Inspect) and search it (the fusion lab).

    `name` is the settings knob it travels as (`rrf_k`, `normalization`: stable, in links and config files);
    `attr` the strategy's field and its name in `str(strategy)` (`k`). `kind` is "float", "int" or "choice";
    a number lies in [lo, hi] (`lo_open`: > lo), `ui` is a slider's narrower range, `step` its step; a choice is
    one of `choices`. `grid` is what the fusion lab tries; `label` names its control."""

    name: str
    attr: str
    kind: str
    default: float | str
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    lo_open: bool = False
    ui: tuple[float, float] | None = None
    choices: tuple[str, ...] = ()
    grid: tuple[Any, ...] = ()
    help: str = ""
    label: str = ""

    @property
    def title(self) -> str:
        """What a control for it is labelled ("RRF k"; the knob's name when no label is declared)."""
        return self.label or self.name.replace("_", " ").capitalize()

    def check(self, value: Any) -> Any:
        """`value` as this parameter's type within its range, else ValueError naming it and what is allowed."""
        if self.kind == "choice":
            if isinstance(value, str) and value in self.choices:
                return str(value)
            raise ValueError(f"{self.name}={value!r} is unknown; use one of {', '.join(self.choices)}")
        integer = self.kind == "int"
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        lo = float(self.lo) if self.lo is not None else -math.inf
        hi = float(self.hi) if self.hi is not None else math.inf
        if (isinstance(value, bool) or not ok or not math.isfinite(value) or value < lo or value > hi
                or (self.lo_open and value == lo)):
            kind = "an integer" if integer else "a number"
            raise ValueError(f"{self.name}={value!r} must be {kind} {'>' if self.lo_open else '>='} {lo:g} and "
                             f"<= {hi:g}")
        return int(value) if integer else float(value)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON) for a generated control: name, type, range, default, step, choices."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


WEIGHTS = (Param("dense_weight", "w_d", "float", 0.5, 0.0, 1.0, 0.05, help="the dense list's weight",
                 label="Dense weight"),
           Param("sparse_weight", "w_s", "float", 0.5, 0.0, 1.0, 0.05, help="the sparse (BM25) list's weight",
                 label="Sparse weight"))
WEIGHT_NAMES = tuple(p.name for p in WEIGHTS)  # ("dense_weight", "sparse_weight"): the knob names, declared once


class FusionStrategy(ABC):
    """A registered way to make one list of the dense and the sparse lists. A subclass is a frozen dataclass whose
    fields are its own `params` (by `attr`) plus `weights` (dense, sparse); it declares its `name` (the registry
    key), `short` and `title` (for people), `in_words` (what it does, in words: Home's first sentence lists them),
    `formula` (what a trace's fused score is) and `fuse`. The rest —
    building from knobs, `str`, a per-list term of an explanation, a lab label — is shared here."""

    name: ClassVar[str]
    short: ClassVar[str]
    title: ClassVar[str]
    in_words: ClassVar[str]
    formula: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    weights: tuple[float, float]

    def __post_init__(self) -> None:
        """Valid by construction: each parameter checked against its declaration, the two weights as weights."""
        w = _check_weights(self.weights, 2, "sides (dense, sparse)")
        for p, v in zip(WEIGHTS, w):
            p.check(v)
        object.__setattr__(self, "weights", w)
        for p in self.params:
            object.__setattr__(self, p.attr, p.check(getattr(self, p.attr)))

    @abstractmethod
    def fuse(self, score_lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]) -> list[Fused]:
        """The fused list of `(id, score)` lists in rank order, one weight per list."""

    def normalised(self, scores: Sequence[float], raw: float) -> tuple[float, str] | None:  # noqa: ARG002
        """A score-based strategy: `raw`'s normalised value in its list and how it is made, with the list's own
        numbers (None for a rank-based one)."""
        return None

    def term(self, weight: float, rank: int | None, contribution: float, fmt: Callable[[Any], str] = g4) -> str:
        """One list's share of a trace's fused score, with its numbers: `w × normalised` (score-based)."""
        if rank is None:
            return "not in this list: 0"
        return f"{fmt(weight)} × {fmt(contribution / weight if weight else None)}"

    def explain_title(self, fmt: Callable[[Any], str] = g4) -> str:  # noqa: ARG002
        return f"{self.title}: each list adds weight × its normalised score"

    @classmethod
    def from_knobs(cls, knobs: Mapping[str, Any] | Any = None, **override: Any) -> FusionStrategy:
        """The strategy with its parameters read from `knobs` (a mapping or an object with the knob attributes;
        missing → the declared default), each checked against its declaration."""
        def get(name: str, default: Any) -> Any:
            if name in override:
                return override[name]
            v = knobs.get(name) if isinstance(knobs, Mapping) else getattr(knobs, name, None)
            return default if v is None else v

        weights = tuple(p.check(get(p.name, p.default)) for p in WEIGHTS)  # by name: `dense_weight=inf` is refused
        own = {p.attr: p.check(get(p.name, p.default)) for p in cls.params}
        return cls(weights=weights, **own)  # type: ignore[call-arg]

    def with_weights(self, weights: Sequence[float]) -> FusionStrategy:
        """This strategy with other (dense, sparse) weights, checked as any (adaptive fusion's per-query weights)."""
        return dataclasses.replace(self, weights=tuple(weights))  # type: ignore[type-var]

    def balanced(self, dense_weight: float) -> FusionStrategy:
        """This strategy weighted by one number, the balance: (dense, 1 − dense), the sparse weight rounded to 6
        digits so 1 − 0.7 is 0.3. The one place the lab's grid, the eval designs and `eval --dense-weight` turn a
        balance into weights."""
        return self.with_weights((dense_weight, round(1.0 - dense_weight, 6)))

    def knobs(self) -> dict[str, Any]:
        """This strategy's settings as knobs: `fusion`, the weights and its own parameters."""
        return {"fusion": self.name, **self.weight_knobs(), **self.own_knobs()}

    def weight_knobs(self) -> dict[str, float]:
        """The two side weights by their declared knob names (`WEIGHTS`)."""
        return dict(zip(WEIGHT_NAMES, self.weights))

    def own_knobs(self) -> dict[str, Any]:
        """This strategy's own parameters (not the weights) by knob name."""
        return {p.name: getattr(self, p.attr) for p in self.params}

    @property
    def spec(self) -> str:
        """The canonical string, `rrf(dense_weight=0.7,sparse_weight=0.3,rrf_k=60.0)` (floats exact, as `repr`):
        what the one settings value's string and stored records hold; `retrieval.fusion.parse_fusion` reads it."""
        own = ",".join(f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in self.knobs().items() if k != "fusion")
        return f"{self.name}({own})"

    @classmethod
    def declared(cls) -> dict[str, Param]:
        """Every parameter this strategy takes, by knob name: the weights and its own."""
        return {p.name: p for p in (*WEIGHTS, *cls.params)}

    @property
    def family(self) -> tuple[str, ...]:
        """What names a family of settings that differ only in numbers: `short` and its choices."""
        return (self.short, *(str(getattr(self, p.attr)) for p in self.params if p.kind == "choice"))

    @property
    def setting(self) -> str:
        """The family and its numeric parameters, without the weights ("RRF k=10", "convex minmax")."""
        nums = [f"{p.attr}={getattr(self, p.attr):g}" for p in self.params if p.kind != "choice"]
        return " ".join((*self.family, *nums))

    def __str__(self) -> str:
        own = [str(getattr(self, p.attr)) if p.kind == "choice" else f"{p.attr}={getattr(self, p.attr):g}"
               for p in self.params]
        return f"{type(self).__name__}({', '.join([*own, f'weights=({self.weights[0]:g}, {self.weights[1]:g})'])})"

    __repr__ = __str__

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """The strategy as plain data: a UI (the app's panel, the browser twin) is generated from it."""
        return {"name": cls.name, "short": cls.short, "title": cls.title, "formula": cls.formula,
                "params": [p.as_dict() for p in (*WEIGHTS, *cls.params)]}
