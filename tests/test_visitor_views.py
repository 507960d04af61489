"""Issue 32, items 1 and 2: what a visitor limited to `user:maya` is told about versions uses only their scope.

S has three users; S′ is S with every scope but maya's removed (tests/nonint.py builds both, same versions).
The Changes view's idf sentences and the As-of banner must read the same on both.
"""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apphelpers import open_page
from retrieval.models import HashingEmbedder
from retrieval.store.versions import create_tag, list_versions
from retrieval.workspace import Workspace
from nonint import sign_in_as_the_visitor, AS_OF, QUERY, build, fixed_clock, normalise

TIMEOUT = 120


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("visitor_views")
    out = {"t0": datetime.now(UTC)}
    for name, only in (("S", False), ("S'", True)):
        assert build(str(root / name), "store", only) == AS_OF
        out[name] = str(root / name)
        tbl = Workspace(out[name], embedder=HashingEmbedder(384)).store.table()
        create_tag(tbl, "release-1", AS_OF)  # a tag: no new version
    return out


@pytest.fixture
def maya(monkeypatch, tmp_path):
    sign_in_as_the_visitor(monkeypatch, tmp_path)
    return monkeypatch


def inspect(maya, db: str, changes: bool):
    maya.setenv("RETRIEVAL_DB", db)
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q=QUERY, i_scope="user:maya", asof=str(AS_OF))
    assert not at.exception, at.exception
    if changes:
        at.toggle(key="i_chg_on").set_value(True).run()
        assert not at.exception, at.exception
    return at


def test_changes_explains_idf_with_the_visitors_statistics(stores, maya):
    """Item 1: on a store set to `statistics store`, S said "31 more trace(s) contain it" (30 are priya's)."""
    said = {}
    for name in ("S", "S'"):
        at = inspect(maya, stores[name], changes=True)
        said[name] = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("BM25 idf of")]
    assert said["S"] == said["S'"]
    assert said["S'"] and all(s.endswith("because 1 more trace(s) contain it") for s in said["S'"])
    assert {s.split("'")[1] for s in said["S'"]} == {"wash", "machin", "error"}  # english-stem


def test_the_as_of_banner_counts_only_the_visitors_scope(stores, maya):
    """Item 2: S's banner said "16 added and 31 removed" (tomas's and priya's rows) to a visitor of maya's."""
    banners = {}
    window = (stores["t0"], datetime.now(UTC))  # the commit time differs: S and S′ were written seconds apart
    for name in ("S", "S'"):
        at = inspect(maya, stores[name], changes=False)
        banners[name] = [normalise(i.value, window) for i in at.info if i.value.startswith("Showing an earlier")]
    assert banners["S"] == banners["S'"] and len(banners["S'"]) == 1
    assert f"the sidecar of version {AS_OF + 2}, 0 added and 1 removed" in banners["S'"][0]


def test_the_changes_view_tells_each_idf_move_once_and_names_versions(stores, maya):
    """Item 15: every idf sentence was shown twice; the version pickers showed bare numbers."""
    at = inspect(maya, stores["S'"], changes=True)
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for term in ("wash", "machin", "error"):
        assert sum(f"BM25 idf of \\'{term}\\' moved from" in t or f"BM25 idf of '{term}' moved from" in t
                   for t in shown) == 1, term
    assert any("the BM25 idf of 'wash', 'machin', 'error' moved \\(why: below\\)" in t.replace("\\'", "'")
               for t in shown)
    times = dict(list_versions(Workspace(stores["S'"], embedder=HashingEmbedder(384)).store.table()))
    want = [f"v{v} · release-1 · {t:%Y-%m-%d %H:%M} UTC" if v == AS_OF else f"v{v} · {t:%Y-%m-%d %H:%M} UTC"
            for v, t in sorted(times.items(), reverse=True)]
    assert at.selectbox(key="i_chg_a").options == want == at.selectbox(key="i_chg_b").options
    assert at.selectbox(key="i_chg_a").value == AS_OF
    at.sidebar.radio(key="i_asof_mode").set_value("version").run()
    assert at.selectbox(key="i_asof_version").options == want


def printed_stages(at) -> list[dict[str, list[str]]]:
    """Each stage column of the Changes view as printed: its A and B lists and its entered and left captions."""
    out: list[dict[str, list[str]]] = []
    for c in at.caption:
        text = c.value.replace("\\", "")
        for head in ("A: ", "B: ", "entered the top 10: ", "left the top 10: "):
            if text.startswith(head):
                if head == "A: ":
                    out.append({})
                out[-1][head.split(":")[0].split()[0]] = [] if text[len(head):] == "—" else text[len(head):].split(", ")
    return out


def test_entered_and_left_follow_the_printed_lists_when_the_store_changes(stores, maya, tmp_path):
    """"Claims are checked": the Changes view's entered/left are the difference of the two lists it prints, and
    a write to the store under an open page moves them (B is the newest version)."""
    import shutil

    from retrieval.types import MemoryTrace

    db = str(tmp_path / "copy")
    shutil.copytree(stores["S'"], db)
    at = inspect(maya, db, changes=True)
    before = printed_stages(at)
    assert len(before) == 5
    for s in before:
        assert s.get("entered", []) == [i for i in s["B"] if i not in s["A"]]
        assert s.get("left", []) == [i for i in s["A"] if i not in s["B"]]
    Workspace(db, embedder=HashingEmbedder(384), clock=fixed_clock).ingest([MemoryTrace(
        id="maya-washer-final", scope="user", scope_id="maya", content="Washing machine error E-4102: washing "
        "machine error fixed, the washing machine error is gone.")])
    new = Workspace(db, embedder=HashingEmbedder(384)).store.version()
    at.run()  # the page reads the versions again: the new one is offered
    at.selectbox(key="i_chg_b").set_value(new).run()
    assert not at.exception, at.exception
    after = printed_stages(at)
    final = after[-1]
    assert final["B"][0] == "maya-washer-final" and "maya-washer-final" not in final["A"]
    assert "maya-washer-final" in final["entered"]
    for s in after:
        assert s.get("entered", []) == [i for i in s["B"] if i not in s["A"]]
        assert s.get("left", []) == [i for i in s["A"] if i not in s["B"]]
    assert after != before
