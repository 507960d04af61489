"""A damaged judgments table (garbage in `judgments.lance/data/*`) must not crash a page (item 5): Inspect, Compare,
Tune and Snapshots say grading is off with the store's message, and the rest of the page still works (Inspect's
stage lists, Compare's lists). A damaged snapshots table likewise leaves Snapshots with a message."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from demostore import copy_demo
from apphelpers import open_page, page_texts

from retrieval.models import HashingEmbedder

TIMEOUT = 90


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    copy_demo(str(root / "base"))
    return root


def corrupt(db: Path, table: str) -> None:
    files = list((db / f"{table}.lance" / "data").glob("*"))
    assert files, f"{table}.lance has no data files to damage"
    for f in files:
        f.write_bytes(b"garbage, not a lance file" * 3)


@pytest.fixture
def damaged(built, monkeypatch, request):
    """A copy of the demo store (one per test: the app caches one Workspace and JudgmentStore per URI) whose
    judgments table is garbage, served without sign-in."""
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_ALLOW_GRADING"):
        monkeypatch.delenv(k, raising=False)
    db = built / request.node.name
    shutil.copytree(built / "base", db)
    corrupt(db, "judgments")
    monkeypatch.setenv("RETRIEVAL_DB", str(db))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    return db


def off(at) -> list[str]:
    return [w.value for w in at.warning if "off" in w.value and "judgments table" in w.value]


def test_inspect_turns_grading_off_and_keeps_its_stage_lists(damaged):
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q="washing machine error E-4102", i_scope="user:maya")
    assert not at.exception, at.exception
    assert off(at) and off(at)[0].startswith("Grading is off: the judgments table of")
    assert any("class='rt-stages'" in h.value and "data-pick=" in h.value for h in at.get("html"))  # the stages
    assert "Why is it here?" in page_texts(at, headings=True)  # the explanation still works
    assert not [b for b in at.button_group if b.proto.label.startswith("#")]  # no grade control without grades


def test_tune_turns_cases_off_with_the_message(damaged):
    at = open_page("pages/4_Tune.py", TIMEOUT)
    assert not at.exception, at.exception
    assert off(at) and off(at)[0].startswith("Grading and cases are off: the judgments table of")
    assert at.radio(key="t_src").value  # the other labelled-query sources are still offered


def test_compare_one_query_still_compares_without_grades(damaged):
    at = open_page("pages/3_Compare.py", TIMEOUT)
    at.text_input(key="cmp_q").input("washing machine error E-4102").run()
    assert not at.exception, at.exception
    assert off(at)
    assert {"cmp_list_a", "cmp_list_b"} <= {d.key for d in at.dataframe}


def test_snapshots_says_grading_cases_and_snapshots_are_off(damaged):
    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert not at.exception, at.exception
    assert off(at) and off(at)[0].startswith("Grading, cases and snapshots are off: the judgments table of")


def test_a_damaged_snapshots_table_is_a_message_on_snapshots(built, monkeypatch):
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.snapshots import run_snapshot
    from retrieval.pipeline.config import PipelineConfig
    from retrieval.workspace import Workspace

    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_ALLOW_GRADING"):
        monkeypatch.delenv(k, raising=False)
    db = built / "snapshots-damaged"
    shutil.copytree(built / "base", db)
    run_snapshot(Workspace(str(db), embedder=HashingEmbedder(384)), "demo", PipelineConfig.for_preset("hybrid"),
                 JudgmentStore(str(db)), label="one")
    corrupt(db, "snapshots")
    monkeypatch.setenv("RETRIEVAL_DB", str(db))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = open_page("pages/6_Snapshots.py", TIMEOUT)
    assert not at.exception, at.exception
    assert any(w.value.startswith(("Snapshots are off", "Grading, cases and snapshots are off")) for w in at.warning)
    assert at.selectbox(key="s_case").value == "demo"  # the case part above it still works
