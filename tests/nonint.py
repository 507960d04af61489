"""Non-interference fixtures: a store S of several users and S′ = S with every scope but the visitor's removed.

Both are built by the same sequence of writes (the hashing embedder, a fixed clock), each write of S′ being the
write of S restricted to the visitor's scope, and every write touches the visitor's scope: so S and S′ have the
same table versions, and a version number means the same state in both. The writes:

1. the demo corpus (three users) — S′: maya's notes only;
2. the BM25 statistics setting (`store` or `scope`);
3. one note of maya's about her washing machine, and 30 notes of priya's that say "washing machine" — S′: maya's;
4. one maya note and 17 of tomas's deleted — S′: maya's note.

Plus the visitor's own case (`maya-case`: two queries, grades) and one snapshot of it, in both.
`normalise` (below) is the one list of what may differ between the two renderings, and why.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from retrieval.ingest.demo import load_demo_traces
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace, Scope

VISITOR = "maya@example.com"
MAYA = Scope("user", "maya")
POLICY = f'[users."{VISITOR}"]\nscopes = ["user:maya"]\n'
NOW = datetime(2025, 9, 1, 12, 0, tzinfo=UTC)  # the fixed clock (recency, fact times)
QUERY = "washing machine error"
CASE = "maya-case"
CASE_QUERIES = (QUERY, "where do I live now?")
AS_OF = 4  # the version after the statistics setting (1 create, 2 schema, 3 corpus, 4 setting): before steps 3 and 4


def fixed_clock() -> datetime:
    return NOW


def _mine(t: MemoryTrace) -> bool:
    return t.scope == MAYA.scope and t.scope_id == MAYA.scope_id


def build(db: str, statistics: str, only_visitor: bool) -> None:
    """Build S (`only_visitor=False`) or S′ at `db`."""
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.judgments.store import JudgmentStore
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.core import Workspace

    keep = _mine if only_visitor else (lambda t: True)
    ws = Workspace(db, embedder=HashingEmbedder(384), clock=fixed_clock)
    ws.ingest([t for t in load_demo_traces() if keep(t)])
    ws.set_bm25_statistics(statistics)
    born = NOW - timedelta(days=3)
    batch = [MemoryTrace(id="maya-washer-note", scope="user", scope_id="maya", created_at=born,
                         content="The washing machine shows error E-4102 again; the technician comes on Friday.")]
    batch += [MemoryTrace(id=f"priya-washing-{n:02d}", scope="user", scope_id="priya", created_at=born,
                          content=f"Laundry day {n}: the washing machine at the shared flat beeped an error.")
              for n in range(30)]
    ws.ingest([t for t in batch if keep(t)])
    tomas = sorted(t.id for t in ws.store.all_traces() if t.scope_id == "tomas")[:17]
    ws.delete(["maya-phone-old"] + ([] if only_visitor else tomas))
    js = JudgmentStore(db)
    for q in CASE_QUERIES:
        js.add_to_case(CASE, q, MAYA)
    for tid, grade in (("maya-washer-error", 3), ("maya-washer-error-again", 2), ("maya-washer-note", 3),
                       ("maya-intro", 0)):
        js.set_grade(MAYA, QUERY, tid, grade)
    js.set_grade(MAYA, CASE_QUERIES[1], "maya-moved-berlin", 3)
    run_snapshot(ws, CASE, PipelineConfig(), js, label="first")


# ---------------------------------------------------------------- what may differ, and why
_WHEN = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\+00:00|Z| UTC)?")
_DURATION = re.compile(r"\d[\d,]*(?:\.\d+)?\s?(?:ms|s)\b")
_ELAPSED = re.compile(r'("(?:elapsed_ms|seconds|[a-z_]+_ms)":\s*)[\d.]+')


def normalise(text: str, window: tuple[datetime, datetime]) -> str:
    """`text` with only what necessarily differs between two builds and two runs replaced:

    - a date-time inside `window` (the test's own run): a commit time LanceDB stamps with the wall clock, or a
      snapshot's or a note's save time — S and S′ were written a few seconds apart; every other date (a note's
      `created_at`, a fact's time, all from the fixed clock or the corpus) is compared as it is;
    - a duration ("12 ms", "0.3s", `"elapsed_ms": 41.2`): how long this run took, which differs between any two
      runs of the same store (the time a search takes does grow with the store: a side channel this test does
      not close, and says so).
    Version numbers are NOT normalised: S and S′ have the same versions (see the module docstring).
    """
    lo, hi = window

    def when(m: re.Match) -> str:
        raw = m.group(0).replace(" UTC", "+00:00").replace("Z", "+00:00")
        try:
            t = datetime.fromisoformat(raw.replace(" ", "T"))
        except ValueError:
            return m.group(0)
        t = t if t.tzinfo else t.replace(tzinfo=UTC)
        return "<now>" if lo - timedelta(minutes=1) <= t <= hi + timedelta(minutes=1) else m.group(0)

    text = _WHEN.sub(when, text)
    text = _ELAPSED.sub(r"\1<t>", text)
    return _DURATION.sub("<t>", text)
