"""Snapshots: import a case, run a configuration over it, follow the scores over time, diff any two runs
(metric deltas with a paired t-test, per-query deltas, entered/left, the stage where each judged trace moved),
and open any row in Inspect with that query and configuration."""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from retrieval.access import AccessDenied, known_ids, may_write
from retrieval.pipeline.config import PipelineConfig
from retrieval.judgments import JudgmentStore
from retrieval.judgments.diff import diff_snapshots
from retrieval.judgments.io import import_files, spreadsheet_csv, suggest_case_name
from retrieval.judgments.machine import WEAK_NOTE, agreement, machine_grade
from retrieval.judgments.model import query_key, scope_text
from retrieval.judgments.snapshots import rescore, run_snapshot
from retrieval.metrics import metric_names
from retrieval.judgments.store import JudgmentStoreError, check_grading, grades_of
from ui.cache import ensure_model, get_generator, get_reranker, workspace
from ui.charts import snapshot_trend_figure
from ui.grading import (REFUSALS, can_grade, case_qrels, grade_widget, inspect_query_params, others_graded,
                        visible_case_names, who_grades)
from ui.snapshot_tables import per_query_grid, snapshot_list
from ui.state import CachedModels
from ui.access import page_guard
from ui.text import code, plain
from ui.view import DASH
from ui.glossary import caption_text, explain, helps
from ui.panel import config_panel, openai_server
from ui.widgets import nav, scope_picker

P = "s_"
INSPECT = "pages/2_Inspect.py"
INSPECT_URL = "Inspect"  # the page's URL path, for links inside tables

st.set_page_config(page_title="Snapshots · Hybrid retrieval inspector", page_icon=":material/photo_camera:",
                   layout="wide")
nav()
acc = page_guard()  # sign-in, allowed scopes, read-only
ws = workspace()
js = JudgmentStore(ws.uri)
st.title("Snapshots")
if ws.store.count() == 0:
    st.info("The store is empty: load the demo corpus on the Corpus page first.")
    st.stop()

with st.sidebar:
    st.header("Configuration to run")
    cfg = config_panel(P, PipelineConfig.for_preset("hybrid"), bind=False, compact=True)


def import_panel() -> None:
    fmt = st.radio("Format", ["JSONL (qid, query, scope, relevant)", "BEIR queries.jsonl + TREC or BEIR qrels"],
                   key=f"{P}imp_fmt", horizontal=True, help=helps("BEIR", "TREC", "qrels"))
    scale = st.radio("Scale", ["graded", "binary"], key=f"{P}imp_scale", horizontal=True,
                     help="graded: 0–3; binary: 0/1")
    if fmt.startswith("JSONL"):
        up = st.file_uploader("Judgments JSONL", type=["jsonl", "json"], key=f"{P}imp_jsonl")
        files = [up] if up else []
    else:
        qf = st.file_uploader("queries.jsonl", type=["jsonl"], key=f"{P}imp_queries")
        rf = st.file_uploader("qrels (TREC or BEIR .tsv)", type=["tsv", "txt", "trec", "qrels"], key=f"{P}imp_qrels")
        files = [qf, rf] if qf and rf else []
        scope = scope_picker(ws, f"{P}imp_scope", "Scope of these queries", bind=False)
    name = st.text_input("Case name", value=suggest_case_name(files[0].name) if files else "", key=f"{P}imp_name")
    if not st.button("Import", key=f"{P}imp_go", disabled=not files):
        return
    sources = {"jsonl": (files[0].name, files[0].getvalue())} if fmt.startswith("JSONL") else {
        "queries": (files[0].name, files[0].getvalue()), "qrels": (files[1].name, files[1].getvalue()), "scope": scope}
    try:
        rep = import_files(js, name.strip(), scale=scale, access=acc, **sources, known_ids=known_ids(ws.store, acc))
    except AccessDenied as exc:
        st.error("Nothing was saved: this case names scopes you may not grade in (in the file, or in an existing "
                 "case of that name); grade and build cases in your own scopes." if acc.limited else plain(exc))
        return
    except REFUSALS as exc:
        st.error(plain(exc))
        return
    st.session_state[f"{P}case"] = rep.case
    st.session_state[f"{P}imp_report"] = rep.to_dict()


def case_section():
    """Import a case, pick one (only cases whose every query is in a scope the visitor sees) and run a snapshot."""
    st.subheader("Case")
    names = visible_case_names(js, acc)
    with st.expander("Import a case", expanded=not names):
        if can_grade(acc):  # a case import stores grades: the one grading rule (`import_case` asks it too)
            import_panel()
        else:
            st.caption("Importing cases needs grading access (this app is read-only for you).")
        rep = st.session_state.get(f"{P}imp_report")
        if rep:
            st.success(f"Case {plain(rep['case'])}: {rep['queries']} queries, {rep['judgments']} grades stored.")
            for what, items in (("line(s) skipped", rep["errors"]), ("judged id(s) not in the store, skipped",
                                rep["unknown_ids"]), ("qrels query id(s) without a query text, skipped",
                                                      rep["unknown_queries"])):
                if items:
                    st.warning(f"{len(items)} {what}: " + "; ".join(map(plain, items[:20]))
                               + (" …" if len(items) > 20 else ""))

    names = visible_case_names(js, acc)  # again: an import may have added one
    if not names:
        st.info("No case of yours yet: only cases whose queries all lie in your scopes are listed. Grade results in "
                "Inspect and add the query to a case." if acc.limited else
                "No case yet: import one above, or run `python -m retrieval build-demo` (it ships the case `demo`).")
        st.stop()
    if st.session_state.get(f"{P}case") not in names:
        st.session_state[f"{P}case"] = "demo" if "demo" in names else names[0]
    case_name = st.selectbox("Case", names, key=f"{P}case")
    case = js.case(case_name)
    qrels, pol = case_qrels(js, ws.store.get, case)
    st.caption(f"Metrics use {plain(pol.describe())}, k = {pol.k} (set on the Judge page).")
    grading = ("Grade results on the Inspect page" if can_grade(acc)  # the one grading rule: no invitation without it
               else "Grades are off in this read-only demo" if acc.read_only else "Grading is off for you")
    st.caption(f"{len(case.queries)} queries, {len(qrels)} with at least one human grade · scale {case.scale}. "
               f"{grading}; every "
               "snapshot is scored with today's human grades in the diff.")
    run_panel(case)
    return case, qrels


def run_panel(case) -> None:
    label = st.text_input("Label for the next snapshot", key=f"{P}label", placeholder="e.g. dense 0.7")
    if not st.button(f"Run a snapshot of {len(case.queries)} queries with the sidebar configuration", key=f"{P}run",
                     type="primary", disabled=not may_write(acc),
                     help=None if may_write(acc) else "Running a snapshot stores it: it needs write access (a "
                     "read-only demo ships its snapshots; grading stays open where it is allowed)"):
        return
    ensure_model()
    bar = st.progress(0.0, text="searching…")
    try:
        check_grading(acc, [q.scope for q in case.queries])  # storing a snapshot is a write in the case's scopes
        snap = run_snapshot(ws, case, cfg, js, CachedModels(get_reranker, get_generator), label=label,
                            progress=lambda d, t: bar.progress(d / t, text=f"query {d}/{t}"), access=acc)
    except (ValueError, ImportError, PermissionError) as exc:
        st.error(plain(exc))
        return
    bar.empty()
    prev = [r["id"] for r in js.snapshot_rows(case.name) if r["id"] != snap.id]
    st.session_state[f"{P}b"] = snap.id  # diff the new run against the one before it
    if prev:
        st.session_state[f"{P}a"] = prev[-1]
    head, value = next(iter(snap.metrics.items()), ("ndcg@10", 0.0))  # nDCG at the case's k
    share = head.replace("ndcg", "judged")  # judged@k beside it: how much of each top k the score rests on
    st.success(f"Snapshot {snap.id}: {head.replace('ndcg', 'nDCG')} {value:.3f} with {share} "
               f"{snap.metrics.get(share, 0.0):.0%} over {snap.judged_queries} judged queries in "
               f"{snap.elapsed_ms / 1000:.1f} s")


def scored(rows, qrels, k: int) -> dict:
    """Every snapshot of the case scored with today's grades at the case's k: the one computation behind every
    number on this page (the trend, its table and the diff), so a drop in one is a drop in the other. The score
    stored at run time (the grades then) is not shown here; `python -m retrieval snapshot list` prints it."""
    return {r["id"]: rescore(js.snapshot(r["id"]), qrels, k, stages=("final",)) for r in rows}


def headline(a: dict[str, float], b: dict[str, float], k: int) -> None:
    """A's and B's nDCG@k, each beside its judged@k (the library's, `retrieval.metrics`): a score resting on few
    grades reads as such."""
    cols = st.columns(4)
    for (side, m), c1, c2 in zip((("A", a), ("B", b)), cols[::2], cols[1::2]):
        c1.metric(f"nDCG@{k} ({side})", f"{m[f'ndcg@{k}']:.3f}", help=explain("nDCG@10"))
        c2.metric(f"judged@{k} ({side})", f"{m[f'judged@{k}']:.0%}", help=explain("judged@10"))
    st.caption(f"judged@{k}: of each query's top {k}, the share that has a grade, averaged over the queries scored "
               f"(B: {b[f'judged@{k}']:.0%}). nDCG counts an ungraded result as not relevant, so the lower this share, "
               "the more a score — and a difference — depends on which results happen to be graded; "
               "grading more of them firms it up.")


def snapshots_section(case_name: str, qrels, k: int) -> tuple[str, str, dict]:
    """The case's snapshots as a trend and a table (scored with today's grades); the two picked for the diff."""
    rows = js.snapshot_rows(case_name)
    if not rows:
        st.info("No snapshot of this case yet: pick a configuration in the sidebar and run one.")
        st.stop()
    snaps = scored(rows, qrels, k)
    table = []
    for r in rows:
        c = PipelineConfig.from_json(r["config"])
        f = c.settings.fusion_defaults()  # a knob the strategy does not use: the preset's
        table.append({"snapshot": r["id"], "label": r["label"], "preset": c.settings.preset_name, "fusion": f["fusion"],
                      "dense": f["dense_weight"], "sparse": f["sparse_weight"], "rrf_k": f["rrf_k"],
                      "reranker": c.reranker,
                      **{m: round(v, 4) for m, v in snaps[r["id"]].metrics.items()}})
    st.subheader("Snapshots of this case")
    st.caption(f"Every score on this page — the trend, this table and the diff below — is each snapshot's final lists "
               f"scored with today's human grades at k = {k}, over the queries it judged (the score stored when it "
               "ran used the grades of that day: `python -m retrieval snapshot list`).")
    ids = [r["snapshot"] for r in table]
    for side in ("a", "b"):  # another case was picked: its own defaults
        if st.session_state.get(f"{P}{side}") not in ids:
            st.session_state.pop(f"{P}{side}", None)
    labels = {r["snapshot"]: r["label"] for r in table}
    shown = lambda i: f"{labels[i]} · {i}" if labels.get(i) else i  # the label typed, then the id
    c1, c2 = st.columns(2)
    a_id = c1.selectbox("A (baseline)", ids, index=max(0, len(ids) - 2), key=f"{P}a", format_func=shown)
    b_id = c2.selectbox("B", ids, index=len(ids) - 1, key=f"{P}b", format_func=shown)
    headline(snaps[a_id].metrics, snaps[b_id].metrics, k)
    names = metric_names(js.policy(case_name).k)
    st.plotly_chart(snapshot_trend_figure(table, names, highlight=(a_id, b_id)), key=f"{P}trend",
                    config={"displayModeBar": False})
    snapshot_list(table, names, f"{P}list")
    if a_id == b_id:
        st.caption("Pick two different snapshots to diff them.")
        st.stop()
    return a_id, b_id, snaps


def diff_section(case_name: str, a_id: str, b_id: str, qrels, snaps: dict, k: int):
    """B − A: metric deltas, per query (with a spreadsheet download), and the judged traces that moved — from the
    same scored snapshots the trend shows."""
    sa, sb = snaps[a_id], snaps[b_id]
    diff = diff_snapshots(sa, sb, qrels, k=k)
    st.subheader(f"B − A · {diff.test}")
    judged = {len([q for q in x.queries if q.metrics]) for x in (sa, sb)}
    if {m.n for m in diff.metrics} != judged or len(judged) != 1:
        st.caption("A and B below are means over the queries both snapshots judged; the trend above averages each "
                   "snapshot over all the queries it judged, so the two can differ here.")
    if diff.config_changes:
        st.caption("Config changes: " + ", ".join(code(f"{f} {a} → {b}") for f, (a, b) in diff.config_changes.items()))
    st.dataframe([{"metric": m.metric, "A": round(m.a, 4), "B": round(m.b, 4), "Δ": round(m.delta, 4),
                   "95 % interval": "—" if m.interval is None else m.interval.cell(),
                   "p": None if m.p_value is None else round(m.p_value, 4), "queries": m.n} for m in diff.metrics],
                 hide_index=True, width="stretch", key=f"{P}metrics")
    st.caption("95 % interval: paired bootstrap of B − A over the queries scored in both (10,000 resamples); "
               "an interval that includes zero shows no difference.")

    def link(q, cfg_) -> str:
        scope = next((x.scope for x in sb.queries if x.qid == q.qid), None)
        return f"{INSPECT_URL}?{urlencode(inspect_query_params(cfg_, q.query, scope))}"

    per_query = [{"qid": q.qid, "query": q.query, "scope": q.scope, f"A {diff.metric}": round(q.a, 4),
                  f"B {diff.metric}": round(q.b, 4), "Δ": round(q.delta, 4),
                  "RBO": None if q.rbo is None else round(q.rbo, 3), f"entered top {diff.k}": ", ".join(q.entered),
                  f"left top {diff.k}": ", ".join(q.left), "moved": len(q.moved), "Inspect A": link(q, sa.config),
                  "Inspect B": link(q, sb.config)} for q in diff.queries]
    st.markdown(f"**Per query** (worst first) · {sum(q.delta < 0 for q in diff.queries)} worse, "
                f"{sum(q.delta > 0 for q in diff.queries)} better")
    per_query_grid(per_query, diff.metric, diff.k, f"{P}perq")
    st.download_button("Download the per-query table (CSV for spreadsheets)", spreadsheet_csv(per_query),
                       file_name=f"{case_name}-{a_id}-vs-{b_id}.csv", mime="text/csv", key=f"{P}perq_csv",
                       on_click="ignore",
                       help="Cells a spreadsheet would run as a formula (starting with = + - @) start with a quote.")
    scope_of = {x.qid: x.scope for x in sb.queries}
    moved = [{"qid": q.qid, "trace": m.trace_id, "grade": m.grade, "final A": m.rank_a, "final B": m.rank_b,
              "moved at": m.stage, "rank there A": m.stage_rank_a, "rank there B": m.stage_rank_b,
              "explain in B": f"{INSPECT_URL}?" + urlencode(inspect_query_params(sb.config, q.query, scope_of[q.qid],
                                                                                 target=m.trace_id))}
             for q in diff.queries for m in q.moved]
    st.markdown(f"**Judged traces that moved** ({len(moved)}) and the first stage where their rank changed "
                f"({DASH} = not in that list)")
    st.dataframe(moved, hide_index=True, width="stretch", key=f"{P}moved", placeholder=DASH,  # ranks stay numbers
                 column_config={"explain in B": st.column_config.LinkColumn(display_text="why here?")})
    return sa, sb, diff


def grade_section(case, sa, sb, diff) -> None:
    """Open a query of the diff in Inspect, and grade B's top 10 for it."""
    in_both = {x.qid for x in diff.queries}
    qids = [q.qid for q in sb.queries if q.qid in in_both]  # case order: stable while grades change the diff
    pick = st.selectbox("Open a query in Inspect", qids, key=f"{P}open",
                        format_func=lambda q: f"{q} · {next(x.query for x in diff.queries if x.qid == q)}")
    chosen = next(x for x in sb.queries if x.qid == pick)
    c1, c2 = st.columns(2)
    with c1:
        st.page_link(INSPECT, label=f"Inspect {plain(pick)} with A's configuration", icon=":material/manage_search:",
                     query_params=inspect_query_params(sa.config, chosen.query, chosen.scope))
    with c2:
        st.page_link(INSPECT, label=f"Inspect {plain(pick)} with B's configuration", icon=":material/manage_search:",
                     query_params=inspect_query_params(sb.config, chosen.query, chosen.scope))

    with st.expander("Grade B's top 10 for this query", key=f"{P}grading"):  # keyed: stays open while grading
        top = chosen.credited("final")[:10]
        content = {t.id: t.content for t in ws.store.get(top)}
        rater = who_grades(acc, key=f"{P}rater_input")  # whom grades are saved as, as on Judge and Inspect
        ratings = js.ratings(chosen.scope, chosen.query)
        grades, others = grades_of(ratings, rater), others_graded(ratings, rater)
        n_graded = sum(t in grades["human"] for t in top)
        st.caption(f"{plain(pick)} · “{plain(chosen.query)}” · {n_graded}/{len(top)} graded. A grade counts "
                   "for every case holding this query in this scope, and the diff above counts it at once.")
        for rank, tid in enumerate(top, 1):
            c1, c2 = st.columns([3, 2])
            c1.markdown(f"**{rank}.** {code(tid)} {plain(content.get(tid, '(not in the store)')[:240])}")
            with c2:
                grade_widget(js, chosen.scope, chosen.query, tid, key_prefix=f"{P}g_", scale=case.scale, grades=grades,
                             label=f"#{rank}", disabled=not can_grade(acc), access=acc, rater=rater,
                             others=others.get(tid, 0))


def machine_section(case, sb) -> None:
    st.caption("A text generator grades the ungraded top 10 of snapshot B with the UMBRELA prompt "
               "(retrieval/judgments/machine.py). Machine grades are stored apart (with their prompt's version) and "
               "count in a case's metrics only once the case turns them on after their agreement with each human "
               "rater is shown (Judge page). " + caption_text("UMBRELA"))
    gen = st.selectbox("Generator", ["cohere", "openai", "gemma"], key=f"{P}gen",
                       format_func=lambda g: {"gemma": "local Gemma (weak)", "openai": "OpenAI-compatible server",
                                              "cohere": "Cohere"}[g])
    if gen == "gemma":
        st.warning(WEAK_NOTE)
    spec = gen
    if gen == "openai":
        url = openai_server(f"{P}gen_url", "http://127.0.0.1:11434")
        model = st.text_input("Model", "llama3.2", key=f"{P}gen_model")
        spec = f"openai:{url}#{model}"
    if st.button("Machine-grade snapshot B", key=f"{P}grade", disabled=not may_write(acc),
                 help=None if may_write(acc) else "Machine grading stores grades: it needs write access "
                                                          "(a read-only demo or a reader may not run it)."):
        bar = st.progress(0.0, text="grading…")
        try:
            rep = machine_grade(js, sb, get_generator(spec), lambda ids: {t.id: t.content for t in ws.store.get(ids)},
                                progress=lambda d, t: bar.progress(d / t, text=f"{d}/{t}"), access=acc)
        except (ValueError, ImportError, PermissionError) as exc:
            st.error(plain(exc))
        else:
            bar.empty()
            if rep.stopped:  # the run ended early: lead with why, never with a count of 0 failures
                st.error(f"Machine grading stopped: {plain(rep.stopped)}. {rep.graded} graded before it stopped "
                         f"(kept), {rep.skipped} were already graded.")
            else:
                (st.warning if rep.failures else st.success)(
                    f"{plain(rep.grader)}: {rep.graded} graded, {rep.skipped} already graded, "
                    f"{len(rep.failures)} failed")
    keys = {(scope_text(q.scope), query_key(q.query)) for q in case.queries}
    agree = agreement(j for j in js.judgments() if (scope_text(j.scope), query_key(j.query)) in keys)
    if agree["n"]:
        st.metric("Cohen's kappa (human vs machine)", f"{agree['kappa']:.2f}",
                  help=f"{agree['n']} traces graded by both; {agree['agree']} identical grades\n\n{explain('kappa')}")
    else:
        st.caption("No trace has both a human and a machine grade yet.")


def page() -> None:
    """Everything below the sidebar: it reads the cases, snapshots and judgments tables throughout."""
    case, qrels = case_section()
    k = js.policy(case.name).k
    a_id, b_id, snaps = snapshots_section(case.name, qrels, k)
    sa, sb, diff = diff_section(case.name, a_id, b_id, qrels, snaps, k)
    grade_section(case, sa, sb, diff)
    with st.expander("Machine grading (optional) and agreement with human grades", key=f"{P}machine"):
        machine_section(case, sb)


try:
    page()
except JudgmentStoreError as exc:  # a damaged judgments, cases or snapshots table: say so, never a traceback
    st.warning(f"Grading, cases and snapshots are off: {plain(exc)}")
except RuntimeError as exc:  # LanceDB's own error where the judgment store does not wrap it (snapshot_rows)
    why = (str(exc).strip().splitlines() or [""])[0][:240]
    st.warning(f"Snapshots are off: a table of this store could not be read ({type(exc).__name__}: {plain(why)}). "
               "If the snapshots table is damaged, move snapshots.lance aside; the traces are not affected.")
