"""Judgments, cases and snapshots as frozen values, with the validation every writer shares.

A judgment grades one trace for one query in one scope. It is keyed by (scope, query text, trace id,
grader), not by a case: a grade given in Inspect counts for every case holding that query. Human and
machine grades are separate rows (`grader`) and never mix: metrics read the human ones unless asked.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping

from retrieval.fusion.base import WEIGHT_NAMES
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import STAGES
from retrieval.types import Scope
from retrieval.metrics import credited

SUMMARY_KNOBS = ("fusion", *WEIGHT_NAMES, "rrf_k")  # a snapshot summary's fusion columns

SCALES: dict[str, tuple[int, ...]] = {"graded": (0, 1, 2, 3), "binary": (0, 1)}
GRADE_LABELS = {0: "not relevant", 1: "related", 2: "relevant", 3: "perfect"}
GRADERS = ("human", "machine", "implicit")  # implicit: feedback in an agent's retrieval log (retrieval.replay)
CANT_RATE = -1  # a rater's "can't rate" (with an optional reason in `note`): stored, never a grade in metrics
RATER_RULE = "letters, digits, '.', '_', '-', '+' or '@', starting with a letter or digit, at most 80 characters"
_RATER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,79}")
CASE_NAME_RULE = "letters, digits, '-', '_' or '.', starting with a letter or digit, at most 64 characters"
_CASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_case_name(name: object) -> str:
    """The name, or ValueError naming the odd characters and the rule."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"case name {name!r} is empty; use {CASE_NAME_RULE}, e.g. 'demo-v2'")
    if not _CASE_NAME.fullmatch(name):
        odd = "".join(dict.fromkeys(c for c in name if not re.fullmatch(r"[A-Za-z0-9_.-]", c)))
        why = f"has odd characters ({odd!r})" if odd else "is too long or starts with '-', '_' or '.'"
        raise ValueError(f"case name {name!r} {why}; use {CASE_NAME_RULE}, e.g. 'demo-v2'")
    return name


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"grading scale {scale!r} is unknown; use one of {', '.join(SCALES)}")
    return scale


def check_grade(grade: object, scale: str = "graded") -> int:
    """An integer grade on `scale` (2.0 is accepted as 2), or ValueError naming the allowed grades."""
    allowed = SCALES[check_scale(scale)]
    value: Any = grade
    if isinstance(grade, str):
        try:
            value = float(grade.strip())
        except ValueError:
            value = grade
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or int(value) != value or int(value) not in allowed:  # inf (a JSON 1e400) is no grade either
        raise ValueError(f"grade {grade!r} is outside the {scale} scale; use one of "
                         f"{', '.join(map(str, allowed))}")
    return int(value)


def check_rater(name: object) -> str:
    """A rater's name (a sign-in identity such as maya@example.com, or a chosen name), or ValueError with the rule."""
    if not isinstance(name, str) or not _RATER.fullmatch(name):
        raise ValueError(f"rater name {name!r} is not usable; use {RATER_RULE}, e.g. 'maya'")
    return name


def content_hash(text: str) -> str:
    """What a grade records of the trace it graded: 16 hex digits of the content's BLAKE2b."""
    return hashlib.blake2b(str(text).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def check_grader(grader: str) -> str:
    if grader not in GRADERS:
        raise ValueError(f"grader {grader!r} is unknown; use one of {', '.join(GRADERS)}")
    return grader


def query_key(query: str) -> str:
    """How judgments match a query: whitespace collapsed, case folded."""
    return " ".join(str(query).split()).casefold()


def scope_text(scope: Scope | None) -> str:
    """'' means all scopes."""
    return "" if scope is None else str(scope)


def parse_scope(text: str | Scope | None) -> Scope | None:
    if text is None or isinstance(text, Scope):
        return text
    return Scope.parse(text) if str(text).strip() else None


@dataclass(frozen=True)
class LabelledQuery:
    """A query with its graded relevant ids: what evaluation, Compare and Tune score a ranking against."""
    qid: str
    query: str
    qrels: dict[str, float]
    scope: Scope | None = None
    category: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Judgment:
    """One rater's grade. `grader` is the kind ("human" or "machine"); `rater` the name ("human" for grades made
    before raters had names, "machine" for the LLM judge). `content_hash` is the graded content's hash ("" =
    unknown, never stale); `grade == CANT_RATE` is "can't rate" with the reason in `note`."""
    scope: Scope | None
    query: str
    trace_id: str
    grade: int
    grader: str = "human"
    source: str = ""  # "inspect", "judge", "import:FILE", or the generator that graded it
    updated_at: float = 0.0
    rater: str = ""  # "" = the grader's kind ("human" / "machine")
    content_hash: str = ""
    note: str = ""
    prompt_version: str = ""  # machine grades: the prompt that produced it
    created_at: float = 0.0

    @property
    def who(self) -> str:
        return self.rater or self.grader

    @property
    def cant_rate(self) -> bool:
        return self.grade == CANT_RATE

    def stale(self, current_hash: str | None) -> bool:
        """Graded content that has changed since (unknown on either side: not stale)."""
        return bool(self.content_hash and current_hash and self.content_hash != current_hash)


@dataclass(frozen=True)
class CaseQuery:
    qid: str
    query: str
    scope: Scope | None = None
    note: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    queries: tuple[CaseQuery, ...]
    scale: str = "graded"
    note: str = ""
    created_at: float = 0.0

    def __post_init__(self):
        check_case_name(self.name)
        check_scale(self.scale)


@dataclass(frozen=True)
class SnapshotQuery:
    """One case query as a snapshot ran it: every stage list (ids and scores) and its metrics."""

    qid: str
    query: str
    scope: Scope | None
    stage_ids: Mapping[str, tuple[str, ...]]
    stage_scores: Mapping[str, tuple[float, ...]]
    credit: Mapping[str, str] = field(default_factory=dict)  # fact-graph trace -> its source trace
    metrics: Mapping[str, float] = field(default_factory=dict)  # final list; empty when ungraded
    error: str = ""

    def credited(self, stage: str = "final") -> list[str]:
        """The stage's ids with fact-graph traces credited to their source (first appearance kept)."""
        return credited(self.stage_ids.get(stage, ()), self.credit)

    def to_dict(self) -> dict:
        return {"qid": self.qid, "query": self.query, "scope": scope_text(self.scope),
                "stage_ids": {s: list(v) for s, v in self.stage_ids.items()},
                "stage_scores": {s: [round(float(x), 6) for x in v] for s, v in self.stage_scores.items()},
                "credit": dict(self.credit), "metrics": dict(self.metrics), "error": self.error}

    @classmethod
    def from_dict(cls, d: Mapping) -> SnapshotQuery:
        return cls(str(d["qid"]), str(d["query"]), parse_scope(d.get("scope")),
                   {s: tuple(d["stage_ids"].get(s, ())) for s in STAGES},
                   {s: tuple(d.get("stage_scores", {}).get(s, ())) for s in STAGES},
                   dict(d.get("credit", {})), dict(d.get("metrics", {})), str(d.get("error", "")))


@dataclass(frozen=True)
class Snapshot:
    """A configuration run over a case: the config, every stage list per query, the metrics."""

    id: str
    case: str
    created_at: float
    config: PipelineConfig
    queries: tuple[SnapshotQuery, ...]
    metrics: Mapping[str, float]  # mean over judged queries, final list
    stage_metrics: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    qrels: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # human grades when it ran
    label: str = ""
    elapsed_ms: float = 0.0
    embedder: str = ""
    store_version: int | None = None  # the traces table version it ran against (SPEC §16: re-run as of it)

    @property
    def judged_queries(self) -> int:
        return sum(1 for q in self.queries if q.metrics)

    def scopes_text(self) -> str:
        """The scopes its queries ran in, as the light `scopes` column holds them: a JSON list of scope texts, so
        who may see the run is known without decoding its payload (`VisibleJudgments`)."""
        return json.dumps(sorted({scope_text(q.scope) for q in self.queries}))

    def payload(self) -> str:
        return json.dumps({"queries": [q.to_dict() for q in self.queries], "qrels": self.qrels,
                           "stage_metrics": self.stage_metrics, "embedder": self.embedder,
                           "store_version": self.store_version})

    def summary(self) -> dict:
        cfg = self.config
        fusion = cfg.settings.fusion_defaults()  # a knob the strategy does not use: the preset's
        return {"snapshot": self.id, "case": self.case, "label": self.label, "created_at": self.created_at,
                "preset": cfg.settings.preset_name, **{k: fusion[k] for k in SUMMARY_KNOBS},
                "queries": len(self.queries),
                "judged_queries": self.judged_queries, **{m: round(v, 6) for m, v in self.metrics.items()}}

    def to_row(self) -> dict:
        return {"id": self.id, "case_name": self.case, "created_at": float(self.created_at), "label": self.label,
                "config": self.config.to_json(), "metrics": json.dumps(dict(self.metrics)),
                "payload": self.payload(), "elapsed_ms": float(self.elapsed_ms), "scopes": self.scopes_text()}

    @classmethod
    def from_row(cls, row: Mapping) -> Snapshot:
        p = json.loads(row["payload"])
        return cls(row["id"], row["case_name"], float(row["created_at"]), PipelineConfig.from_json(row["config"]),
                   tuple(SnapshotQuery.from_dict(q) for q in p["queries"]), json.loads(row["metrics"]),
                   p.get("stage_metrics", {}), {q: {t: int(g) for t, g in r.items()} for q, r in p["qrels"].items()},
                   row.get("label") or "", float(row.get("elapsed_ms") or 0.0), p.get("embedder", ""),
                   p.get("store_version"))

