"""Plotly figure builders. Pure functions of plain data: no Streamlit, tested on their own (tests/test_charts.py)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from .text import plotly_plain
from .view import origin, timing_items

STAGE_LABELS = {"dense": "Dense", "sparse": "Sparse (BM25)", "merged": "Merged", "reranked": "Reranked",
                "final": "Final"}
# One colour per origin (the stage columns' "by" column names the same four).
ORIGIN_COLORS = {"dense": "#1f77b4", "sparse": "#ff7f0e", "both": "#9467bd", "fact": "#2ca02c"}
ORIGIN_LABELS = {"dense": "dense only", "sparse": "BM25 only", "both": "dense + BM25", "fact": "fact graph"}
FONT = 13  # the smallest text on any chart (px)
TOP_N = 10


def short_id(tid: str, limit: int = 22) -> str:
    return tid if len(tid) <= limit else tid[: limit - 1] + "…"


# Rank-flow labels are placed on boxes estimated at about the narrowest the chart is drawn (Inspect's left column in
# a 1280-px window with the sidebar open; not measured in a browser): wider, the boxes only move apart.
COLUMN_PX = 80  # the spacing of two stage columns there
ROW_PX = 30  # one rank's height (the layout gives each rank 30 px)
CHAR_PX = 7.5  # a label character at FONT − 1, a little wider than the average
GAP_PX = 6  # plotly's offset of a label from its point (the marker's radius and a little)
SHORT = 12  # a label before the last column shortened to this many characters when its full id finds no room
BESIDE = ("top center", "bottom center")  # where a label before the last column may go, in order


def label_box(column: float, rank: float, text: str, position: str) -> tuple[float, float, float, float]:
    """Where `text`, drawn at `position` of the point (column, rank), lies: (x0, x1, y0, y1) in stage columns and
    ranks (y grows downwards, as the ranks)."""
    w, h = len(text) * CHAR_PX / COLUMN_PX, (FONT + 2) / ROW_PX
    dx, dy = GAP_PX / COLUMN_PX, GAP_PX / ROW_PX
    x = (column + dx, column + dx + w) if position.endswith("right") else (column - w / 2, column + w / 2)
    y = {"top": (rank - dy - h, rank - dy), "bottom": (rank + dy, rank + dy + h)}.get(position.split()[0],
                                                                                     (rank - h / 2, rank + h / 2))
    return x[0], x[1], y[0], y[1]


def overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def place_labels(labels: Sequence[tuple[int, int, str, str]], last: int) -> list[tuple[str, str]]:
    """(text, textposition) for each label (column, rank, id, move). A label at the `last` column stands right of its
    point (the right margin keeps room). One before it (its line ends there: it left the final list) would run
    into the next column's labels at the same rank, so it goes above or below its point where no label placed
    already lies, shortened if its whole id finds no room, or is left out (its hover names it)."""
    out = [("", "middle right")] * len(labels)
    placed: list[tuple[float, ...]] = []
    for i in sorted(range(len(labels)), key=lambda i: (labels[i][0] != last, labels[i][1], labels[i][0])):
        column, rank, tid, move = labels[i]
        tail = f" {move}" if move else ""
        tries = [(short_id(tid) + tail, "middle right")] if column == last else \
            [(short_id(tid, n) + tail, p) for n in (22, SHORT) for p in BESIDE]
        for text, position in tries:
            box = label_box(column, rank, text, position)
            if not any(overlaps(box, b) for b in placed):
                placed.append(box)
                out[i] = (plotly_plain(text), position)
                break
    return out


def hover_move(move: str) -> str:
    words = {"new": "entered the final list", "left": "left the final list"}
    if not move:
        return ""
    return "<br>" + words.get(move, ("up " if move[0] == "▲" else "down ") + move[1:]) + " against the previous setting"


def rank_flow_figure(stage_ids: Mapping[str, Sequence[str]], fact_ids: Sequence[str] = (), top: int = TOP_N,
                     highlight: str | None = None, stages: Sequence[str] = tuple(STAGE_LABELS),
                     moved: Mapping[str, str] | None = None, note: str | None = None) -> go.Figure:
    """Each trace a line across the stages, rank on y in a fixed band 1..`top` (best at the top).

    Every trace in the top `top` of any stage is drawn; a rank deeper than `top` sits on one row
    below the band ("deeper"), so one deep rank never squeezes the top. A trace is labelled at its
    last point when that point is inside the band (the "> top" row would pile labels on one spot; hover
    names them), off every other label (`place_labels`), with its move against the previous setting (`moved`:
    "▲3", "new", "left") after the id; each point carries its id (`customdata`) for click-to-explain. Ids are
    escaped in the label and the hover text (`plotly_plain`): plotly would read `%{…}` and HTML tags in them. A
    trace that left the final list says so in its hover text (its last point is usually on the shared "> top" row).
    `note` (plain text, escaped here) is a second title line, e.g. the query's adaptive weights.
    """
    moved = moved or {}
    shown = [s for s in stages if stage_ids.get(s)]
    deeper = top + 1
    ids: list[str] = []
    for s in shown:
        ids += [i for i in stage_ids[s][:top] if i not in ids]
    traces: list[dict] = []  # plain dicts, checked once below: a validated go.Scatter per line cost ~10 ms each
    seen: set[str] = set()
    for tid in ids:
        pts = [(STAGE_LABELS[s], min(list(stage_ids[s]).index(tid) + 1, deeper), list(stage_ids[s]).index(tid) + 1)
               for s in shown if tid in stage_ids[s]]
        o = origin(tid, stage_ids, fact_ids)
        in_final = tid in stage_ids.get("final", ())
        hot = tid == highlight
        traces.append(dict(
            type="scatter", x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers+text",
            name=ORIGIN_LABELS[o], legendgroup=o, showlegend=o not in seen, customdata=[tid] * len(pts),
            text=[""] * len(pts), textposition="middle right", cliponaxis=False,
            textfont={"size": FONT - 1 if not hot else FONT, "color": ORIGIN_COLORS[o]},
            line={"color": ORIGIN_COLORS[o], "width": 5 if hot else (2.5 if in_final else 1.2)},
            opacity=1.0 if (in_final or hot) else 0.5,
            marker={"color": ORIGIN_COLORS[o], "size": 13 if hot else (9 if in_final else 7),
                    "symbol": "circle" if in_final else "circle-open"},
            hovertemplate=[f"<b>{plotly_plain(tid)}</b><br>{x}: rank {r}{hover_move(moved.get(tid, ''))}<extra></extra>"
                           for x, _, r in pts]))
        seen.add(o)
    columns = [STAGE_LABELS[s] for s in shown]
    _label_lines(traces, ids, columns, top, moved)
    ticks = list(range(1, top + 1)) + [deeper]
    yaxis = {"range": [deeper + 0.6, 0.4], "tickvals": ticks, "ticktext": [str(t) for t in ticks[:-1]] + [f"> {top}"],
             "title": {"text": "rank"}, "zeroline": False, "tickfont": {"size": FONT}, "fixedrange": True}
    xaxis = {"type": "category", "categoryorder": "array", "categoryarray": columns,
             "tickfont": {"size": FONT}, "range": [-0.3, len(shown) - 1 + 0.3], "fixedrange": True}
    # The labels at the last stage stand right of the plot: the right margin keeps room for them.
    layout = {"height": 160 + 30 * (top + 1), "margin": {"l": 50, "r": 190, "t": 40, "b": 30},
              "legend": {"title": {"text": "found by"}, "orientation": "h", "y": -0.08, "font": {"size": FONT}},
              "clickmode": "event+select", "dragmode": False, "xaxis": xaxis, "yaxis": yaxis,
              "title": {"text": f"Rank flow (top {top}) — filled dots reach the final list; ▲▼ moved; click a point "
                                "to explain it" + _subtitle(note), "font": {"size": FONT + 1}}}
    # Built without plotly's per-property validation (the keys above are fixed, the values plain; tests/test_charts.py
    # reads the figure back): a row click or a slider move redraws it, and validating ~20 traces one by one took
    # ~250 ms on a loaded 2-core machine.
    return go.Figure(data=traces, layout=layout, _validate=False)


def _label_lines(traces: list[dict], ids: Sequence[str], columns: Sequence[str], top: int,
                 moved: Mapping[str, str]) -> None:
    """Each line labelled at its last point inside the band (the "> top" row would pile labels on one spot)."""
    labelled = [(n, columns.index(t["x"][-1]), t["y"][-1], tid) for n, (tid, t) in enumerate(zip(ids, traces))
                if t["y"][-1] <= top]
    for (n, *_), (text, position) in zip(labelled, place_labels(
            [(c, r, tid, moved.get(tid, "")) for _, c, r, tid in labelled], len(columns) - 1)):
        traces[n]["text"][-1], traces[n]["textposition"] = text, position


def _subtitle(note: str | None, limit: int = 120) -> str:
    if not note:
        return ""
    return "<br><span style='font-size:12px'>" + plotly_plain(clip(note, limit)) + "</span>"


def bar_figure(values: Mapping[str, float], title: str, color: str = "#1f77b4", height: int = 220,
               labels: Sequence[str] | None = None) -> go.Figure:
    names = list(values)
    bar = {"type": "bar", "x": [values[n] for n in names], "y": names, "orientation": "h", "marker": {"color": color},
           "text": list(labels) if labels is not None else [f"{values[n]:.3f}" for n in names],
           "textposition": "auto", "textfont": {"size": FONT}}
    layout = {"yaxis": {"autorange": "reversed", "tickfont": {"size": FONT}}, "xaxis": {"tickfont": {"size": FONT}},
              "height": height, "margin": {"l": 10, "r": 10, "t": 36, "b": 10},
              "title": {"text": title, "font": {"size": FONT + 1}}}
    return go.Figure(data=[bar], layout=layout, _validate=False)  # unvalidated, as rank_flow_figure


def dense_terms_figure(terms: Sequence[Mapping[str, float]]) -> go.Figure:
    """The dense (cognitive) score as weight × value per term: the bars sum to the dense score."""
    total = sum(float(t["points"]) for t in terms)
    values = {f"{t['term']} (weight {t['weight']:g})": float(t["points"]) for t in terms}
    labels = [f"{t['weight']:g} × {t['value']:.3f} = {t['points']:.3f}" for t in terms]
    return bar_figure(values, f"Dense score {total:.4f} = the sum of these bars (weight × value)", "#1f77b4",
                      height=70 + 34 * len(terms), labels=labels)


def bm25_figure(tree: Sequence[Mapping[str, float]]) -> go.Figure:
    """BM25 per query term (idf × tf saturation × times in the query): the bars sum to the BM25 score."""
    total = sum(float(r["score"]) for r in tree)
    values = {str(r["term"]): float(r["score"]) for r in tree}
    def label(r) -> str:
        if not r["score"]:
            return "0"
        if r.get("idf") is None:  # LanceDB full-text search reports only each term's score
            return f"{r['score']:.3f} (LanceDB full-text score)"
        return f"{r['qtf']:g} × {r['idf']:.3f} × {r['saturation']:.3f} = {r['score']:.3f}"

    labels = [label(r) for r in tree]
    return bar_figure(values, f"BM25 score {total:.4f} = the sum of these bars (qtf × idf × tf saturation)",
                      ORIGIN_COLORS["sparse"], height=70 + 34 * len(tree), labels=labels)


def heatmap_figure(matrix: Sequence[Sequence[float]], xs: Sequence, ys: Sequence, best: tuple[int, int] | None,
                   x_title: str, y_title: str, metric: str) -> go.Figure:
    """Sweep heatmap on categorical axes (k = 1, 5, 10 are equal cells); the best cell is outlined and
    its value starred, so the value stays readable."""
    xl, yl = [str(x) for x in xs], [str(y) for y in ys]
    text = [[f"{v:.3f}" for v in row] for row in matrix]
    if best is not None:
        r, c = best
        text[r][c] = f"★ {matrix[r][c]:.3f}"
    fig = go.Figure(go.Heatmap(z=matrix, x=xl, y=yl, colorscale="Viridis", colorbar={"title": {"text": metric}},
                               hovertemplate=f"{x_title} %{{x}}<br>{y_title} %{{y}}<br>{metric} "
                                             f"%{{z:.4f}}<extra></extra>",
                               text=text, texttemplate="%{text}", textfont={"size": FONT}))
    if best is not None:
        r, c = best
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, xref="x", yref="y",
                      line={"color": "#ff2d55", "width": 4})
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=xl, title=x_title, tickfont={"size": FONT})
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=yl, title=y_title, tickfont={"size": FONT})
    fig.update_layout(height=90 + 38 * len(yl), margin={"l": 60, "r": 10, "t": 30, "b": 50}, font={"size": FONT})
    return fig


def metrics_figure(rows: Sequence[Mapping[str, float]], metric_names: Sequence[str],
                   label_key: str = "stage") -> go.Figure:
    fig = go.Figure()
    for m in metric_names:
        fig.add_trace(go.Bar(name=m, x=[r[label_key] for r in rows], y=[r[m] for r in rows]))
    fig.update_layout(barmode="group", height=300, margin={"l": 40, "r": 10, "t": 30, "b": 30}, yaxis_range=[0, 1])
    return fig


def clip(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(ts) -> str:
    """A timestamp as people write it: "3 Jun 2024 08:02" (no seconds, no "+00:00")."""
    return f"{ts.day} {ts:%b %Y %H:%M}" if hasattr(ts, "strftime") else str(ts)


def facts_timeline_figure(rows: Sequence[Mapping], highlight_keys: Sequence[str] = ()) -> go.Figure:
    """Facts over time: x = timestamp, y = predicate, label = object; injected facts ringed. Labels alternate
    above and below their dot (neighbours on one row do not overprint) and are never clipped by the plot
    area; the x range is padded so the first and last labels fit. Subjects, predicates and objects are
    escaped (`plotly_plain`): the subject goes into the hover template."""
    fig = go.Figure()
    for subject in sorted({r["subject"] for r in rows}):
        sub = sorted((r for r in rows if r["subject"] == subject), key=lambda r: r["timestamp"])
        fig.add_trace(go.Scatter(
            x=[r["timestamp"] for r in sub], y=[plotly_plain(r["predicate"]) for r in sub], mode="markers+text",
            name=plotly_plain(subject), text=[plotly_plain(clip(r["object"])) for r in sub],
            textposition=["top center" if n % 2 == 0 else "bottom center" for n in range(len(sub))],
            cliponaxis=False, customdata=[when(r["timestamp"]) for r in sub], textfont={"size": FONT - 1},
            marker={"size": [16 if r.get("key") in highlight_keys else 10 for r in sub],
                    "line": {"width": [3 if r.get("key") in highlight_keys else 0 for r in sub], "color": "#e4572e"}},
            hovertemplate="%{y}: %{text}<br>%{customdata}<extra>" + plotly_plain(subject) + "</extra>"))
    times = [r["timestamp"] for r in rows if hasattr(r["timestamp"], "strftime")]
    if len(times) > 1:
        pad = (max(times) - min(times)) * 0.08
        fig.update_xaxes(range=[min(times) - pad, max(times) + pad])
    fig.update_xaxes(tickformat="%-d %b %Y", tickfont={"size": FONT})
    fig.update_yaxes(tickfont={"size": FONT})
    fig.update_layout(height=max(300, 60 * len({r["predicate"] for r in rows}) + 120),
                      margin={"l": 10, "r": 30, "t": 40, "b": 30}, legend_title_text="subject")
    return fig


def timings_figure(timings: Mapping[str, float]) -> go.Figure:
    """Every recorded stage's time (ms), in pipeline order; the search total in the title."""
    items = timing_items(timings)
    total = timings.get("search")
    title = "time per stage (ms)" + (f" — search took {total:.0f} ms in all" if isinstance(total, (int, float)) else "")
    return bar_figure({k: v for k, v in items}, title, color="#888888", height=80 + 28 * max(len(items), 1),
                      labels=[f"{v:.1f} ms" for _, v in items])


def snapshot_trend_figure(rows: Sequence[Mapping], metric_names: Sequence[str], label_key: str = "snapshot",
                          highlight: Sequence[str] = ()) -> go.Figure:
    """Each metric a line over a case's snapshots (oldest left); `highlight` rings the diffed pair. Labels
    (typed by whoever ran the snapshot) are escaped for plotly's tick text."""
    fig = go.Figure()
    xs = [f"{n + 1}. {plotly_plain(r.get('label') or r[label_key])}" for n, r in enumerate(rows)]
    for m in metric_names:
        fig.add_trace(go.Scatter(x=xs, y=[r.get(m) for r in rows], mode="lines+markers", name=m,
                                 customdata=[r[label_key] for r in rows],
                                 hovertemplate=m + " %{y:.3f}<br>%{customdata}<extra></extra>"))
    marked = [x for x, r in zip(xs, rows) if r[label_key] in highlight]
    for x in marked:
        fig.add_vline(x=x, line={"color": "#888", "dash": "dot"})
    fig.update_layout(height=320, margin={"l": 40, "r": 10, "t": 30, "b": 40}, yaxis_range=[0, 1.02],
                      xaxis_title="snapshot", yaxis_title="mean over judged queries")
    return fig
