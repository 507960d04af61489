"""A store's calibrated fusion defaults: the record `python -m retrieval calibrate` writes (and undo removes).

Kept where the store keeps what built it (`retrieval.store.identity`): the metadata map of the vector field,
one JSON value under `retrieval.calibration`, beside the analyser. A new record keeps the one it replaces under
`retrieval.calibration.previous`, so one undo restores it (or, with none, removes the calibration). Each change
is one metadata-only commit (a new table version; no row is rewritten).

The record is read back as untrusted data: a value that does not parse, names an unknown fusion or holds a
weight out of range is ignored (with a warning), never applied. It applies to the `hybrid` preset only
(`agentos` stays exact); a setting a caller gives explicitly always wins over it.

The chosen fusion is one value, a `retrieval.fusion` strategy (`Convex(theoretical, weights=(0.4, 0.6))`), stored as
its canonical string (`convex(dense_weight=0.4,sparse_weight=0.6,normalization=theoretical)`) and checked by its
declarations. Records written before that, with loose `fusion`, `normalization`, `dense_weight`, `sparse_weight`
and `rrf_k` fields, are still read (into the same value).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, fields
from typing import Any

from retrieval.fusion import FusionStrategy, parse_fusion, strategy_for
from retrieval.store.records import MAX_RECORD_CHARS, field_metadata, parse_record, undo_record, write_record

log = logging.getLogger(__name__)

KEY_CALIBRATION = "retrieval.calibration"
KEY_PREVIOUS = "retrieval.calibration.previous"
CALIBRATED_PRESET = "hybrid"
# The loose knob fields of records written before the fusion was one value (read, never written).
OLD_KNOB_FIELDS = ("normalization", "dense_weight", "sparse_weight", "rrf_k")


@dataclass(frozen=True)
class CalibrationRecord:
    """What a calibration chose and the evidence: `interval` is the paired bootstrap of winner − default. `fusion`
    is the chosen strategy with its parameters and weights (its canonical string is accepted and stored)."""

    fusion: FusionStrategy
    label: str  # e.g. "RRF k=10, dense 0.4"
    by: str  # who ran it
    at: str  # ISO time it was recorded
    metric: str  # e.g. "ndcg@10" on pseudo-queries
    default_score: float  # held-out mean of the fixed default
    score: float  # held-out mean of the winner
    interval: dict[str, float] = field(default_factory=dict)  # delta, lo, hi, n, confidence
    sample: dict[str, Any] = field(default_factory=dict)  # queries, seed, scopes, method, clock
    preset: str = CALIBRATED_PRESET

    def __post_init__(self) -> None:
        if isinstance(self.fusion, str):
            object.__setattr__(self, "fusion", parse_fusion(self.fusion))  # ValueError naming what is wrong
        if not isinstance(self.fusion, FusionStrategy):
            raise ValueError(f"calibration fusion {self.fusion!r} is not a fusion strategy such as "
                             "'rrf(dense_weight=0.5,sparse_weight=0.5,rrf_k=10.0)'")
        if self.fusion.weights == (0.0, 0.0):
            raise ValueError("calibration weights are both 0")
        if self.preset != CALIBRATED_PRESET:
            raise ValueError(f"a calibration applies to the {CALIBRATED_PRESET} preset, not {self.preset!r}")

    def knobs(self) -> dict[str, Any]:
        """The fusion defaults this record gives the store: the strategy, its weights and its own parameters (the
        rest stay the preset's)."""
        return self.fusion.knobs()

    def describe(self) -> str:
        """One line for Home, Inspect and the CLI: the settings and the date."""
        return f"{self.label} ({self.at[:10]})"

    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return json.dumps({**data, "fusion": self.fusion.spec}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CalibrationRecord:
        """Parse a stored record, in its current shape or the old one with loose knob fields; ValueError naming
        what is wrong (`store.records.parse_record`)."""
        return parse_record(cls, _upgrade(text), "calibration record")


def _upgrade(text: str | bytes) -> str | bytes:
    """An old record (loose `fusion`, `normalization`, weights and `rrf_k`) in the current shape (the fusion as one
    canonical string); anything else unchanged, for `parse_record` to judge."""
    if len(text) > MAX_RECORD_CHARS:
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if not isinstance(data, dict) or not any(k in data for k in OLD_KNOB_FIELDS):
        return text
    old = {k: data.pop(k) for k in ("fusion", *OLD_KNOB_FIELDS) if k in data}
    try:
        data["fusion"] = strategy_for(old).spec  # ValueError when a value is out of range or the fusion unknown
    except TypeError:
        raise ValueError(f"calibration record (old shape) holds a knob of the wrong type: {old!r}") from None
    return json.dumps(data)


def _parse(text: str | None, where: str) -> CalibrationRecord | None:
    if not text:
        return None
    try:
        return CalibrationRecord.from_json(text)
    except (ValueError, TypeError) as exc:
        log.warning("ignoring the store's %s: %s", where, exc)
        return None


def read_calibration(store: Any) -> CalibrationRecord | None:
    """The store's calibration, or None (none recorded, no table yet, or a record that does not validate)."""
    return _parse(field_metadata(store).get(KEY_CALIBRATION), "calibration")


def read_previous(store: Any) -> CalibrationRecord | None:
    """The calibration the current one replaced (what undo restores), or None."""
    return _parse(field_metadata(store).get(KEY_PREVIOUS), "previous calibration")


def write_calibration(store: Any, record: CalibrationRecord) -> None:
    """Record `record` as the store's calibration, keeping the current one as the previous (one commit)."""
    write_record(store, KEY_CALIBRATION, KEY_PREVIOUS, record.to_json(), "a calibration")


def undo_calibration(store: Any) -> CalibrationRecord | None:
    """Restore the previous calibration (or remove the calibration when there is none); returns what is now
    in force. ValueError when the store has no calibration to undo."""
    return _parse(undo_record(store, KEY_CALIBRATION, KEY_PREVIOUS, "calibration"), "previous calibration")


def calibrated_fusion(store: Any, preset: Any = CALIBRATED_PRESET) -> FusionStrategy | None:
    """The fusion strategy a recorded calibration gives `preset` on this store (None for none, or another preset)."""
    name = getattr(preset, "name", preset)
    if name != CALIBRATED_PRESET:
        return None
    try:
        record = read_calibration(store)
    except Exception as exc:  # an unreadable table: the preset's defaults, as before calibration existed
        log.warning("could not read the store's calibration: %s", exc)
        return None
    return record.fusion if record is not None else None


def calibrated_knobs(store: Any, preset: Any = CALIBRATED_PRESET) -> dict[str, Any]:
    """`calibrated_fusion` as flat knobs ({} for none): the strategy's `knobs()`."""
    fusion = calibrated_fusion(store, preset)
    return fusion.knobs() if fusion is not None else {}


__all__ = ["CALIBRATED_PRESET", "KEY_CALIBRATION", "KEY_PREVIOUS", "CalibrationRecord", "calibrated_fusion",
           "calibrated_knobs",
           "read_calibration", "read_previous", "undo_calibration", "write_calibration"]
