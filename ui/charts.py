"""Plotly figure builders. Pure functions of plain data: no Streamlit, tested on their own."""
from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go

STAGE_LABELS = {"dense": "Dense", "sparse": "Sparse (BM25)", "merged": "Merged (RRF)", "reranked": "Reranked",
                "final": "Final"}
ORIGIN_COLORS = {"both": "#7b3fb0", "dense": "#1f77b4", "sparse": "#e4572e", "fact": "#2a9d4b"}
ORIGIN_LABELS = {"both": "dense + BM25", "dense": "dense only", "sparse": "BM25 only", "fact": "fact graph"}


def origin(trace_id: str, stage_ids: Mapping[str, Sequence[str]], fact_ids: Sequence[str] = ()) -> str:
    if trace_id in fact_ids:
        return "fact"
    d, s = trace_id in stage_ids.get("dense", ()), trace_id in stage_ids.get("sparse", ())
    return "both" if d and s else "dense" if d else "sparse" if s else "dense"


def rank_flow_figure(stage_ids: Mapping[str, Sequence[str]], fact_ids: Sequence[str] = (), top: int = 15,
                     highlight: str | None = None, stages: Sequence[str] = tuple(STAGE_LABELS)) -> go.Figure:
    """Each trace a line across the stages it appears in (rank on y, best at the top).

    Shows every trace that reaches the top `top` of any stage, so a trace that falls out is visible
    as a line that stops.
    """
    shown_stages = [s for s in stages if stage_ids.get(s)]
    ids: list[str] = []
    for s in shown_stages:
        for i in stage_ids[s][:top]:
            if i not in ids:
                ids.append(i)
    fig = go.Figure()
    seen: set[str] = set()
    pos = {s: n for n, s in enumerate(shown_stages)}
    for tid in ids:
        pts = [(s, stage_ids[s].index(tid) + 1) for s in shown_stages
               if tid in stage_ids[s] and stage_ids[s].index(tid) < max(top, 30)]
        o = origin(tid, stage_ids, fact_ids)
        in_final = tid in stage_ids.get("final", ())
        hot = tid == highlight
        width = 5 if hot else (2.5 if in_final else 1.2)
        # A segment that skips a stage (e.g. dense → merged past the sparse column) is dashed: the
        # trace was not in the skipped list.
        for (s1, r1), (s2, r2) in zip(pts, pts[1:]):
            fig.add_trace(go.Scatter(
                x=[STAGE_LABELS[s1], STAGE_LABELS[s2]], y=[r1, r2], mode="lines", showlegend=False, hoverinfo="skip",
                line={"color": ORIGIN_COLORS[o], "width": width, "dash": "solid" if pos[s2] - pos[s1] == 1 else "dot"},
                opacity=1.0 if (in_final or hot) else 0.45))
        fig.add_trace(go.Scatter(
            x=[STAGE_LABELS[s] for s, _ in pts], y=[r for _, r in pts], mode="markers", name=ORIGIN_LABELS[o],
            legendgroup=o, showlegend=o not in seen,
            marker={"color": ORIGIN_COLORS[o], "size": 11 if hot else (9 if in_final else 6),
                    "symbol": "circle" if in_final else "circle-open"},
            hovertemplate=f"<b>{tid}</b><br>%{{x}}: rank %{{y}}<extra></extra>"))
        seen.add(o)
    fig.update_yaxes(autorange="reversed", title="rank", dtick=5 if top > 15 else 1, zeroline=False)
    fig.update_xaxes(categoryorder="array", categoryarray=[STAGE_LABELS[s] for s in shown_stages])
    fig.update_layout(height=420, margin={"l": 40, "r": 10, "t": 30, "b": 30}, legend_title_text="found by",
                      title={"text": "Rank flow — filled dots reach the final list; dotted lines skip a stage",
                             "font": {"size": 14}})
    return fig


def bar_figure(values: Mapping[str, float], title: str, color: str = "#1f77b4", height: int = 220) -> go.Figure:
    names = list(values)
    fig = go.Figure(go.Bar(x=[values[n] for n in names], y=names, orientation="h", marker_color=color,
                           text=[f"{values[n]:.3f}" for n in names], textposition="auto"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10}, title={"text": title, "font": {"size": 13}})
    return fig


def heatmap_figure(matrix: Sequence[Sequence[float]], xs: Sequence, ys: Sequence, best: tuple[int, int] | None,
                   x_title: str, y_title: str, metric: str) -> go.Figure:
    """Sweep heatmap; `best` = (row, col) is marked with a star."""
    fig = go.Figure(go.Heatmap(z=matrix, x=[str(x) for x in xs], y=[str(y) for y in ys], colorscale="Viridis",
                               colorbar={"title": metric}, hovertemplate=f"{x_title} %{{x}}<br>{y_title} %{{y}}<br>"
                               f"{metric} %{{z:.4f}}<extra></extra>",
                               text=[[f"{v:.3f}" for v in row] for row in matrix], texttemplate="%{text}"))
    if best is not None:
        r, c = best
        fig.add_trace(go.Scatter(x=[str(xs[c])], y=[str(ys[r])], mode="markers", showlegend=False,
                                 marker={"symbol": "star", "size": 22, "color": "white", "line": {"color": "black", "width": 2}},
                                 hovertemplate="best<extra></extra>"))
    fig.update_layout(height=380, margin={"l": 40, "r": 10, "t": 30, "b": 40}, xaxis_title=x_title, yaxis_title=y_title)
    return fig


def metrics_figure(rows: Sequence[Mapping[str, float]], metric_names: Sequence[str], label_key: str = "stage") -> go.Figure:
    fig = go.Figure()
    for m in metric_names:
        fig.add_trace(go.Bar(name=m, x=[r[label_key] for r in rows], y=[r[m] for r in rows]))
    fig.update_layout(barmode="group", height=300, margin={"l": 40, "r": 10, "t": 30, "b": 30}, yaxis_range=[0, 1])
    return fig


def facts_timeline_figure(rows: Sequence[Mapping], highlight_keys: Sequence[str] = ()) -> go.Figure:
    """Facts over time: x = timestamp, y = predicate, label = object; injected facts ringed."""
    fig = go.Figure()
    for subject in sorted({r["subject"] for r in rows}):
        sub = [r for r in rows if r["subject"] == subject]
        fig.add_trace(go.Scatter(
            x=[r["timestamp"] for r in sub], y=[r["predicate"] for r in sub], mode="markers+text", name=subject,
            text=[r["object"][:28] for r in sub], textposition="top center",
            marker={"size": [16 if r.get("key") in highlight_keys else 10 for r in sub],
                    "line": {"width": [3 if r.get("key") in highlight_keys else 0 for r in sub], "color": "#e4572e"}},
            hovertemplate="%{y}: %{text}<br>%{x|%Y-%m-%d}<extra>" + subject + "</extra>"))
    fig.update_layout(height=max(300, 40 * len({r["predicate"] for r in rows}) + 120),
                      margin={"l": 10, "r": 10, "t": 30, "b": 30}, legend_title_text="subject")
    return fig


def timings_figure(timings: Mapping[str, float]) -> go.Figure:
    stages = [k for k in timings if k != "total"]
    return bar_figure({k: timings[k] for k in stages}, "time per stage (ms)", color="#888888",
                      height=60 + 24 * len(stages))
