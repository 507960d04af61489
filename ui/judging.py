"""The Judge page's parts: one (query, trace) at a time, keyboard-first, as a fragment (a grade reruns this
step only); and what a team lead reads beside it — progress per rater, agreement, the combination policy,
stale grades, bulk clear, holes, export and import.

Blind: nothing here receives a snapshot or a configuration — the step sees `QueueItem`s only.
"""
from __future__ import annotations

import time

import streamlit as st

from retrieval.access import Access
from retrieval.judgments import SCALES, JudgmentStore
from retrieval.judgments.agreement import calibration
from retrieval.judgments.exchange import export_ratings, import_ratings
from retrieval.judgments.identity import signed_in, writer
from retrieval.judgments.model import CANT_RATE, Case, Judgment, content_hash
from retrieval.judgments.queue import QueueItem, next_open, progress
from retrieval.judgments.raters import POLICIES, CasePolicy, item_key, usable

from .glossary import caption_text, helps
from .grading import REFUSALS, grade_word
from .text import code, plain

P = "j_"


def _grade_label(g: int, scale: str) -> str:
    return grade_word(g, scale)  # the one table of grade words (ui/grading.py)


def _save(js: JudgmentStore, item: QueueItem, grade: int, rater: str, text: str, scale: str,
          access: Access | None) -> None:
    """Store the grade (or "can't rate" with the typed reason) and move to the next item this rater has left."""
    note = st.session_state.get(f"{P}reason", "").strip() if grade == CANT_RATE else ""
    before = st.session_state[f"{P}mine"].get(item.key)
    try:  # the session knows whether this rater graded the item before: no read on the step's path
        js.set_grade(item.scope, item.query, item.trace_id, grade, source="judge", scale=scale, access=access,
                     rater=rater, content_hash=content_hash(text), note=note,
                     created_at=before[3] if before else 0.0)
    except REFUSALS as exc:
        st.session_state[f"{P}error"] = str(exc)
        return
    st.session_state.pop(f"{P}error", None)
    st.session_state[f"{P}mine"][item.key] = (grade, content_hash(text), note, before[3] if before else time.time())
    st.session_state[f"{P}reason"] = ""
    queue = st.session_state[f"{P}queue"]
    pos = st.session_state[f"{P}pos"]
    nxt = next_open(queue, set(st.session_state[f"{P}mine"]), pos + 1)
    st.session_state[f"{P}pos"] = nxt if nxt is not None else min(pos + 1, len(queue) - 1)


def _move(step: int) -> None:
    n = len(st.session_state[f"{P}queue"])
    st.session_state[f"{P}pos"] = (st.session_state[f"{P}pos"] + step) % n


def _mine_text(mine: tuple | None, current: str, scale: str) -> str:
    if mine is None:
        return "not graded by you yet"
    grade, graded_hash, note, _ = mine
    what = "can't rate" + (f" ({plain(note)})" if note else "") if grade == CANT_RATE else _grade_label(grade, scale)
    stale = graded_hash and graded_hash != content_hash(current)
    return f"your rating: {what}" + (" — STALE: the text changed since; grade again, or keep it" if stale else "")


@st.fragment
def judge_step(js: JudgmentStore, case: Case, rater: str, access: Access | None, disabled: bool) -> None:
    """The current item: query, information need, the trace's text, 0–3 / s / ← → (keys), saved at once."""
    queue: list[QueueItem] = st.session_state[f"{P}queue"]
    texts: dict[str, str] = st.session_state[f"{P}texts"]
    mine: dict = st.session_state[f"{P}mine"]
    pos = st.session_state[f"{P}pos"]
    item = queue[pos]
    text = texts.get(item.trace_id, "")
    done = sum(1 for i in queue if i.key in mine)
    st.progress(done / len(queue), text=f"Item {pos + 1} of {len(queue)} · {done} graded by {plain(rater)}")
    with st.container(border=True, key=f"{P}item"):
        st.markdown(f"**Query** · in {code(item.scope) if item.scope else 'every scope'}")  # whose memory it asks
        st.text(item.query)  # as typed: never Markdown, never a link
        st.caption(f"Information need: {plain(item.note)}" if item.note else "No note for this query.")
        st.markdown(f"**Result** {code(item.trace_id)}")
        st.text(text if text else "(this trace is no longer in the store)")
    mine_now = mine.get(item.key)
    status = _mine_text(mine_now, text, case.scale)
    (st.warning if "STALE" in status else st.caption)(status)
    grades = list(SCALES[case.scale])
    # The grades have a row of their own: seven buttons in one row of 904 px (1366 px beside the sidebar) cut
    # "0 · not relevant" to "0 · not rele…"; four in a row fit every label whole.
    for col, g in zip(st.columns(len(grades)), grades):
        col.button(_grade_label(g, case.scale), key=f"{P}g{g}", shortcut=str(g), disabled=disabled or not text,
                   on_click=_save, args=(js, item, g, rater, text, case.scale, access), width="stretch",
                   type="primary" if mine_now and mine_now[0] == g else "secondary")
    cols = st.columns(3)
    cols[-3].button("Can't rate", key=f"{P}cant", shortcut="s", disabled=disabled, width="stretch",
                    on_click=_save, args=(js, item, CANT_RATE, rater, text, case.scale, access),
                    help="Store 'can't rate' (with the reason typed below); it never counts in metrics")
    cols[-2].button("← previous", key=f"{P}prev", shortcut="Left", on_click=_move, args=(-1,), width="stretch")
    cols[-1].button("next →", key=f"{P}next", shortcut="Right", on_click=_move, args=(1,), width="stretch")
    if mine_now and "STALE" in status:
        st.button("Keep my rating for the new text", key=f"{P}keep", disabled=disabled, on_click=_save,
                  args=(js, item, mine_now[0], rater, text, case.scale, access))
    st.text_input("Reason for can't rate (optional)", key=f"{P}reason", placeholder="e.g. needs domain knowledge")
    if st.session_state.get(f"{P}error"):
        st.error(plain(st.session_state[f"{P}error"]))
    st.caption("Keys: 0–3 grade · s can't rate · ← → move. A grade is saved at once and the next ungraded item opens.")


def progress_table(queue: list[QueueItem], judgments: list[Judgment], hashes: dict[str, str]) -> None:
    counts = progress(queue, judgments, hashes)
    if not counts:
        st.caption("Nobody has graded an item of this pool yet.")
        return
    st.markdown("**Progress** · " + " · ".join(f"{plain(r)} {n}/{len(queue)}" for r, n in counts.items()))


def agreement_ready(agg: dict) -> bool:
    """Whether a case's agreement (`case_agreement`) has numbers to show: some grade, and enough items graded by more
    than one rater that alpha and kappa are not withheld. The Judge page opens the panel only then."""
    return bool(agg["items"]) and not agg["withheld"]


def agreement_view(agg: dict, scale: str) -> None:
    """Raters per item, pairwise kappa and the case's alpha (`case_agreement`) — as DOM text (tests and people read
    it). Until they can be computed, one sentence says why, instead of empty numbers and a reason per pair."""
    if not agg["items"]:
        st.caption("Agreement is not computed yet: no human grade on this case yet.")
        return
    spread = ", ".join(f"{r} rater{'s' if r != 1 else ''}: {n}" for r, n in agg["items_by_raters"].items())
    n = len(agg["raters"])
    st.markdown(f"**{n} rater{'s' if n != 1 else ''}** ({plain(', '.join(agg['raters']))}) · items graded by "
                f"{plain(spread)}")
    if agg["withheld"]:  # then every pair's kappa is withheld too: a pair shares no more items than all raters do
        st.caption(f"Agreement is not computed yet: {agg['withheld'].removeprefix('withheld: ')}.")
        for r in agg["pairs"]:  # how far each pair has come, with no empty number beside it
            st.markdown(f"- {plain(r['rater_a'])} × {plain(r['rater_b'])}: {r['n']} items in common "
                        f"({r['agree']} identical)")
        return
    fmt = (lambda v: "—" if v is None else f"{round(v, 2) + 0.0:.2f}")  # + 0.0: never "-0.00"
    st.markdown(f"Krippendorff's alpha (ordinal) **{fmt(agg['alpha_ordinal'])}** · (interval) "
                f"**{fmt(agg['alpha_interval'])}** · over {agg['shared_items']} item(s) graded by more than one rater")
    st.caption(caption_text("Krippendorff's alpha", "kappa"))
    weight = "quadratic-weighted " if scale == "graded" else ""
    for r in agg["pairs"]:
        why = f" — {r['withheld']}" if r["withheld"] else ""
        st.markdown(f"- {plain(r['rater_a'])} × {plain(r['rater_b'])}: {weight}Cohen's kappa **{fmt(r['kappa'])}** "
                    f"over {r['n']} items ({r['agree']} identical){why}")
    st.caption("1 = full agreement, 0 = what chance gives, below 0 = systematic disagreement. Weighted statistics "
               "count a 2-vs-3 split as a smaller disagreement than 0-vs-3; 'can't rate' and stale grades are left out")


def policy_form(js: JudgmentStore, case: Case, judgments: list[Judgment], hashes: dict[str, str],
                access: Access | None, disabled: bool) -> None:
    """The case's combination policy and k; the machine rater may count only once its calibration is shown."""
    pol = js.policy(case.name)
    cal = calibration(judgments, case.scale, hashes)
    st.markdown("**Machine rater calibration** (its agreement with each human rater on this case)")
    for r in cal:
        kappa = "—" if r["kappa"] is None else f"{round(r['kappa'], 2) + 0.0:.2f}"
        why = f" — {r['withheld']}" if r["withheld"] else ""
        st.markdown(f"- machine × {plain(r['rater'])}: kappa **{kappa}** over {r['n']} items "
                    f"({r['agree']} identical){why}")
    if cal:
        st.caption(caption_text("kappa"))
    if not cal:
        st.caption("No item has both a machine and a human grade: machine grades cannot be used yet "
                   "(machine-grade a snapshot on the Snapshots page, then grade some of the same results).")
    raters = sorted({j.who for j in judgments if j.grader == "human"})
    c1, c2, c3 = st.columns(3)
    how = c1.selectbox("Combine raters by", POLICIES, index=POLICIES.index(pol.combine), key=f"{P}pol_how")
    who = c2.selectbox("Rater (for 'rater')", raters or ["human"], key=f"{P}pol_rater",
                       index=(raters.index(pol.rater) if pol.rater in raters else 0))
    k = int(c3.number_input("k for this case's metrics", 1, 1000, pol.k, key=f"{P}pol_k"))
    machine = st.checkbox("Count the machine rater's grades", value=pol.machine, key=f"{P}pol_machine",
                          disabled=not cal, help="Only after its calibration above is shown")
    if st.button("Save the policy", key=f"{P}pol_save", disabled=disabled):
        try:
            new = CasePolicy(how, who if how == "rater" else "", int(k), bool(machine and cal),
                             {"rows": cal} if machine and cal else {})
            js.set_policy(case.name, new, access=access)
        except REFUSALS as exc:
            st.error(plain(exc))
        else:
            st.success(f"Saved: {plain(new.describe())}, k = {new.k}")


def stale_view(js: JudgmentStore, case: Case, judgments: list[Judgment], hashes: dict[str, str],
               texts: dict[str, str], access: Access | None, disabled: bool) -> None:
    """Grades whose trace was edited after grading: keep them (they hold for the new text) or clear them (the
    items go back to the raters' queues). Signed in, "keep" keeps your own grades only: nobody vouches for another
    rater's grade (`identity`)."""
    stale = [j for j in judgments if j.stale(hashes.get(j.trace_id))]
    mine = [j for j in stale if not signed_in(access) or (j.grader == "human" and j.who == writer(access))]
    if not stale:
        st.caption("No stale grade: every graded text is unchanged (grades made before hashes were kept count as "
                   "unknown, never stale).")
        return
    st.warning(f"{len(stale)} grade(s) are stale: the trace was edited after it was graded. They count in no "
               "metric (judged@k leaves them out) until kept or graded again.")
    st.dataframe([{"rater": j.who, "query": j.query, "trace": j.trace_id, "grade": j.grade} for j in stale],
                 hide_index=True, key=f"{P}stale")
    c1, c2 = st.columns(2)
    label = f"Keep {'your own' if signed_in(access) else 'all'} (they hold for the new text)"
    if c1.button(label, key=f"{P}keep_all", disabled=disabled or not mine):
        kept = [Judgment(j.scope, j.query, j.trace_id, j.grade, j.grader, j.source, 0.0, j.who,
                         content_hash(texts[j.trace_id]), j.note, j.prompt_version, j.created_at)
                for j in mine if j.trace_id in texts]
        _write(lambda: js.add_judgments(kept, case.scale, access=access), f"kept {len(kept)} grade(s)")
    if c2.button("Clear them for re-grading", key=f"{P}regrade_all", disabled=disabled):
        _write(lambda: js.clear_judgments(stale, access=access), f"cleared {len(stale)} stale grade(s)")


def _write(op, done: str) -> None:
    try:
        op()
    except REFUSALS as exc:
        st.error(plain(exc))
    else:
        st.success(done.capitalize())
        st.session_state.pop(f"{P}spec", None)  # the queue's view of who rated what is rebuilt


def clear_view(js: JudgmentStore, judgments: list[Judgment], hashes: dict[str, str], access: Access | None,
               disabled: bool) -> None:
    """Bulk clear: one rater's grades, one query's, or the stale ones — on this case only, after a confirmation."""
    c1, c2 = st.columns(2)
    mode = c1.selectbox("Clear", ["by rater", "by query", "stale only"], key=f"{P}clear_mode")
    if mode == "by rater":
        pick = c2.selectbox("Rater", sorted({j.who for j in judgments}) or ["—"], key=f"{P}clear_rater")
        chosen = [j for j in judgments if j.who == pick]
    elif mode == "by query":
        pick = c2.selectbox("Query", sorted({j.query for j in judgments}) or ["—"], key=f"{P}clear_query")
        chosen = [j for j in judgments if j.query == pick]
    else:
        chosen = [j for j in judgments if j.stale(hashes.get(j.trace_id))]
    sure = st.checkbox(f"Yes, delete these {len(chosen)} rating(s) of this case", key=f"{P}clear_sure")
    if st.button("Clear", key=f"{P}clear_go", disabled=disabled or not (sure and chosen)):
        _write(lambda: js.clear_judgments(chosen, access=access), f"cleared {len(chosen)} rating(s)")


def holes_view(queue: list[QueueItem], judgments: list[Judgment], hashes: dict[str, str]) -> None:
    """Pooled items no human rater has a usable grade for."""
    done = {item_key(j) for j in usable(judgments, hashes) if j.grader == "human"}
    holes = [i for i in queue if i.key not in done]
    st.markdown(f"**Holes** · {len(holes)} of {len(queue)} pooled results have no usable human grade")
    if holes:
        st.dataframe([{"qid": i.qid, "query": i.query, "trace": i.trace_id} for i in holes[:500]], hide_index=True,
                     key=f"{P}holes")


def exchange_view(js: JudgmentStore, case: Case, known, access: Access | None, disabled: bool,
                  hashes: dict[str, str] | None = None, rater: str = "") -> None:
    """Downloads (TREC qrels per rater or combined, stale grades left out against `hashes`; CSV, JSONL) and an
    import that maps raters back."""
    raters = sorted({j.who for j in js.case_judgments(case)})
    c1, c2 = st.columns(2)
    who = c1.selectbox("TREC qrels of", ["combined (the case's policy)"] + raters, key=f"{P}exp_who",
                       help=helps("TREC", "qrels"))
    qrels_of = None if who.startswith("combined") else who  # not `rater`: that is who imports, below
    try:
        trec = export_ratings(js, case, "trec", qrels_of, hashes)
    except ValueError as exc:  # an id with whitespace: TREC cannot carry it
        c1.warning(f"No TREC qrels: {plain(exc)}")
    else:
        c1.download_button("Download TREC qrels", trec, key=f"{P}exp_trec",
                           file_name=f"{case.name}-{qrels_of or 'combined'}.qrels", on_click="ignore")
    c2.download_button("Download every rating (JSONL)", export_ratings(js, case, "jsonl"), key=f"{P}exp_jsonl",
                       file_name=f"{case.name}-ratings.jsonl", on_click="ignore")
    try:
        csv = export_ratings(js, case, "csv")
    except ValueError as exc:  # a NUL in a note or query: CSV cannot carry it, the JSONL above does
        c2.warning(f"No CSV: {plain(exc)}")
    else:
        c2.download_button("Download every rating (CSV for spreadsheets)", csv, key=f"{P}exp_csv",
                           file_name=f"{case.name}-ratings.csv", mime="text/csv", on_click="ignore")
    up = st.file_uploader("Import ratings (JSONL or CSV from this page)", type=["jsonl", "csv"], key=f"{P}imp",
                          disabled=disabled)
    if up is not None and st.button("Import", key=f"{P}imp_go", disabled=disabled):
        try:
            rep = import_ratings(js, case, up.getvalue(), up.name, known_ids=known, access=access, rater=rater)
        except REFUSALS as exc:
            st.error(plain(exc))
            return
        st.success(f"{rep.imported} rating(s) of {', '.join(map(plain, rep.raters)) or 'nobody'} imported")
        for note in rep.notes:
            st.info(plain(note))
        for e in rep.errors[:20]:
            st.warning(plain(e))
