"""Which logged queries to replay, and replaying them (pure but for `run`): the filters (scope, feedback, a low top
score), the sample orders (newest, random, low top score, drift) and each picked query then vs now vs as of its
time. The Log page draws these; anything else (a script, the CLI) replays the same way.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from retrieval.history.view import WorkspaceAsOf, pin
from retrieval.replay.compare import Replayed, replay
from retrieval.replay.logs import LoggedQuery, polarity
from retrieval.replay.store import sample

ORDERS = ("newest", "random", "low top score", "drift")
FEEDBACK = ("any", "positive", "negative", "none")


def feedback_kind(q: LoggedQuery) -> str:
    """`none` (no feedback), `positive`, `negative`, or `any` (feedback of neither sign)."""
    p = polarity(q.feedback)
    return "none" if q.feedback is None else "positive" if p > 0 else "negative" if p < 0 else "any"


def matching(queries: Iterable[LoggedQuery], scope: str | None = None, feedback: str = "any",
             low: float | None = None) -> list[LoggedQuery]:
    """The logged queries of `scope` (its text; None: any), of that `feedback` kind, with a top score at most
    `low` (None: any)."""
    if feedback not in FEEDBACK:
        raise ValueError(f"feedback {feedback!r} is unknown; use one of {', '.join(FEEDBACK)}")
    return [q for q in queries if (scope is None or str(q.scope) == scope)
            and (feedback == "any" or feedback_kind(q) == feedback)
            and (low is None or (q.top_score is not None and q.top_score <= low))]


def pick(queries: list[LoggedQuery], order: str, n: int, seed: int) -> list[LoggedQuery]:
    """The queries to replay in `order`: the newest `n`, `n` at random (`seed`), the `n` with the lowest top
    score, or for `drift` three times `n` (replayed, then `most_drifted` keeps the `n` that moved most)."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r} is unknown; use one of {', '.join(ORDERS)}")
    if order == "random":
        return sample(queries, n, seed)
    if order == "low top score":
        return sorted(queries, key=lambda q: (q.top_score if q.top_score is not None else 0.0, q.key))[:n]
    return queries[: n if order == "newest" else max(n * 3, n)]


def replay_all(ws: Any, queries: list[LoggedQuery], run: Callable[[Any, LoggedQuery], Any], k: int) -> list[Replayed]:
    """Each logged query then vs now vs as of its time; `run(workspace, query)` returns a RetrievalResult (the
    workspace, or a `WorkspaceAsOf` of it)."""
    out = []
    for q in queries:
        def ids(as_of, q=q):
            return run(WorkspaceAsOf(ws, as_of), q).ids
        out.append(replay(q, ids, lambda t: pin(ws.store, t).version, k))
    return out


def most_drifted(rows: list[Replayed], n: int) -> list[Replayed]:
    """The `n` replayed queries whose answer moved most since (drift, then the log's key)."""
    return sorted(rows, key=lambda r: (-r.drift, r.logged.key))[:n]
