"""Judgments, cases and snapshots (SPEC §14): grade results, keep query sets, compare configurations.

`store` (LanceDB tables beside `traces`; plumbing in `tables`), `io` (BEIR / TREC / JSONL; the one
labelled-query parser), `snapshots` (run a config over a case, scored by `retrieval.metrics`), `diff` (compare
two), `machine` (LLM grades).
Judging as a team: a grade belongs to a rater and records the graded content's hash; `raters` (a case's
combination policy and k), `agreement` (kappa, alpha, calibration), `queue` (the blind pooled judging queue),
`exchange` (ratings per rater out and back in); `notes` (a free-text note per query, beside the grades).
"""
from retrieval.judgments.model import (CANT_RATE, GRADE_LABELS, SCALES, Case, CaseQuery, Judgment, Snapshot,
                                       SnapshotQuery, check_case_name, check_grade, check_rater, content_hash)
from retrieval.judgments.notes import QueryNote, query_note, set_query_note
from retrieval.judgments.raters import CasePolicy
from retrieval.judgments.store import JudgmentStore

__all__ = ["CANT_RATE", "GRADE_LABELS", "SCALES", "Case", "CaseQuery", "CasePolicy", "Judgment", "JudgmentStore",
           "QueryNote", "Snapshot", "SnapshotQuery", "check_case_name", "check_grade", "check_rater", "content_hash",
           "query_note", "set_query_note"]
