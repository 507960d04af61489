"""What the Log page shows: importing an agent's retrieval log, filtering and sampling it, and each logged
query then (what the agent got) vs now and vs as of its time, with a link that opens Inspect as of then (only when
the store has a version by then). The filters, sample orders and replay are `retrieval.replay.select`; this module
draws them.

Logged text (queries, ids, scopes) is the agent's data: a query is an `st.text` element (shown as logged, so copying
gives it back unchanged), ids and scopes plain (ui/text.py).
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from retrieval.history import moment
from retrieval.replay import LoggedQuery, QueryLog, Replayed
from retrieval.replay.select import FEEDBACK, ORDERS, matching, most_drifted, pick, replay_all  # noqa: F401
from retrieval.access import may_write
from retrieval.replay.store import import_log
from retrieval.replay.store import ImportReport
from ui.glossary import helps
from ui.grading import can_grade
from ui.links import ALL_SCOPES_PARAM
from ui.text import plain


def may_import(ws: Any, access: Any) -> bool:
    """Whether this visitor may import a log here: an import writes the log (and implicit grades), so never in a
    read-only demo nor without write access. What the page offers and what it says both follow this."""
    return not ws.demo_mode and may_write(access)


def import_widget(ws: Any, judgments: Any, access: Any, prefix: str) -> None:
    """Upload a JSONL log or a Phoenix span export; bad lines are listed by number, the rest kept. Not drawn for a
    visitor who may not import (`may_import`): the page says so once, without offering it."""
    if not may_import(ws, access):
        return
    with st.expander("Import a log", expanded=QueryLog(ws.uri).count() == 0):
        up = st.file_uploader("JSONL log or OpenInference (Phoenix) spans, one JSON object per line",
                              type=["jsonl", "json", "txt"], key=f"{prefix}file")
        grades = st.checkbox("Turn feedback into implicit grades (rater `implicit`, apart from human grades)",
                             value=True, key=f"{prefix}grades")
        if up is None or not st.button("Import", key=f"{prefix}import"):
            return
        lines = up.getvalue().splitlines()
        bar = st.progress(0.0, text="Importing…")
        rep, n = import_log(QueryLog(ws.uri), judgments, lines, source=up.name, grades=grades, access=access,
                            progress=lambda d, t: bar.progress(min(1.0, d / max(t, 1))), total=len(lines),
                            allowed=access.sees if access.limited else None)
        bar.empty()
        show_report(rep, n)


def show_report(rep: ImportReport, n: int) -> None:
    (st.success if rep.added or rep.already else st.warning)(plain(f"{rep.summary()}; {n} implicit grade(s)."))
    if rep.errors:
        st.text("\n".join(str(e) for e in rep.errors[:50]))
        if len(rep.errors) > 50:
            st.caption(f"… and {len(rep.errors) - 50} more bad lines")


def filters(log: QueryLog, sees: Any, prefix: str) -> tuple[list[LoggedQuery], str, int]:
    """The filter row; returns the filtered logged queries (visible scopes only), the order and N."""
    everything = [q for q in log.queries() if sees(q.scope)]
    scopes = sorted({str(q.scope) for q in everything if q.scope is not None})
    c1, c2, c3, c4, c5 = st.columns([2, 2, 2, 1.4, 1.2])
    scope = c1.selectbox("Scope", ["(any)"] + scopes, key=f"{prefix}scope")  # options show as typed
    feedback = c2.selectbox("Feedback", FEEDBACK, key=f"{prefix}feedback")
    order = c3.selectbox("Sample", ORDERS, key=f"{prefix}order",
                         help="drift puts first the queries whose answer changed most since.\n\n"
                              + helps("drift", "RBO"))
    n = int(c4.number_input("N", 1, 100, 10, key=f"{prefix}n"))
    low = float(c5.number_input("Top score ≤", value=0.5, step=0.05, key=f"{prefix}low")) \
        if order == "low top score" else None
    return matching(everything, None if scope == "(any)" else scope, feedback, low), order, n


def show(rows: list[Replayed]) -> None:
    """One block per logged query: the numbers, the three lists, and the link to Inspect as of then."""
    for r in rows:
        q = r.logged
        asof = (f"as of then (version {r.asof_version}): overlap@{r.k} {r.overlap_asof:.2f}, RBO {r.rbo_asof:.2f}"
                if r.asof_ids is not None else f"as of then: {r.note}")
        st.text(q.query)  # the agent's query as logged: never Markdown, never altered (copying gives it back)
        st.caption(f"{plain(str(q.scope) if q.scope else 'every scope')} · {moment(q.timestamp)}")
        st.caption(plain(f"now: overlap@{r.k} {r.overlap_now:.2f}, RBO {r.rbo_now:.2f}, drift {r.drift:.2f} · "
                         f"{asof} · feedback {q.feedback if q.feedback is not None else '—'}"))
        c1, c2, c3, c4 = st.columns([3, 3, 3, 2])
        c1.caption("agent got: " + plain(", ".join(q.result_ids[:r.k]) or "—"))
        c2.caption("now: " + plain(", ".join(r.now_ids) or "—"))
        c3.caption("as of then: " + plain(", ".join(r.asof_ids) if r.asof_ids is not None else "—"))
        if r.asof_ids is None:  # no version at or before the log's time: nothing as of then to open
            c4.caption("nothing to inspect as of then (see why above)")
        else:
            c4.page_link("pages/2_Inspect.py", label="Inspect as of then", icon=":material/history:",
                         query_params={"i_q": q.query, "i_scope": str(q.scope) if q.scope else ALL_SCOPES_PARAM,
                                       "asof": q.timestamp.isoformat()})


def make_case(judgments: Any, rows: list[Replayed], access: Any, prefix: str) -> None:
    """"Make a case from these N": every shown logged query joins a case (created if new)."""
    if not rows or not can_grade(access):  # the one grading rule (the store's)
        return
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    name = c1.text_input("Case name", key=f"{prefix}case", placeholder="e.g. log-drift-2026-03")
    if c2.button(f"Make a case from these {len(rows)}", key=f"{prefix}make_case", disabled=not name.strip()):
        try:
            for r in rows:
                judgments.add_to_case(name.strip(), r.logged.query, r.logged.scope, note="from the query log",
                                      access=access)
        except ValueError as exc:
            st.error(plain(exc))
            return
        st.success(plain(f"Case {name.strip()!r} now holds these {len(rows)} logged queries (Snapshots runs it)."))
