"""The As-of picker, its banner, the link that carries it, and the Changes view on Inspect (AppTest)."""
from __future__ import annotations


import pytest

from apphelpers import TICKET_UPDATE, demo_app_env, ingest_ticket_update, open_page, page_texts
from retrieval.models import HashingEmbedder
from retrieval.store.versions import create_tag
from retrieval.workspace import Workspace

TIMEOUT = 60
QUERY = {"i_q": "status of ticket FX-209847", "i_scope": "user:priya", "i_top_k": "3"}
NEW = TICKET_UPDATE


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """The demo store, tagged 'before', then one more trace that answers the query best."""
    gen = demo_app_env(tmp_path_factory, "asof_app")
    path = next(gen)
    ws = Workspace(path, embedder=HashingEmbedder(384))
    create_tag(ws.store.table(), "before")
    ingest_ticket_update(ws)
    yield path, ws.store.tags()["before"], ws.store.version()
    next(gen, None)


def _final(at) -> str:
    return "\n".join(str(m.value) for m in at.markdown).replace("\\", "")


def _infos(at) -> str:
    return " ".join(str(i.value) for i in at.info).replace("\\", "")


def test_a_link_with_asof_shows_the_tagged_state_and_says_so(db):
    _, before, _ = db
    at = open_page("pages/2_Inspect.py", TIMEOUT, **QUERY, asof="before")
    assert not at.exception
    assert at.radio(key="i_asof_mode").value == "tag" and at.selectbox(key="i_asof_tag").value == "before"
    banner = _infos(at)
    assert f"version {before} (tag before)" in banner and "earlier state" in banner
    assert NEW not in page_texts(at) and at.query_params["asof"] in ("before", ["before"])


def test_the_newest_state_has_the_new_trace_and_changes_name_it(db):
    _, before, latest = db
    at = open_page("pages/2_Inspect.py", TIMEOUT, **QUERY)
    assert not at.exception and "earlier state" not in _infos(at)
    at.selectbox(key="i_chg_a").select(before).run()
    at.toggle(key="i_chg_on").set_value(True).run()
    assert not at.exception
    text = _final(at)
    assert f"version {before} (tag before)" in text and f"version {latest}" in text
    assert f"displaced by **{NEW}**" in text
    assert "new trace (added after version A)" in text


def test_picking_a_version_in_the_sidebar_reads_that_version(db):
    _, before, _ = db
    at = open_page("pages/2_Inspect.py", TIMEOUT, **QUERY)
    at.radio(key="i_asof_mode").set_value("version").run()
    at.selectbox(key="i_asof_version").select(before).run()
    assert not at.exception
    assert f"version {before} (tag before)" in _infos(at)
    assert at.query_params["asof"] in (str(before), [str(before)])


@pytest.mark.parametrize("bad, message", [("nope", "no tag 'nope'"), ("2024-01-01T00:00:00", "no time zone"),
                                          ("99999", "version 99999 does not exist")])
def test_a_bad_asof_in_the_link_falls_back_to_the_newest_state_with_a_warning(db, bad, message):
    at = open_page("pages/2_Inspect.py", TIMEOUT, **QUERY, asof=bad)
    assert not at.exception
    warnings = " ".join(str(w.value) for w in at.warning)
    assert message in warnings.replace("\\", "") and "showing the newest state instead" in warnings
