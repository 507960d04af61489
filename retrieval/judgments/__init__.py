"""Judgments, cases and snapshots (SPEC §14): grade results, keep query sets, compare configurations.

`store` (LanceDB tables beside `traces`), `io` (BEIR / TREC / JSONL), `metrics` (ir-measures),
`snapshots` (run a config over a case), `diff` (compare two), `machine` (LLM grades, kappa).
"""
from retrieval.judgments.model import (GRADE_LABELS, SCALES, Case, CaseQuery, Judgment, Snapshot, SnapshotQuery,
                    check_case_name, check_grade)
from retrieval.judgments.store import JudgmentStore

__all__ = ["GRADE_LABELS", "SCALES", "Case", "CaseQuery", "Judgment", "JudgmentStore", "Snapshot", "SnapshotQuery",
           "check_case_name", "check_grade"]
