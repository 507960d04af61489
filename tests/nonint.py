"""Non-interference fixtures: a store S of several users and S′ = S with every scope but the visitor's removed.

Both are built by the same sequence of writes (the hashing embedder, a fixed clock), each write of S′ being the
write of S restricted to the visitor's scope, and every write touches the visitor's scope: so S and S′ have the
same table versions, and a version number means the same state in both. The writes:

1. the demo corpus (three users) — S′: maya's notes only;
2. the BM25 statistics setting (`store` or `scope`);
3. one note of maya's about her washing machine, and 30 notes of priya's that say "washing machine" — S′: maya's;
4. one maya note and 17 of tomas's deleted — S′: maya's note.

Plus the visitor's own case (`maya-case`: two queries, grades) and two snapshots of it, in both; and in S only,
priya's case (`priya-case`) with a grade and a snapshot.
`normalise` (below) is the one list of what may differ between the two renderings, and why.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from retrieval.ingest.demo import load_demo_traces
from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace, Scope

VISITOR = "maya@example.com"
MAYA, PRIYA = Scope("user", "maya"), Scope("user", "priya")
POLICY = f'[users."{VISITOR}"]\nscopes = ["user:maya"]\n'
NOW = datetime(2025, 9, 1, 12, 0, tzinfo=UTC)  # the fixed clock (recency, fact times)
QUERY = "washing machine error"
CASE = "maya-case"
CASE_QUERIES = (QUERY, "where do I live now?")
AS_OF = 4  # `build` with `statistics store`: 1 create, 2 schema, 3 corpus, 4 setting; then steps 3 and 4


def fixed_clock() -> datetime:
    return NOW


def _mine(t: MemoryTrace) -> bool:
    return t.scope == MAYA.scope and t.scope_id == MAYA.scope_id


def build(db: str, statistics: str, only_visitor: bool) -> int:
    """Build S (`only_visitor=False`) or S′ at `db`; returns the version after steps 1 and 2 (a setting equal to
    the store's default commits nothing, so it depends on `statistics`)."""
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.judgments.store import JudgmentStore
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace.core import Workspace

    keep = _mine if only_visitor else (lambda t: True)
    ws = Workspace(db, embedder=HashingEmbedder(384), clock=fixed_clock)
    ws.ingest([t for t in load_demo_traces() if keep(t)])
    ws.set_bm25_statistics(statistics)
    before = ws.store.version()
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
    run_snapshot(ws, CASE, PipelineConfig.for_preset("agentos"), js, label="second")
    if not only_visitor:
        js.add_to_case("priya-case", "status of ticket FX-209847", PRIYA)
        js.set_grade(PRIYA, "status of ticket FX-209847", "priya-lens-repair", 3)
        run_snapshot(ws, "priya-case", PipelineConfig(), js, label="priya's")
    return before


# ---------------------------------------------------------------- what may differ, and why
_WHEN = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\+00:00|Z| UTC)?")
_DURATION = re.compile(r"\d[\d,]*(?:\.\d+)?\s?(?:ms|s)\b")
_ELAPSED = re.compile(r'("(?:elapsed_ms|seconds|[a-z_]+_ms)":\s*)[\d.]+')
_SNAPSHOT = re.compile(r"\bs\d{8}-\d{6}-[0-9a-f]{6}\b")
_TIMINGS = re.compile(r'timings \(ms\):[^\n]*|"timings_ms": \{[^}]*\}')
_EPOCH = re.compile(r"\b1\d{9}(?:\.\d+)?\b")


def normalise(text: str, window: tuple[datetime, datetime], uris: tuple[str, ...] = ()) -> str:
    """`text` with only what necessarily differs between two builds and two runs replaced:

    - the store's own location (`uris`: S and S′ are two folders) — "<store>";
    - a snapshot's id (`s20261203-152032-b5545f`: its save time and six random hex digits) — "<snapshot>";

    - a date-time inside `window` (the test's own run): a commit time LanceDB stamps with the wall clock, or a
      snapshot's or a note's save time — S and S′ were written a few seconds apart; every other date (a note's
      `created_at`, a fact's time, all from the fixed clock or the corpus) is compared as it is;
    - the same as seconds since 1970 (`"created_at": 1796311816.93`), inside `window` only;
    - a duration ("12 ms", "0.3s", `"elapsed_ms": 41.2`, every number of a "timings (ms):" line or a
      `"timings_ms"` object, whose order is the order in which concurrent stages finished): how long this run
      took, which differs between any two runs of the same store (the time a search takes does grow with the
      store: a side channel this test does not close, and says so).
    Version numbers are NOT normalised: S and S′ have the same versions (see the module docstring).
    """
    lo, hi = window
    for uri in sorted(uris, key=len, reverse=True):
        text = text.replace(uri, "<store>")
    text = _SNAPSHOT.sub("<snapshot>", text)

    def when(m: re.Match) -> str:
        raw = m.group(0).replace(" UTC", "+00:00").replace("Z", "+00:00")
        try:
            t = datetime.fromisoformat(raw.replace(" ", "T"))
        except ValueError:
            return m.group(0)
        t = t if t.tzinfo else t.replace(tzinfo=UTC)
        return "<now>" if lo - timedelta(minutes=1) <= t <= hi + timedelta(minutes=1) else m.group(0)

    def epoch(m: re.Match) -> str:
        t = datetime.fromtimestamp(float(m.group(0)), UTC)
        return "<now>" if lo - timedelta(minutes=1) <= t <= hi + timedelta(minutes=1) else m.group(0)

    text = _WHEN.sub(when, text)
    text = _EPOCH.sub(epoch, text)
    text = _TIMINGS.sub(lambda m: m.group(0).split(":")[0] + ": <t>", text)
    text = _ELAPSED.sub(r"\1<t>", text)
    return _DURATION.sub("<t>", text)


def chart(spec: str) -> str:
    """A plotly spec with the plotted values of duration bars (a trace whose every label is a duration, the
    timings chart) replaced: they are durations too."""
    import json

    fig = json.loads(spec)
    for trace in fig.get("data", []):
        labels = trace.get("text")
        if isinstance(labels, list) and labels and all(isinstance(t, str) and _DURATION.fullmatch(t.strip())
                                                       for t in labels):
            for axis in ("x", "y"):
                if all(isinstance(v, (int, float)) for v in trace.get(axis, [None])):
                    trace[axis] = "<t>"
    return json.dumps(fig, sort_keys=True)


def sign_in_as_the_visitor(monkeypatch, tmp_path) -> None:
    """The limited visitor everywhere: the app's proxy header, the CLI's RETRIEVAL_USER, the policy, a fixed clock."""
    import ui.access

    policy = tmp_path / "access.toml"
    policy.write_text(POLICY)
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_ALLOW_GRADING", "RETRIEVAL_AUTH_HEADER"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    monkeypatch.setenv("RETRIEVAL_AUTH", "proxy")
    monkeypatch.setenv("RETRIEVAL_POLICY", str(policy))
    monkeypatch.setenv("RETRIEVAL_USER", VISITOR)  # the CLI's sign-in (retrieval/cli/gate.py)
    monkeypatch.setattr(ui.access, "request_headers", lambda: {"X-Forwarded-Email": VISITOR})
    monkeypatch.setattr("retrieval.store.memory.utcnow", fixed_clock)
