"""The Snapshots page's two wide tables, narrowed to fit 904 px (1366 px beside the sidebar, issue 35): the case's
snapshots and the per-query diff. Each grid keeps the numbers people compare; the rest of a row (the whole
configuration, the scope, what entered and left) shows for the row clicked (`ui.tables.detail`),
and the per-query download keeps every column."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ui.glossary import column_help
from ui.tables import detail, widths
from ui.widgets import selected_row

METRIC_PX = 70  # "judged@10" and 0.7344 (4 decimals, as the diff below: the same number reads the same)


def snapshot_list(table: list[dict[str, Any]], metrics: list[str], key: str) -> None:
    """Snapshot id, its label, each metric; click a row for its whole configuration (preset, fusion, weights, k,
    reranker), which the label usually names and the diff's "Config changes" line compares."""
    shown = [{"snapshot": r["snapshot"], "label": r["label"], **{m: r.get(m) for m in metrics}} for r in table]
    ev = st.dataframe(shown, hide_index=True, width="stretch", key=key, on_select="rerun",
                      selection_mode="single-row",
                      column_config=widths({"snapshot": 176, "label": 220, **{m: METRIC_PX for m in metrics}},
                                           select=True, config=column_help(metrics)))
    n = selected_row(ev)
    detail(None if n is None else table[n], "The snapshot clicked", "Click a row to see its whole configuration.")


def per_query_grid(per_query: list[dict[str, Any]], metric: str, k: int, key: str) -> None:
    """qid, query, A and B, Δ, RBO, how many judged traces moved and the two Inspect links; click a row for its
    scope and what entered and left B's top k."""
    a, b = f"A {metric}", f"B {metric}"
    cols = ["qid", "query", a, b, "Δ", "RBO", "moved", "Inspect A", "Inspect B"]
    shown = [{c: r[c] for c in cols} for r in per_query]
    ev = st.dataframe(shown, hide_index=True, width="stretch", key=key, on_select="rerun",
                      selection_mode="single-row", column_config=widths(
                          {"qid": 56, "query": 230, a: 84, b: 84, "Δ": 70, "RBO": 56, "moved": 60, "Inspect A": 70,
                           "Inspect B": 70}, select=True,
                          config={"Inspect A": st.column_config.LinkColumn(display_text="open A"),
                                  "Inspect B": st.column_config.LinkColumn(display_text="open B")} | column_help(cols)))
    n = selected_row(ev)
    row = None if n is None else {c: v for c, v in per_query[n].items() if not c.startswith("Inspect")}
    detail(row, "The query clicked", f"Click a row to see its scope and what entered and left the top {k}.")
