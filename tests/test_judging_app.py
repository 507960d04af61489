"""AppTest: the Judge page — a blind pooled queue (no snapshot label, id or configuration anywhere in the page
while judging), keyboard grades stored under the chosen rater with the content hash, two raters and their
agreement, the combination policy, an export holding both raters."""
from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Column

from apphelpers import demo_app_env, open_page, page_texts

from retrieval.judgments import Case, CaseQuery, JudgmentStore
from retrieval.judgments.model import content_hash
from retrieval.judgments.snapshots import run_snapshot
from retrieval.models import HashingEmbedder
from retrieval.pipeline.config import PipelineConfig
from retrieval.types import Scope

TIMEOUT = 120
MAYA = Scope("user", "maya")
QUERIES = ("what is my dentist's name", "washing machine error")
SECRET = "SECRETLABEL"


@pytest.fixture(scope="module")
def team_env(tmp_path_factory):
    for db in demo_app_env(tmp_path_factory, "judgeapp"):
        from retrieval.workspace.core import Workspace

        ws = Workspace(db, embedder=HashingEmbedder(384))
        js = JudgmentStore(db)
        js.save_case(Case("team", tuple(CaseQuery(f"t{n}", q, MAYA, note=f"need {n}") for n, q in enumerate(QUERIES))))
        ids = [run_snapshot(ws, "team", PipelineConfig.for_preset(p, dense_weight=w, sparse_weight=1 - w), js,
                            label=f"{SECRET}-{p}-{w}", k=3).id for p, w in (("hybrid", 0.9), ("agentos", 0.2))]
        yield db, ids


def all_text(at: AppTest) -> str:
    """Every element of the page, widgets' options and help included (the protobufs as text)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        children = getattr(node, "children", {})
        for child in (children.values() if isinstance(children, dict) else children):
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def judge(rater: str) -> AppTest:
    at = open_page("pages/7_Judge.py", TIMEOUT, rater=rater)
    assert not at.exception, at.exception
    at.selectbox(key="j_case").set_value("team").run()
    return at


def start(at: AppTest) -> AppTest:
    at.number_input(key="j_pool_k").set_value(2).run()
    at.button(key="j_start").click().run()
    assert not at.exception, at.exception
    return at


def test_blind_queue_hides_every_configuration_while_judging(team_env):
    db, ids = team_env
    at = judge("alice")
    assert SECRET in all_text(at)  # the setup names the snapshots (the check below can fail)
    start(at)
    page = all_text(at)
    assert "Item 1 of" in page_texts(at) + page
    for hidden in [SECRET, "agentos", "dense_weight", *ids]:
        assert hidden not in page, hidden
    assert "need 0" in page or "need 1" in page  # the query's note (its information need) is shown


def test_judge_says_whom_grades_are_saved_as_before_any_is_saved(team_env):
    """With the rater field empty, the page says grades go to the local operator (the identity rule's name) and
    names the field that changes it; a typed name replaces it, before anything is saved."""
    from retrieval.judgments.identity import LOCAL

    at = open_page("pages/7_Judge.py", TIMEOUT)
    at.selectbox(key="j_case").set_value("team").run()
    said = [c.value for c in at.caption if c.value.startswith("Grades are saved as")]
    assert said == [f"Grades are saved as **{LOCAL}** (the local operator): type a name in **Your rater name** "
                    "to save them under it."]
    start(at)
    assert f"graded by {LOCAL}" in all_text(at)  # the queue is this rater's, as the line said
    at.text_input(key="rater_input").input("maya").run()
    assert [c.value for c in at.caption if c.value.startswith("Grades are saved as")] == [
        "Grades are saved as **maya** (from **Your rater name**)."]
    assert at.query_params.get("rater") == ["maya"] or at.query_params.get("rater") == "maya"
    at.text_input(key="rater_input").input("").run()  # emptied: back to the local operator, the URL too
    assert [c.value for c in at.caption if c.value.startswith("Grades are saved as")] == [
        f"Grades are saved as **{LOCAL}** (the local operator): type a name in **Your rater name** to save them "
        "under it."]
    assert "rater" not in at.query_params
    assert not [j for j in JudgmentStore(team_env[0]).case_judgments("team") if j.who in (LOCAL, "maya")]


def test_an_invalid_rater_name_says_grades_stay_where_they_are(team_env):
    """A reserved or malformed name is refused with an error, and the line under it says grades are still saved as
    the local operator because the name typed is not valid — never "type a name" when one was typed."""
    at = open_page("pages/7_Judge.py", TIMEOUT)
    at.selectbox(key="j_case").set_value("team").run()
    at.text_input(key="rater_input").input("machine").run()
    assert not at.exception, at.exception
    assert at.error and "machine" in at.error[0].value
    said = [c.value for c in at.caption if "saved as" in c.value]
    assert said == ["Grades are still saved as **local** (the local operator): the name typed in **Your rater name** "
                    "is not valid (see the error above), so it is not used until it is."]


def test_the_step_shows_the_query_as_text_with_its_scope_and_says_graded(team_env):
    """Whose memory a query asks is shown beside it (the scope); the query is a text element equal to it (never
    Markdown); the step's words are "graded", the app's verb."""
    at = start(judge("dora"))
    item = at.session_state["j_queue"][at.session_state["j_pos"]]
    assert [t.value for t in at.text][0] == item.query
    assert "**Query** · in `user:maya`" in page_texts(at)
    assert "not graded by you yet" in page_texts(at) and "0 graded by dora" in all_text(at)
    assert " rated by " not in page_texts(at) + all_text(at) and "not rated" not in page_texts(at)


MAIN_PX, GAP_PX = 904, 16  # the main column at 1366 px beside the sidebar (ui/tables.py); a small column gap
CHAR_PX, PAD_PX = 8.5, 32  # a wide estimate of a 16 px Source Sans character; a button's padding and border


def rows_of(node):
    """Every block of columns in the page, each as its list of columns."""
    kids = list(getattr(node, "children", {}).values())
    if kids and all(isinstance(k, Column) for k in kids):
        yield kids
    for k in kids:
        yield from rows_of(k)


def test_every_grade_button_shows_its_whole_label_at_1366(team_env):
    """The grade buttons have a row of their own, each label whole ("0 · not relevant", never "0 · not rele…"):
    seven controls in one row left 115 px a button at 1366 px wide, and Chromium cut the first label by 12 px; four in
    a row get 214 px. Checked here by the label texts and the row's share of the main column, not by pixels."""
    from ui.grading import grade_word

    at = start(judge("dora"))
    row = next(r for r in rows_of(at.main) if any(b.key == "j_g0" for c in r for b in c.button))
    labels = [b.label for c in row for b in c.button]
    assert labels == [grade_word(g) for g in range(4)]  # the full words, and nothing else in their row
    room = (MAIN_PX - GAP_PX * (len(row) - 1)) / len(row)
    assert all(len(label) * CHAR_PX + PAD_PX <= room for label in labels), (labels, room)


def test_two_raters_grade_then_agreement_policy_and_export(team_env):
    db, _ = team_env
    from retrieval.workspace.core import Workspace

    js, store = JudgmentStore(db), Workspace(db, embedder=HashingEmbedder(384)).store
    for rater, g in (("alice", 3), ("bob", 1)):
        at = start(judge(rater))
        n = len(at.session_state["j_queue"])
        for _ in range(n - 1):
            at.button(key=f"j_g{g}").click().run()
            assert not at.exception, at.exception
        at.text_input(key="j_reason").input("not my language").run()
        at.button(key="j_cant").click().run()  # the last one: can't rate, with its reason
        mine = [j for j in js.case_judgments("team") if j.who == rater]
        assert len(mine) == n and all(j.source == "judge" for j in mine)
        assert sorted(j.grade for j in mine) == [-1] + [g] * (n - 1)
        assert next(j.note for j in mine if j.cant_rate) == "not my language"
        text = {t.id: t.content for t in store.get([j.trace_id for j in mine])}
        assert all(j.content_hash == content_hash(text[j.trace_id]) for j in mine)
        assert f"{n} graded by {rater}" in all_text(at)
    at = judge("carol")
    texts = page_texts(at)
    assert "alice × bob" in texts and "Agreement is not computed yet: it would rest on " in texts  # under 10 shared
    assert not agreement_panel(at).proto.expanded and "Cohen's kappa" not in texts
    from retrieval.judgments.exchange import export_ratings

    exported = {json.loads(x)["rater"] for x in export_ratings(js, "team", "jsonl").splitlines()}
    assert exported == {"alice", "bob"}
    graded = {r: {j.trace_id for j in js.case_judgments("team") if j.who == r and not j.cant_rate}
              for r in ("alice", "bob")}
    expect = {t: 2 if t in graded["bob"] else 3 for t in graded["alice"]}  # mean of 3 and 1, or alice's alone
    expect.update({t: 1 for t in graded["bob"] - graded["alice"]})
    assert {t: g for q in js.qrels("team").values() for t, g in q.items()} == expect
    at.selectbox(key="j_pol_how").set_value("rater").run()
    at.selectbox(key="j_pol_rater").set_value("bob").run()
    at.button(key="j_pol_save").click().run()
    assert not at.exception, at.exception
    assert js.policy("team").rater == "bob" and "grades of rater bob only" in page_texts(at)
    assert {t: g for q in js.qrels("team").values() for t, g in q.items()} == dict.fromkeys(graded["bob"], 1)


def agreement_panel(at: AppTest):
    return next(e for e in at.expander if e.label == "Agreement between raters")


def not_available(at: AppTest) -> list[str]:
    """The panel's sentences that say agreement is not there (the old panel said it three ways at once: a bold "—"
    for each number, a warning, a reason per pair)."""
    said = [node.value for node in agreement_panel(at) if hasattr(node, "value") and isinstance(node.value, str)]
    return [t for t in said if re.search(r"\*\*—\*\*|withheld|not computed|No two raters|No human grade", t)]


def test_agreement_stays_closed_and_says_once_why_until_it_can_be_computed(team_env):
    """No grade, then one rater, then two raters on too few shared items: the panel is collapsed and one sentence
    says why; with enough shared items it opens with alpha and kappa."""
    db, _ = team_env
    from retrieval.workspace.core import Workspace

    js, query = JudgmentStore(db), "flight to madrid"  # a query no other test grades (grades follow the query)
    js.save_case(Case("quiet", (CaseQuery("q0", query, MAYA),)))
    run_snapshot(Workspace(db, embedder=HashingEmbedder(384)), "quiet", PipelineConfig.for_preset("hybrid"), js,
                 label="quiet", k=3)

    def view() -> AppTest:
        at = open_page("pages/7_Judge.py", TIMEOUT, rater="quinn")
        at.selectbox(key="j_case").set_value("quiet").run()
        assert not at.exception, at.exception
        return at

    at = view()
    assert not agreement_panel(at).proto.expanded
    assert not_available(at) == ["Agreement is not computed yet: no human grade on this case yet."]
    ids = [f"quiet-{n}" for n in range(12)]  # grades of ids outside the store still count for agreement
    for rater, g in (("ann", 2), ("ben", 2)):
        for n, tid in enumerate(ids[:3] if rater == "ben" else ids):
            js.set_grade(MAYA, query, tid, g if n % 2 else 3, rater=rater)
    at = view()
    assert not agreement_panel(at).proto.expanded
    assert not_available(at) == ["Agreement is not computed yet: it would rest on 3 item(s) graded by more than one "
                                 "rater; at least 10 are needed (judge the shared items the queue puts first)."]
    for n, tid in enumerate(ids):
        js.set_grade(MAYA, query, tid, 2 if n % 2 else 3, rater="ben")
    at = view()
    assert agreement_panel(at).proto.expanded and "Krippendorff's alpha (ordinal) **1.00**" in page_texts(at)
    assert not_available(at) == []


def test_compare_marks_unrated_results_and_counts_every_rater(team_env):
    db, _ = team_env
    query = "washing machine error"
    at = open_page("pages/3_Compare.py", TIMEOUT)
    at.text_input(key="cmp_q").input(query).run()
    at.selectbox(key="cmp_scope").select("user:maya").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "Δ rank" in d.value.columns)
    ids = list(table["id"])
    js = JudgmentStore(db)
    graded = {j.trace_id for j in js.ratings(MAYA, query) if not j.cant_rate}
    top = ids[:10]
    assert {i for i, g in zip(table["id"], table["grade"]) if g == "○ ungraded"} == {i for i in top if i not in graded}
    assert any(g != "○ ungraded" for g in table["grade"]) == bool(set(top) & graded)


def test_signed_in_raters_are_their_identity_and_see_only_their_cases(team_env, tmp_path, monkeypatch):
    import ui.access

    db, _ = team_env
    JudgmentStore(db).save_case(Case("tomas-only", (CaseQuery("x1", "on-call rota", Scope("user", "tomas")),)))
    policy = tmp_path / "access.toml"
    policy.write_text('[users."maya@example.com"]\nscopes = ["user:maya"]\nwrite = true\n\n'
                      '[users."tomas@example.com"]\nscopes = ["user:tomas"]\nwrite = true\n')
    monkeypatch.setenv("RETRIEVAL_AUTH", "proxy")
    monkeypatch.setenv("RETRIEVAL_POLICY", str(policy))
    who = {"email": "tomas@example.com"}
    monkeypatch.setattr(ui.access, "request_headers", lambda: {"X-Forwarded-Email": who["email"]})
    at = open_page("pages/7_Judge.py", TIMEOUT, rater="mallory")
    assert not at.exception, at.exception
    assert at.selectbox(key="j_case").options == ["tomas-only"]  # not the case in maya's scope
    assert "Grading as **tomas@example.com**" in " ".join(c.value for c in at.sidebar.caption)
    who["email"] = "maya@example.com"
    at = open_page("pages/7_Judge.py", TIMEOUT, rater="mallory")  # a URL parameter never changes a signed-in rater
    assert "tomas-only" not in at.selectbox(key="j_case").options
    at.selectbox(key="j_case").set_value("team").run()
    start(at)
    at.button(key="j_g2").click().run()
    assert not at.exception, at.exception
    mine = [j for j in JudgmentStore(db).case_judgments("team") if j.source == "judge" and j.grade == 2]
    assert [j.who for j in mine] == ["maya@example.com"]


def test_read_only_demo_mode_judges_nothing(team_env, monkeypatch):  # last here: it marks the cached store read-only
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    at = start(judge("zoe"))
    assert at.button(key="j_g3").disabled and at.button(key="j_cant").disabled
    assert not at.button(key="j_next").disabled  # reading the queue is not a write
    assert "You may read this case but not grade it here." in page_texts(at)
