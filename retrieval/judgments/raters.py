"""Several raters, one set of grades for metrics: the combination policy of a case (pure).

A case says how its raters' grades become the grades metrics read (`CasePolicy`): `mean` (the mean grade,
rounded to the nearest grade, halves up), `majority` (the most frequent grade; a tie goes to the lowest of the
tied grades, so a disputed result never counts as more relevant than its raters agree) or `rater` (one named
rater's grades only). Human raters only, unless the case turned the machine rater (the LLM judge, rater
`machine`) on after its calibration (agreement with each human rater) was shown; other machine-made grades
(e.g. rater `implicit`, from logged feedback) count only when a case names them as its one rater. "Can't rate"
and stale grades (content edited since) never count. The policy also holds the case's k (its metrics' cut-off).
"""
from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.judgments.model import Judgment, check_rater, query_key, scope_text

POLICIES = ("mean", "majority", "rater")
MACHINE = "machine"


@dataclass(frozen=True)
class CasePolicy:
    combine: str = "mean"
    rater: str = ""  # combine == "rater": whose grades
    k: int = 10
    machine: bool = False  # the machine rater's grades count too (only once calibrated)
    calibration: Mapping[str, object] = field(default_factory=dict)  # what was shown when `machine` was turned on

    def __post_init__(self):
        if self.combine not in POLICIES:
            raise ValueError(f"combination policy {self.combine!r} is unknown; use one of {', '.join(POLICIES)}")
        if self.combine == "rater":
            check_rater(self.rater)
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 1000:
            raise ValueError(f"k must be a whole number from 1 to 1000, got {self.k!r}")
        if (self.machine or self.rater == MACHINE) and not self.calibration:
            raise ValueError("the machine rater's grades may be used only after its agreement with the human raters "
                             "has been computed and shown (calibrate it on the Judge page or `judge agreement`)")

    def describe(self) -> str:
        """What sits beside every metric: how the grades were combined."""
        who = "human raters" + (" + machine" if self.machine else "")
        if self.combine == "rater":
            return f"grades of rater {self.rater} only"
        return f"grades: {self.combine} of {who}"

    def counts(self, j: Judgment) -> bool:
        """Does this grade take part (before staleness and "can't rate")?"""
        if self.combine == "rater":
            return j.who == self.rater
        return j.grader == "human" or (self.machine and j.grader == MACHINE and j.who == MACHINE)

    def to_json(self) -> str:
        return json.dumps({"combine": self.combine, "rater": self.rater, "k": self.k, "machine": self.machine,
                           "calibration": dict(self.calibration)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CasePolicy:
        """A stored policy, validated by pydantic (each field of its type, then the policy's own checks);
        ValueError naming the field when it does not validate."""
        from pydantic import ValidationError

        try:
            return _policy_validator().validate_json(text)
        except ValidationError as exc:
            e = exc.errors()[0]
            where = " field " + ".".join(map(str, e["loc"])) if e["loc"] else ""
            raise ValueError(f"case policy{where}: {e['msg'].removeprefix('Value error, ')}") from None


@functools.cache  # built once, on the first policy read (a constant, not a cache of data)
def _policy_validator() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(CasePolicy)


def combine(grades: Sequence[int], how: str = "mean") -> int:
    """One grade from several raters' grades of the same (query, trace)."""
    if not grades:
        raise ValueError("nothing to combine: no grade")
    if how == "majority":
        counts = Counter(grades)
        top = max(counts.values())
        return min(g for g, n in counts.items() if n == top)
    if how in ("mean", "rater"):
        return int(math.floor(sum(grades) / len(grades) + 0.5))
    raise ValueError(f"combination policy {how!r} is unknown; use one of {', '.join(POLICIES)}")


Item = tuple[str, str, str]  # (scope text, query key, trace id)


def item_key(j: Judgment) -> Item:
    return (scope_text(j.scope), query_key(j.query), j.trace_id)


def usable(judgments: Iterable[Judgment], hashes: Mapping[str, str] | None = None) -> list[Judgment]:
    """The grades that are grades: not "can't rate", not stale against `hashes` (trace id -> content hash)."""
    hashes = hashes or {}
    return [j for j in judgments if not j.cant_rate and not j.stale(hashes.get(j.trace_id))]


def combined_grades(judgments: Iterable[Judgment], policy: CasePolicy,
                    hashes: Mapping[str, str] | None = None) -> dict[Item, int]:
    """{(scope, query key, trace id): grade} as the policy combines the usable grades."""
    by_item: dict[Item, dict[str, int]] = {}
    for j in usable(judgments, hashes):
        if policy.counts(j):
            by_item.setdefault(item_key(j), {})[j.who] = j.grade
    return {k: combine(list(v.values()), policy.combine) for k, v in by_item.items()}


def raters_per_item(judgments: Iterable[Judgment]) -> dict[Item, list[str]]:
    """{item: the raters who graded it} (human and machine, "can't rate" included as a rating)."""
    out: dict[Item, list[str]] = {}
    for j in judgments:
        out.setdefault(item_key(j), []).append(j.who)
    return {k: sorted(set(v)) for k, v in out.items()}
