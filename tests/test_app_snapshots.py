"""AppTest: the Snapshots page (import a case, two snapshots with different weights, diff, open a row in
Inspect) and the grading widget (grade three results, restart, the grades are still there)."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from apphelpers import demo_app_env, open_page, page_texts
from test_machine_rule import StopsAfterOne

from retrieval.ingest.demo import JUDGMENTS
from retrieval.judgments import JudgmentStore
from retrieval.pipeline.settings import RetrievalSettings
from retrieval.types import Scope

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120
MAYA = Scope("user", "maya")


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "snapapp")


def page(path: str | None = None, **params) -> AppTest:
    return open_page(path, TIMEOUT, **params)


def texts(at) -> str:
    return page_texts(at)


def frame(at, column: str):
    """The first table with `column` (dataframes without selection have no widget key)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_import_a_case_run_two_snapshots_diff_and_open_inspect(demo_env):
    at = page("pages/6_Snapshots.py")
    assert not at.exception, at.exception
    assert at.selectbox(key="s_case").value == "demo"  # shipped by build-demo
    lines = JUDGMENTS.read_bytes().splitlines()[:6] + [b'{"qid": "bad", "query": "x", "relevant": {"a": 4}}']
    at.file_uploader(key="s_imp_jsonl").set_value(("mini.jsonl", b"\n".join(lines), "application/json")).run()
    at.text_input(key="s_imp_name").input("mini").run()
    at.button(key="s_imp_go").click().run()
    assert not at.exception, at.exception
    assert "Case mini: 6 queries" in texts(at)
    assert "1 line(s) skipped: mini.jsonl line 7: grade 4 is outside the graded scale" in texts(at)
    assert at.selectbox(key="s_case").value == "mini"
    assert "No snapshot of this case yet" in texts(at)

    at.text_input(key="s_label").input("even").run()
    at.button(key="s_run").click().run()
    assert not at.exception, at.exception
    at.slider(key="s_dense_weight").set_value(0.9).run()
    at.slider(key="s_sparse_weight").set_value(0.1).run()
    at.text_input(key="s_label").input("dense-heavy").run()
    at.button(key="s_run").click().run()
    assert not at.exception, at.exception
    assert re.search(r"Snapshot s\S+: nDCG@10 \d\.\d{3} with judged@10 \d+% over \d+ judged queries", texts(at))

    snaps = JudgmentStore(demo_env).snapshots("mini")
    assert [(s.label, s.config.settings["dense_weight"]) for s in snaps] == [("even", 0.5), ("dense-heavy", 0.9)]
    assert (at.selectbox(key="s_a").value, at.selectbox(key="s_b").value) == (snaps[0].id, snaps[1].id)
    assert at.selectbox(key="s_b").options[:2] == [f"even · {snaps[0].id}", f"dense-heavy · {snaps[1].id}"]
    listing = frame(at, "label")  # the whole configuration shows for the row clicked (ui/snapshot_tables.py)
    assert list(listing["label"]) == ["even", "dense-heavy"]
    metrics = frame(at, "metric")
    assert list(metrics["metric"]) == ["ndcg@10", "recall@10", "mrr", "p@10", "judged@10", "err@10"]
    assert metrics["Δ"].iloc[0] == pytest.approx(round(snaps[1].metrics["ndcg@10"] - snaps[0].metrics["ndcg@10"], 4),
                                                 abs=1e-4)
    for delta, cell in zip(metrics["Δ"], metrics["95 % interval"]):  # a paired bootstrap interval beside each delta
        lo, hi, where = re.fullmatch(r"\[([+-]\d\.\d{4}), ([+-]\d\.\d{4})\] (above 0|below 0|includes 0)",
                                     cell).groups()  # the one interval format (`PairedInterval.cell`)
        assert float(lo) - 1e-4 <= delta <= float(hi) + 1e-4
        assert where == ("above 0" if float(lo) > 0 else "below 0" if float(hi) < 0 else "includes 0")
    per_q = frame(at, "Inspect B")
    # a trace in no list of a side reads "—", never a bare None (ranks stay numbers, so they sort as numbers)
    (moved,) = [d for d in at.dataframe if "moved at" in d.value.columns]
    assert len(moved.value) and moved.proto.placeholder == "—"
    assert sorted(per_q["qid"]) == ["m01", "m02", "m03", "m04", "m05", "m06"]
    assert "dense_weight 0.5 → 0.9" in texts(at)
    link = per_q["Inspect B"].iloc[0]
    assert link.startswith("Inspect?") and "dense_weight%3D0.9%2C" in link  # inside the one settings field

    at.selectbox(key="s_open").set_value("m02").run()
    links = {pl.proto.label: pl.proto for pl in at.get("page_link") if pl.proto.label.startswith("Inspect m02")}
    proto = links["Inspect m02 with B's configuration"]
    assert proto.page.endswith("2_Inspect.py") or "Inspect" in proto.page
    params = {k: v[0] for k, v in parse_qs(proto.query_string).items()}
    knobs = RetrievalSettings.parse(params["i_settings"]).knobs()
    assert (params["i_q"], params["i_scope"], knobs["dense_weight"], knobs["sparse_weight"]) == \
        ("washing machine error E-4102", "user:maya", 0.9, 0.1)

    inspect = page("pages/2_Inspect.py", **params)  # what the link opens
    assert not inspect.exception, inspect.exception
    assert inspect.text_input(key="i_q").value == "washing machine error E-4102"
    assert inspect.slider(key="i_dense_weight").value == pytest.approx(0.9)

    # Grade B's top 10 says whom grades are saved as, with the one rater picker (as on Judge and Inspect), and a row
    # another rater graded reads "not graded by you", never "ungraded" (which means by anyone).
    from ui.grading import NOT_YOURS
    from ui.view import UNGRADED

    chosen = next(q for q in snaps[1].queries if q.qid == "m02")
    js = JudgmentStore(demo_env)
    mine = js.grades(chosen.scope, chosen.query)["human"]
    rank, tid = next((r, t) for r, t in enumerate(chosen.credited("final")[:10], 1) if t not in mine)
    js.set_grade(chosen.scope, chosen.query, tid, 2, rater="bob")
    at.run()
    assert not at.exception, at.exception
    assert [c.value for c in at.caption if c.value.startswith("Grades are saved as")] == [
        "Grades are saved as **local** (the local operator): type a name in **Your rater name** to save them under it."]
    labels = [b.proto.label for b in at.button_group if b.proto.label.startswith("#")]
    assert f"#{rank} · {NOT_YOURS} (1 other rater did)" in labels and not any(UNGRADED in x for x in labels)
    at.text_input(key="s_rater_input").input("maya").run()
    assert "Grades are saved as **maya** (from **Your rater name**)." in texts(at)


GRADING_SCRIPT = """
import os
from retrieval.judgments import JudgmentStore
from retrieval.types import Scope
from ui.grading import grade_widget

js = JudgmentStore(os.environ["RETRIEVAL_DB"])
scope, q = Scope("user", "maya"), "a query only this test grades"
grades = js.grades(scope, q)
for tid in ("maya-inv-20931", "maya-dentist", "maya-washer-error", "maya-flight-madrid"):
    grade_widget(js, scope, q, tid, key_prefix="t_", grades=grades)
"""


def test_grade_three_results_restart_and_they_are_still_there(demo_env):
    q = "a query only this test grades"
    at = AppTest.from_string(GRADING_SCRIPT, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    labels = [b.proto.label for b in at.button_group]
    assert labels == [f"{t} · ○ not graded by you" for t in ("maya-inv-20931", "maya-dentist", "maya-washer-error",
                                                     "maya-flight-madrid")]
    at.button_group[0].set_value(3).run()
    at.button_group[1].set_value(0).run()
    at.button_group[2].set_value(1).run()
    assert not at.exception, at.exception
    assert JudgmentStore(demo_env).grades(MAYA, q)["human"] == {"maya-inv-20931": 3, "maya-dentist": 0,
                                                                 "maya-washer-error": 1}
    restarted = AppTest.from_string(GRADING_SCRIPT, default_timeout=TIMEOUT).run()  # a new session
    assert [b.proto.label for b in restarted.button_group][:3] == [
        "maya-inv-20931 · ● 3 · perfect", "maya-dentist · ● 0 · not relevant", "maya-washer-error · ● 1 · related"]
    assert [b.value for b in restarted.button_group] == [3, 0, 1, None]
    restarted.button_group[0].set_value(None).run()  # clicking the chosen grade again clears it
    restarted.button_group[3].set_value(2).run()
    assert JudgmentStore(demo_env).grades(MAYA, q)["human"] == {"maya-dentist": 0, "maya-washer-error": 1,
                                                                 "maya-flight-madrid": 2}
    assert restarted.button_group[0].proto.label == "maya-inv-20931 · ○ not graded by you"


def test_in_a_shared_deployment_the_machine_grader_calls_only_the_operators_server(demo_env, monkeypatch):
    """A visitor picks "OpenAI-compatible server" but is never asked where: the operator's endpoint is shown."""
    from ui.cache import get_workspace

    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    try:
        at = page("pages/6_Snapshots.py")
        at.selectbox(key="s_gen").set_value("openai").run()
        assert not at.exception, at.exception
        assert not [t for t in at.text_input if t.key == "s_gen_url"], "a visitor types where the server calls"
        shown = texts(at).replace("\u200b", "")  # `plain` breaks the address so Markdown does not link it
        assert "Server: http://127.0.0.1:9/v1 (configured by the operator" in shown
        assert at.button(key="s_grade").disabled  # and a demo visitor runs no machine grading at all
    finally:
        get_workspace.clear()


def test_each_nDCG_is_shown_beside_the_share_of_its_top_10_that_is_graded(demo_env):
    """judged@10 (the library's, from the same scoring as the table) stands next to nDCG@10 for A and B, with a
    caption in plain words, so a score resting on few grades reads as such."""
    from ui.glossary import explain

    at = page("pages/6_Snapshots.py")
    assert not at.exception, at.exception
    assert at.selectbox(key="s_case").value == "demo"
    listing = frame(at, "label").set_index("snapshot")
    shown = {m.label: m for m in at.metric}
    for side in ("A", "B"):
        row = listing.loc[at.selectbox(key=f"s_{side.lower()}").value]
        assert float(shown[f"nDCG@10 ({side})"].value) == pytest.approx(row["ndcg@10"], abs=6e-4)  # table: 4 places
        assert shown[f"judged@10 ({side})"].value.endswith("%")
        assert float(shown[f"judged@10 ({side})"].value[:-1]) == pytest.approx(100 * row["judged@10"], abs=0.51)
        assert shown[f"judged@10 ({side})"].proto.help == explain("judged@10")
    labels = [m.label for m in at.metric]
    assert labels[labels.index("nDCG@10 (B)") + 1] == "judged@10 (B)"  # beside it, not elsewhere on the page
    assert "judged@10: of each query's top 10, the share that has a grade" in texts(at)
    assert "with at least one human grade" in texts(at)


def test_read_only_demo_mode_shows_snapshots_but_writes_nothing(demo_env, monkeypatch):
    from ui.cache import get_workspace

    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    try:
        at = page("pages/6_Snapshots.py")
        assert not at.exception, at.exception
        assert "Importing cases needs grading access" in texts(at)
        assert at.button(key="s_run").disabled
        assert not [u for u in at.file_uploader]
    finally:
        get_workspace.clear()  # the guard marked the cached workspace read-only


def test_machine_grading_that_stops_leads_with_the_stop_as_an_error(tmp_path_factory, monkeypatch):
    """A run ended by an unreachable server is an error naming why, then what was kept — never a warning that
    reads "0 failed" like a success."""
    import ui.cache

    gen = StopsAfterOne()  # a server that answers once, then is gone
    monkeypatch.setattr(ui.cache, "get_generator", lambda spec: gen)
    for db in demo_app_env(tmp_path_factory, "snapstop"):  # its own store: the run writes one machine grade
        at = page("pages/6_Snapshots.py")
        at.button(key="s_grade").click().run()
        assert not at.exception, at.exception
        assert gen.calls == 2
        errors = [e.value.replace("\u200b", "") for e in at.error]  # `plain` breaks an address so it is no link
        assert len(errors) == 1, errors
        assert errors[0].startswith("Machine grading stopped: cannot connect to http://127.0.0.1:9. 1 graded before "
                                    "it stopped (kept), "), errors
        assert errors[0].endswith(" were already graded.")
        assert not [w for w in at.warning if "failed" in w.value] and not [s for s in at.success if "graded" in s.value]
        assert sum(j.who == "machine" for j in JudgmentStore(db).judgments()) == 1  # what was graded stays
