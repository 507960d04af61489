"""Issue #17 in AppTest: read-only demo mode on every page; sign-in (proxy header, OIDC) and per-user scopes."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from demostore import copy_demo
from apphelpers import open_page, page_texts

import ui.access
from retrieval.models import HashingEmbedder
from retrieval.workspace.core import Workspace

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 90
PAGES = ["app.py", "pages/1_Corpus.py", "pages/2_Inspect.py", "pages/3_Compare.py", "pages/4_Tune.py",
         "pages/5_Facts.py"]
WRITE_LABEL = re.compile(r"(?i)delete|ingest|load the demo|upload|deactivate|activate|re-?embed|edit fact")
WRITE_KEYS = {"c_demo", "c_ingest", "c_file", "c_delete", "c_confirm"}
POLICY = """
[users."maya@example.com"]
scopes = ["user:maya"]

[users."writer@example.com"]
scopes = ["user:tomas"]
write = true
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("access")
    copy_demo(str(root / "base"))
    return root


def fresh_db(built, name: str) -> str:
    """A copy per test: the app caches one Workspace per store URI for the whole process."""
    dst = built / name
    if not dst.exists():
        shutil.copytree(built / "base", dst)
    return str(dst)


@pytest.fixture
def env(monkeypatch):
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_AUTH_HEADER",
              "RETRIEVAL_ALLOW_GRADING", "RETRIEVAL_ALLOW_UNVERIFIED_EMAIL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    return monkeypatch


def run(path: str = "app.py", user: dict | None = None, **params) -> AppTest:
    return open_page(path, TIMEOUT, user=user, **params)


def texts(at) -> str:
    return page_texts(at, headings=True)


def write_controls(at) -> list[str]:
    found = [f"button {b.label!r}" for b in at.button if WRITE_LABEL.search(b.label or "") or b.key in WRITE_KEYS]
    found += [f"uploader {u.key}" for u in at.file_uploader if u.key in WRITE_KEYS]
    found += [f"checkbox {c.label!r}" for c in at.checkbox if WRITE_LABEL.search(c.label or "")]
    return found


def test_the_write_control_detector_sees_them_outside_demo_mode(env, built):
    env.setenv("RETRIEVAL_DB", fresh_db(built, "normal"))
    at = run("pages/1_Corpus.py")
    assert not at.exception
    assert {"button 'Load the demo corpus'", "uploader c_file"} <= set(write_controls(at))
    assert "read-only" not in texts(at).lower()


@pytest.mark.parametrize("path", PAGES)
def test_demo_mode_renders_no_write_control_on_any_page(env, built, path):
    env.setenv("RETRIEVAL_DB", fresh_db(built, "demo"))
    env.setenv("RETRIEVAL_MODE", "demo")
    params = {"i_q": "where do I live now?", "i_scope": "user:maya"} if "Inspect" in path else {}
    at = run(path, **params)
    assert not at.exception, at.exception
    assert write_controls(at) == []
    assert any("Read-only demo" in c.value for c in at.sidebar.caption)
    if path == "app.py":
        assert any("read-only" in i.value for i in at.info)
        assert {m.label: m.value for m in at.metric}["Traces"] == "294"  # reading works as usual
    if "Corpus" in path:
        assert "Read-only: this app runs in demo mode" in texts(at)
        table = [d.value for d in at.dataframe if "content" in d.value.columns]
        assert table and len(table[0]) > 0  # browsing works
    if "Inspect" in path:
        assert "Why is it here?" in texts(at)  # the query ran and explains


def test_demo_mode_from_the_secrets_config_key_also_refuses_writes(env, built):
    env.setenv("RETRIEVAL_DB", fresh_db(built, "demo-secrets"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.secrets["access"] = {"mode": "demo"}
    at.switch_page("pages/1_Corpus.py")
    at.run()
    assert not at.exception and write_controls(at) == []
    from ui.cache import get_workspace

    ws = get_workspace(fresh_db(built, "demo-secrets"), "hashing")
    assert ws.demo_mode  # the guard told the shared Workspace: its write paths refuse too
    with pytest.raises(PermissionError):
        ws.delete(["maya-intro"])


@pytest.fixture
def proxy(env, built, tmp_path):
    policy = tmp_path / "access.toml"
    policy.write_text(POLICY)
    env.setenv("RETRIEVAL_DB", fresh_db(built, "proxy"))
    env.setenv("RETRIEVAL_AUTH", "proxy")
    env.setenv("RETRIEVAL_POLICY", str(policy))

    def as_user(email: str | None):
        env.setattr(ui.access, "request_headers", lambda: {"X-Forwarded-Email": email} if email else {})

    return as_user, policy


@pytest.mark.parametrize("path", PAGES)
def test_without_the_identity_header_every_page_shows_only_the_sign_in(proxy, path):
    as_user, _ = proxy
    as_user(None)
    at = run(path, i_q="lens")
    assert not at.exception
    assert [t.value for t in at.title] == ["Sign in"]
    assert "X-Forwarded-Email" in texts(at)
    assert not at.metric and not at.dataframe and not at.selectbox and not at.text_input


def test_unknown_user_and_malformed_policy_get_a_clear_message_and_nothing(proxy):
    as_user, policy = proxy
    as_user("mallory@example.com")
    at = run("pages/2_Inspect.py", i_q="lens")
    assert "No access: mallory@example.com is not in the access policy" in texts(at)
    assert not at.dataframe and not at.selectbox
    policy.write_text('[users."maya@example.com"]\nscopes = "user:maya"\n')
    as_user("maya@example.com")
    at = run("app.py")
    assert "No access: the access configuration is unusable" in texts(at) and "scopes must be a list" in texts(at)
    assert not at.metric


def test_a_limited_user_cannot_reach_another_scope_by_url_or_typed_id(proxy):
    as_user, _ = proxy
    as_user("maya@example.com")
    at = run("pages/2_Inspect.py", i_q="lens repair", i_scope="user:priya")
    assert not at.exception
    picker = at.selectbox(key="i_scope")
    assert picker.options == ["user:maya"] and picker.value == "user:maya"  # no other scope, no "all scopes"
    assert any("Signed in as **maya@example.com**" in c.value for c in at.sidebar.caption)
    at.text_input(key="i_typed").input("priya-lens-repair").run()
    assert "not visible from this query" in texts(at)
    assert "Priya" not in texts(at) and "lens" not in " ".join(str(d.value) for d in at.dataframe).lower()
    assert "priya" not in " ".join(h.value for h in at.get("html")).lower()  # nor in the stage table


@pytest.mark.parametrize("path, key", [("pages/5_Facts.py", "f_scope"), ("pages/1_Corpus.py", "c_bscope")])
def test_facts_and_browse_offer_only_the_users_scopes(proxy, path, key):
    as_user, _ = proxy
    as_user("maya@example.com")
    at = run(path)
    assert not at.exception
    assert at.selectbox(key=key).options == ["user:maya"]
    if "Corpus" in path:
        assert write_controls(at) == [] and "maya@example.com may browse but not change" in texts(at)
        ids = [d.value for d in at.dataframe if "content" in d.value.columns][0]["id"]
        assert len(ids) and all(i.startswith("maya-") for i in ids)


def test_a_writer_sees_write_controls_and_only_their_scopes_audit(proxy, built):
    as_user, _ = proxy
    from ui.cache import get_workspace

    ws = get_workspace(fresh_db(built, "proxy"), "hashing")
    ws.delete(["tomas-intro"], actor="writer@example.com")
    ws.delete(["maya-intro"], actor="root")
    as_user("writer@example.com")
    at = run("pages/1_Corpus.py")
    assert not at.exception
    assert "button 'Load the demo corpus'" in write_controls(at)
    audit = [d.value for d in at.dataframe if "who" in d.value.columns][0]
    # their own delete, then their part of the demo build's writes (ingest, grades, case, snapshots), never root's
    # delete of maya's note, nor another scope's count, scope or id
    assert list(audit["who"])[0] == "writer@example.com" and "root" not in list(audit["who"])
    assert list(audit["what"]) == ["delete", "snapshot", "snapshot", "case", "grade", "ingest"]
    assert set(audit["scopes"]) == {"user:tomas"} and not re.search(r"maya|priya", audit.to_csv())
    ids = [i.strip(" …") for row in audit["ids"] if row != "—" for i in row.split(", ")]
    assert ids and all(i.startswith("tomas-") for i in ids)


def test_oidc_sign_in_and_a_signed_in_user(env, built, tmp_path):
    policy = tmp_path / "access.toml"
    policy.write_text(POLICY)
    env.setenv("RETRIEVAL_DB", fresh_db(built, "oidc"))
    env.setenv("RETRIEVAL_AUTH", "oidc")
    env.setenv("RETRIEVAL_POLICY", str(policy))
    at = run("app.py", user={"is_logged_in": False})
    assert [t.value for t in at.title] == ["Sign in"] and not at.metric
    at = run("pages/5_Facts.py", user={"is_logged_in": True, "email": "maya@example.com", "email_verified": True})
    assert not at.exception and at.selectbox(key="f_scope").options == ["user:maya"]


def test_oidc_refuses_an_unverified_email_unless_the_operator_allows_it(env, built, tmp_path):
    policy = tmp_path / "access.toml"
    policy.write_text(POLICY)
    env.setenv("RETRIEVAL_DB", fresh_db(built, "oidc"))
    env.setenv("RETRIEVAL_AUTH", "oidc")
    env.setenv("RETRIEVAL_POLICY", str(policy))
    for claims in ({}, {"email_verified": False}):
        at = run("pages/5_Facts.py", user={"is_logged_in": True, "email": "maya@example.com", **claims})
        assert not at.exception
        assert "No access: the identity provider has not verified" in texts(at)
        assert not at.selectbox and not at.dataframe and not at.metric
        assert any(b.label == "Sign out" for b in at.button)
    env.setenv("RETRIEVAL_ALLOW_UNVERIFIED_EMAIL", "true")
    at = run("pages/5_Facts.py", user={"is_logged_in": True, "email": "maya@example.com"})
    assert not at.exception and at.selectbox(key="f_scope").options == ["user:maya"]


# --- the proxy's identity header: exactly one header, one ASCII address ----------------------------------

def test_header_user_takes_exactly_one_header():
    from streamlit.runtime.context import StreamlitHeaders

    one = StreamlitHeaders([("x-forwarded-email", " maya@example.com ")])
    assert ui.access.header_user(one, "X-Forwarded-Email") == "maya@example.com"
    assert ui.access.header_user(StreamlitHeaders([]), "X-Forwarded-Email") is None
    assert ui.access.header_user({"X-Forwarded-Email": ""}, "X-Forwarded-Email") is None
    two = StreamlitHeaders([("X-Forwarded-Email", "eve@example.com"), ("X-Forwarded-Email", "maya@example.com")])
    assert two["X-Forwarded-Email"] == "eve@example.com"  # what a plain lookup sees: the first one
    with pytest.raises(ui.access.AccessDenied, match="2 times"):
        ui.access.header_user(two, "X-Forwarded-Email")
    with pytest.raises(ui.access.AccessDenied, match="2 times"):  # a plain mapping with two spellings of the name
        ui.access.header_user({"X-Forwarded-Email": "a@example.com", "x-forwarded-email": "b@example.com"},
                              "X-Forwarded-Email")


@pytest.mark.parametrize("headers", [
    [("X-Forwarded-Email", "\u212Aate@example.com")],                       # Kelvin sign: lower() gives "kate"
    [("X-Forwarded-Email", "eve@evil.com,maya@example.com")],               # a list
    [("X-Forwarded-Email", "maya@example.com"), ("X-Forwarded-Email", "eve@evil.com")],  # sent twice
    [("X-Forwarded-Email", "[x](http://evil) <b>eve</b> @example.com")],   # markup in the refusal
])
def test_an_untrustworthy_identity_header_gets_no_access(env, proxy, headers):
    from streamlit.runtime.context import StreamlitHeaders

    as_user, policy = proxy
    policy.write_text(POLICY + '\n[users."kate@example.com"]\nscopes = ["*"]\nwrite = true\n'
                      '\n[groups.team]\nscopes = ["user:maya"]\nmembers = ["@example.com"]\n')
    env.setattr(ui.access, "request_headers", lambda: StreamlitHeaders(headers))
    at = run("pages/2_Inspect.py", i_q="lens", i_scope="user:maya")
    assert not at.exception
    page = texts(at)
    assert "No access:" in page and "kate@example.com" not in page
    assert not at.dataframe and not at.selectbox and not at.metric
    assert "](http" not in page and "<b>" not in page  # the refusal quotes the value escaped, never as Markdown


def test_home_and_tune_show_a_limited_user_only_their_scopes(proxy):
    import os

    from retrieval.types import Scope

    as_user, _ = proxy
    as_user("maya@example.com")
    db = os.environ["RETRIEVAL_DB"]
    home = run("app.py")
    assert not home.exception
    assert "user:priya" not in texts(home) and "user:maya" in texts(home)
    maya = Workspace(db, embedder=HashingEmbedder(384)).store.count(Scope("user", "maya"))
    assert int(home.metric[0].value) == maya < 294  # the user's traces, not the whole store's
    tune = run("pages/4_Tune.py")  # the shared `demo` case spans other scopes: not offered
    assert not tune.exception
    assert not [s for s in tune.selectbox if s.key == "t_case"]
    assert "Only cases whose queries all lie in your scopes are listed." in texts(tune)
    assert "No case of yours yet" in texts(tune) and "demo" not in texts(tune)
