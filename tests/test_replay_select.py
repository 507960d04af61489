"""The Log page's filters and sample orders are library functions (`retrieval.replay.select`), not the app's."""
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.replay import LoggedQuery
from retrieval.replay.select import feedback_kind, matching, most_drifted, pick
from retrieval.types import Scope

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _q(key: str, scope: str | None, top: float | None, feedback=None, days: int = 0) -> LoggedQuery:
    return LoggedQuery(key, T0 - timedelta(days=days), f"query {key}", Scope.parse(scope) if scope else None,
                       ("a",) if top is not None else (), (top,) if top is not None else (), feedback)


LOG = [_q("k1", "user:u1", 0.9, True), _q("k2", "user:u1", 0.2, False, 1), _q("k3", "user:u2", 0.4, None, 2),
       _q("k4", None, None, {"a": 1}, 3), _q("k5", "user:u1", 0.3, 0.0, 4)]


def test_filters_by_scope_feedback_and_top_score():
    assert [feedback_kind(q) for q in LOG] == ["positive", "negative", "none", "any", "any"]
    assert [q.key for q in matching(LOG, "user:u1")] == ["k1", "k2", "k5"]
    assert [q.key for q in matching(LOG, feedback="negative")] == ["k2"]
    assert [q.key for q in matching(LOG, low=0.35)] == ["k2", "k5"]  # no score: never "low"
    assert [q.key for q in matching(LOG, "user:u1", "any", 0.25)] == ["k2"]
    with pytest.raises(ValueError, match="feedback 'sometimes' is unknown; use one of any, positive, negative, none"):
        matching(LOG, feedback="sometimes")


def test_sample_orders():
    assert [q.key for q in pick(LOG, "newest", 2, 0)] == ["k1", "k2"]
    assert [q.key for q in pick(LOG, "low top score", 3, 0)] == ["k4", "k2", "k5"]  # no score counts as 0
    assert [q.key for q in pick(LOG, "drift", 1, 0)] == ["k1", "k2", "k3"]  # three times n, replayed, then cut
    assert pick(LOG, "random", 2, 7) == pick(LOG, "random", 2, 7) and len(pick(LOG, "random", 2, 7)) == 2
    with pytest.raises(ValueError, match="order 'oldest' is unknown"):
        pick(LOG, "oldest", 2, 0)


def test_most_drifted_keeps_the_n_that_moved_most():
    class Row:
        def __init__(self, q, drift):
            self.logged, self.drift = q, drift

    rows = [Row(LOG[0], 0.1), Row(LOG[1], 0.8), Row(LOG[2], 0.8), Row(LOG[3], 0.0)]
    assert [r.logged.key for r in most_drifted(rows, 2)] == ["k2", "k3"]
