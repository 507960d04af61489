"""Inspect never sends the operator's key to a server named in the page URL.

The page is driven by AppTest with the hashing embedder on the demo corpus; two fake servers stand in
for the operator's configured server and for a host named in a link.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest


from demostore import copy_demo
from fake_llm_server import FakeServer

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60
KEY = "sk-operator-PAGE-SECRET-42424242"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("app_cred") / "db")
    copy_demo(db)
    return db


@pytest.fixture
def env(demo_db, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_DB", demo_db)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    from ui.cache import get_generator

    get_generator.clear()
    yield monkeypatch
    get_generator.clear()


def everything_shown(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [w.value for w in at.warning] + [e.value for e in at.error] + [j.value for j in at.json]
    parts += [t.value for t in at.text_input]
    return "\n".join(str(p) for p in parts)


def test_a_url_supplied_base_url_never_receives_the_key(env):
    with FakeServer() as configured, FakeServer() as linked:
        env.setenv("OPENAI_API_KEY", KEY)
        env.setenv("OPENAI_BASE_URL", configured.url + "/v1")
        configured.chat_text = "I moved to Lisbon last spring, near the river."
        linked.chat_text = "I live in Berlin now, in a flat near the park."

        # The reported attack: a link that names the server. The parameter is not read at all.
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
        at.switch_page("pages/2_Inspect.py")
        for k, v in {"i_q": "where do I live now?", "i_scope": "user:maya", "i_hyde": "true",
                     "i_generator": "openai", "i_openai_base_url": linked.url}.items():
            at.query_params[k] = v
        at.run()
        assert not at.exception
        assert at.toggle(key="i_hyde").value is True and at.selectbox(key="i_generator").value == "openai"
        field = at.text_input(key="i_openai_base_url")
        assert field.value == "http://127.0.0.1:11434" and linked.requests == []

        # A user who types that server into the sidebar reaches it, but without the key.
        field.input(linked.url).run()
        assert not at.exception
        assert [r["path"] for r in linked.requests] == ["/v1/chat/completions"]
        assert [r["auth"] for r in linked.requests] == [None]
        assert any(linked.chat_text in i.value for i in at.info)  # keyless servers still work

        # The server the operator configured gets the key.
        at.text_input(key="i_openai_base_url").input(configured.url).run()
        assert not at.exception
        assert [r["auth"] for r in configured.requests] == [f"Bearer {KEY}"]
        assert any(configured.chat_text in i.value for i in at.info)
        assert KEY not in everything_shown(at)


def test_a_token_typed_into_the_server_url_is_not_shown_back(env):
    with FakeServer() as server:
        server.mode = "500"
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
        at.switch_page("pages/2_Inspect.py")
        for k, v in {"i_q": "where do I live now?", "i_scope": "user:maya", "i_hyde": "true",
                     "i_generator": "openai"}.items():
            at.query_params[k] = v
        at.run()
        host = server.url.removeprefix("http://")
        at.text_input(key="i_openai_base_url").input(f"http://me:pw-TYPED-9191@{host}/?key=Q-TYPED-8181").run()
        assert not at.exception
        shown = "\n".join(str(p) for p in [w.value for w in at.warning] + [j.value for j in at.json]
                          + [m.value for m in at.markdown] + [c.value for c in at.caption])
        assert "HTTP 500" in shown and server.requests
        assert "pw-TYPED-9191" not in shown and "Q-TYPED-8181" not in shown


def test_a_shared_deployment_calls_only_the_operators_endpoint(env, tmp_path):
    """Demo mode (or sign-in on): no Server URL field, and an imported config cannot name a server."""
    import json

    from retrieval.pipeline.config import PipelineConfig

    with FakeServer() as configured, FakeServer() as chosen:
        env.setenv("OPENAI_BASE_URL", configured.url + "/v1")
        env.setenv("RETRIEVAL_MODE", "demo")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
        at.switch_page("pages/2_Inspect.py")
        for k, v in {"i_q": "where do I live now?", "i_scope": "user:maya", "i_hyde": "true",
                     "i_generator": "openai"}.items():
            at.query_params[k] = v
        at.run()
        assert not at.exception
        assert not [t for t in at.text_input if t.key == "i_openai_base_url"]  # nothing to type a server into
        assert any("configured by the operator" in c.value for c in at.caption)
        assert [r["path"] for r in configured.requests] == ["/v1/chat/completions"] and chosen.requests == []
        # A config file naming another server: applied, but the server stays the operator's.
        imported = PipelineConfig.from_json(json.dumps({**json.loads(PipelineConfig(hyde=True, generator="openai")
                                                                     .to_json()), "openai_base_url": chosen.url}))
        at.session_state["i_pending_config"] = imported  # what "Import config" leaves for the next run
        at.run()
        assert not at.exception and chosen.requests == []
