"""A store's learned adaptive-weight strengths: the record `python -m retrieval adapt --case NAME` writes.

Kept as the calibration is (`retrieval.store.calibration`): one JSON value under `retrieval.adaptive` in the
vector field's metadata, the record it replaces under `retrieval.adaptive.previous` for one undo, each change one
metadata-only commit. It is written only when the strengths learned on a case's tune half beat the fixed weights
on its held-out half with a paired 95 % interval above zero, and it is used only when `adaptive` is on: the
rules' strengths are then these instead of the shipped ones. Read back as untrusted data: a record that does not
parse, names another rule or holds a strength out of range is ignored (with a warning), never applied.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from retrieval.store.records import field_metadata, parse_record, undo_record, write_record

log = logging.getLogger(__name__)

KEY_ADAPTIVE = "retrieval.adaptive"
KEY_PREVIOUS = "retrieval.adaptive.previous"
# The rules and bound of `retrieval.pipeline.adaptive` (the store sits below the pipeline; a test checks they agree).
RULE_NAMES = ("identifier", "length", "rarity", "confidence")
MAX_STRENGTH = 0.2


@dataclass(frozen=True)
class AdaptiveRecord:
    """Learned strengths and the evidence: `interval` is the held-out paired bootstrap of learned − fixed."""

    strengths: dict[str, float]
    case: str
    by: str
    at: str  # ISO time it was recorded
    metric: str
    fixed: float  # held-out mean with the fixed weights
    learned: float  # held-out mean with the learned strengths
    interval: dict[str, float] = field(default_factory=dict)
    queries: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.strengths, dict) or sorted(self.strengths) != sorted(RULE_NAMES):
            raise ValueError(f"adaptive strengths must name exactly the rules {', '.join(RULE_NAMES)}")
        for name, v in self.strengths.items():
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or abs(v) > MAX_STRENGTH:
                raise ValueError(f"adaptive strength {name}={v!r} is out of range [−{MAX_STRENGTH}, {MAX_STRENGTH}]")
        for name in ("case", "by", "at", "metric"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"adaptive record field {name!r} must be text")

    def values(self) -> tuple[float, ...]:
        """The strengths in rule order (what `Strengths(*values)` takes)."""
        return tuple(float(self.strengths[r]) for r in RULE_NAMES)

    def describe(self) -> str:
        s = ", ".join(f"{r} {self.strengths[r]:+g}" for r in RULE_NAMES)
        return f"learned from case {self.case!r} ({self.at[:10]}): {s}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdaptiveRecord:
        """Parse a stored record; ValueError naming what is wrong (`store.records.parse_record`)."""
        return parse_record(cls, text, "adaptive record")


def _parse(text: str | None) -> AdaptiveRecord | None:
    if not text:
        return None
    try:
        return AdaptiveRecord.from_json(text)
    except (ValueError, TypeError) as exc:
        log.warning("ignoring the store's adaptive record: %s", exc)
        return None


def read_adaptive(store: Any) -> AdaptiveRecord | None:
    """The store's learned strengths, or None (none recorded, no table, or a record that does not validate)."""
    try:
        return _parse(field_metadata(store).get(KEY_ADAPTIVE))
    except Exception as exc:  # an unreadable table: the shipped rules, as before
        log.warning("could not read the store's adaptive record: %s", exc)
        return None


def write_adaptive(store: Any, record: AdaptiveRecord) -> None:
    """Record `record`, keeping the current one as the previous (one metadata-only commit)."""
    write_record(store, KEY_ADAPTIVE, KEY_PREVIOUS, record.to_json(), "learned adaptive strengths")


def undo_adaptive(store: Any) -> AdaptiveRecord | None:
    """Restore the previous record (or none); returns what is now in force. ValueError when there is nothing."""
    return _parse(undo_record(store, KEY_ADAPTIVE, KEY_PREVIOUS, "learned adaptive strengths"))


__all__ = ["KEY_ADAPTIVE", "AdaptiveRecord", "read_adaptive", "undo_adaptive", "write_adaptive"]
