"""Issue 32 item 17, "Claims are checked": every number on the Snapshots page comes from one computation.

The trend showed the scores stored at run time while the diff below re-scored the same snapshots with today's
grades (0.8012 vs 0.7796, "a drop", above a diff saying +0.001). Now both show today's re-scored values, and a
grade changed under the page moves the trend and the diff together.
"""
from __future__ import annotations

import json

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.judgments import JudgmentStore

TIMEOUT = 120
METRIC = "ndcg@10"


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "snapshot_numbers")


def numbers(at) -> tuple[dict[str, float], dict[str, float], dict[str, float], str, str]:
    """(the trend table's METRIC per snapshot, the chart's, the diff's A and B, A's id, B's id)."""
    table = next(d.value for d in at.dataframe if "snapshot" in d.value.columns and METRIC in d.value.columns)
    trend = dict(zip(table["snapshot"], table[METRIC]))
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    line = next(t for t in chart["data"] if t["name"] == METRIC)
    plotted = dict(zip(line["customdata"], line["y"]))
    diff = next(d.value for d in at.dataframe if "metric" in d.value.columns)
    row = diff[diff["metric"] == METRIC].iloc[0]
    a, b = at.selectbox(key="s_a").value, at.selectbox(key="s_b").value
    return trend, plotted, {"A": float(row["A"]), "B": float(row["B"]), "Δ": float(row["Δ"])}, a, b


def test_the_trend_and_the_diff_show_the_same_scores_and_follow_a_grade(demo_env):
    js = JudgmentStore(demo_env)
    case = js.case("demo")
    stored = {s.id: s.metrics[METRIC] for s in js.snapshots("demo")}
    # Today's grades differ from the run's: one query's best result is now graded 0.
    snap = js.snapshots("demo")[-1]
    q = next(x for x in snap.queries if x.metrics and x.metrics.get(METRIC, 0) > 0)
    first = next(t for t in q.credited("final") if snap.qrels.get(q.qid, {}).get(t, 0) > 0)  # graded relevant
    scope = next(x.scope for x in case.queries if x.qid == q.qid)
    js.set_grade(scope, q.query, first, 0)

    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert not at.exception, at.exception
    trend, plotted, diff, a, b = numbers(at)
    assert trend == plotted
    assert (trend[a], trend[b]) == (diff["A"], diff["B"]) and abs(diff["Δ"] - (diff["B"] - diff["A"])) <= 1e-4
    assert trend[b] != round(stored[b], 4)  # today's grades, not the stored score
    assert any("scored with today's human grades at k = 10" in c.value for c in at.caption)

    js.set_grade(scope, q.query, first, 3)  # the store changes under the page: the words follow
    at.run()
    trend2, plotted2, diff2, _, _ = numbers(at)
    assert trend2 == plotted2 and (trend2[a], trend2[b]) == (diff2["A"], diff2["B"])
    assert trend2[b] > trend[b]
