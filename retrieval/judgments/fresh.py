"""The one rule for "stale" (issue 32): a grade is stale when the trace it graded has changed since — its recorded
content hash differs from the hash of the trace's content now (unknown on either side: not stale).

`current_hashes(judgments, get_traces)` is the "now" every path compares against: `snapshot run`, the Judge page's
agreement and downloads, `judge export`, `judge agreement`, `case export`, evaluation's labelled queries. A caller
that knows which traces to read (a snapshot as of a version) passes their `get`; otherwise the store's traces table
as it is now (`traces_now`), read-only.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from retrieval.judgments.model import Judgment, content_hash

GetTraces = Callable[[Sequence[str]], Iterable[Any]]  # ids -> traces with `.id` and `.content`


def traces_now(uri: str, storage_options: Mapping[str, str] | None = None) -> GetTraces:
    """`get(ids)` of the store's traces table as it is now; opened read-only and only when called (no embedder)."""
    def get(ids: Sequence[str]) -> Iterable[Any]:
        from retrieval.store.memory import MemoryStore

        return MemoryStore(uri, read_only=True, storage_options=storage_options).get(list(ids))
    return get


def current_hashes(judgments: Iterable[Judgment], get_traces: GetTraces) -> dict[str, str]:
    """{trace id: content hash now} for the traces of `judgments` that recorded a hash (what `Judgment.stale`
    compares against). A trace no longer in the store has no hash now: its grades are unknown, not stale."""
    hashed = sorted({j.trace_id for j in judgments if j.content_hash})
    return {t.id: content_hash(t.content) for t in get_traces(hashed)} if hashed else {}


def fresh(judgments: Iterable[Judgment], hashes: Mapping[str, str]) -> list[Judgment]:
    """The judgments that are not stale against `hashes` ("can't rate" kept: it is no grade either way)."""
    return [j for j in judgments if not j.stale(hashes.get(j.trace_id))]


def case_qrels(js: Any, get_traces: GetTraces, case: Any) -> tuple[dict[str, dict[str, int]], Any]:
    """(the case's qrels today — its raters combined by its policy, stale grades left out — and that policy):
    what the Snapshots page and `snapshot diff` score with. `js` is the `JudgmentStore`, `get_traces` the trace
    store's `get` (the current texts decide what is stale)."""
    pol = js.policy(case.name)
    hashes = current_hashes(js.case_judgments(case), get_traces)
    return js.qrels(case, policy=pol, hashes=hashes), pol
