"""A configured key goes only to the origin the operator configured; tokens in URLs never show.

Origins are compared parsed (scheme, host, port), never as string prefixes, and the request is built
from the parsed parts, so the host that was checked is the host that is contacted.
"""
from __future__ import annotations

import base64
import contextlib
import logging
import os
import urllib.request
from unittest import mock
from urllib.parse import quote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.models import (BackendError, CohereReranker, OpenAICompatibleGenerator, OpenAIEmbedder,
                              operator_credential, parse_base_url, same_origin, scrub_url)
from retrieval.models.credentials import COHERE, OPENAI
from retrieval.models.registry import make_generator

from fake_llm_server import FakeServer

KEY = "sk-operator-SECRET-0123456789"
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COHERE_API_KEY", "CO_API_KEY", "COHERE_BASE_URL", "CO_API_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def servers():
    with FakeServer() as a, FakeServer() as b:
        yield a, b


@pytest.fixture(autouse=True)
def reset(servers):
    for s in servers:
        s.mode, s.redirect_to = "ok", ""
        s.requests.clear()


# --- origins --------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, origin", [
    ("http://127.0.0.1:11434", ("http", "127.0.0.1", 11434)),
    ("HTTP://LocalHost:11434/v1/", ("http", "localhost", 11434)),
    ("https://api.openai.com/v1", ("https", "api.openai.com", 443)),
    ("https://api.openai.com:443", ("https", "api.openai.com", 443)),
    ("http://example.com.", ("http", "example.com", 80)),
    ("http://[::1]:8080/x", ("http", "::1", 8080)),
    ("http://user:pw@evil.test:81/", ("http", "evil.test", 81)),
    ("http://127.0.0.1:11434@evil.test/", ("http", "evil.test", 80)),  # userinfo, not a host
])
def test_origin_is_scheme_host_port(url, origin):
    assert parse_base_url(url).origin == origin


@pytest.mark.parametrize("url", ["ftp://h/", "file:///etc/passwd", "127.0.0.1:11434", "http://", "http:///x",
                                 "http://h:99999/", "http://h:0/", "http://h:port/", "http://evil\\@good/",
                                 "http://a b/", "http://h\n.evil/", "", "   ", "http://ex%41mple.com/"])
def test_bad_base_urls_are_value_errors(url):
    with pytest.raises(ValueError, match="base URL"):
        parse_base_url(url)


@pytest.mark.parametrize("other, same", [
    ("http://127.0.0.1:8000", True), ("http://127.0.0.1:8000/v1", True), ("HTTP://127.0.0.1:8000/other/", True),
    ("http://127.0.0.1:8000@evil.test", False), ("http://127.0.0.1:80001", False),
    ("http://127.0.0.1:8000.evil.test", False), ("http://127.0.0.1.evil.test:8000", False),
    ("https://127.0.0.1:8000", False), ("http://127.0.0.1:8001", False), ("http://localhost:8000", False),
    ("http://127.0.0.1", False), ("not a url", False),
])
def test_same_origin_never_matches_a_prefix(other, same):
    assert same_origin("http://127.0.0.1:8000/v1", other) is same


HOSTS = st.from_regex(r"[a-z][a-z0-9\-]{0,10}(\.[a-z][a-z0-9]{0,6}){0,2}", fullmatch=True)
TOKENS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEF0123456789-_.~!$'()*+,;=:@/?#[] %", min_size=6,
                 max_size=24).filter(lambda t: t.strip() == t and len(set(t)) > 3)


@settings(max_examples=300, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP"]), host=HOSTS,
       port=st.one_of(st.none(), st.integers(1, 65535)), path=st.from_regex(r"(/[a-z0-9]{1,5}){0,3}/?", fullmatch=True),
       user=st.one_of(st.none(), TOKENS), query=st.one_of(st.none(), TOKENS))
def test_checked_origin_is_the_requested_origin_and_tokens_never_show(scheme, host, port, path, user, query):
    userinfo = f"{quote(user, safe='')}:{quote(user[::-1], safe='')}@" if user else ""
    q = f"?api_key={quote(query, safe='')}" if query else ""
    url = f"{scheme}://{userinfo}{host}{f':{port}' if port else ''}{path}{q}"
    base = parse_base_url(url)
    default = 443 if scheme.lower() == "https" else 80
    assert base.origin == (scheme.lower(), host, port or default)
    requested = base.request_url("/v1/embeddings")
    parts = urlsplit(requested)
    # What urllib will connect to is exactly what was compared; no userinfo is left to reinterpret.
    assert (parts.scheme, parts.hostname, parts.port or default) == base.origin
    assert "@" not in parts.netloc and urllib.request.Request(requested).host == parts.netloc
    shown = [base.display, repr(base), str(base), scrub_url(url)]
    for secret in filter(None, [user, query]):
        for s in (secret, quote(secret, safe="")):
            if len(s) >= 4:
                assert all(s not in text for text in shown), (s, shown)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_parses_or_is_a_value_error(text):
    try:
        base = parse_base_url(text)
    except ValueError:
        return
    assert base.scheme in ("http", "https") and base.host and 1 <= base.port <= 65535


# --- which key goes where -------------------------------------------------------------------------

def test_operator_credential_binds_the_key_to_the_configured_origin(monkeypatch):
    assert operator_credential(OPENAI) is None
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cred = operator_credential(OPENAI)
    assert cred.base.origin == ("https", "api.openai.com", 443) and cred.source == "env OPENAI_API_KEY"
    assert cred.key_for("https://api.openai.com/v1") == KEY and cred.key_for("http://api.openai.com/v1") is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert operator_credential(OPENAI).key_for("http://127.0.0.1:11434") == KEY
    assert operator_credential(OPENAI).key_for("https://api.openai.com/v1") is None
    secrets = {"OPENAI_API_KEY": "sk-from-secrets-999", "OPENAI_BASE_URL": "http://10.0.0.5:8000"}
    from_secrets = operator_credential(OPENAI, secrets)
    assert (from_secrets.key, from_secrets.base.origin, from_secrets.source) == (
        "sk-from-secrets-999", ("http", "10.0.0.5", 8000), "secrets OPENAI_API_KEY")
    assert KEY not in repr(cred) and "sk-from-secrets" not in repr(from_secrets)
    assert operator_credential(COHERE, {"COHERE_API_KEY": "co-123456"}).base.origin == ("https", "api.cohere.com", 443)
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://nope")
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        operator_credential(OPENAI)


def test_generator_sends_the_key_only_to_the_configured_origin(servers, monkeypatch):
    a, b = servers
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", a.url + "/v1")
    assert make_generator(f"openai:{a.url}#m").generate("s", "p") == a.chat_text
    gen_b = make_generator(f"openai:{b.url}/v1#m")
    assert gen_b.generate("s", "p") == b.chat_text  # a keyless server still answers
    assert (a.auths, b.auths) == ([f"Bearer {KEY}"], [None])
    assert not gen_b.sends_key and b.requests[0]["path"] == "/v1/chat/completions"


def test_secrets_rebind_the_key(servers, monkeypatch):
    a, b = servers
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", a.url)
    secrets = {"OPENAI_API_KEY": "sk-secrets-abcdef", "OPENAI_BASE_URL": b.url}
    make_generator(f"openai:{a.url}#m", secrets=secrets).generate("s", "p")
    make_generator(f"openai:{b.url}#m", secrets=secrets).generate("s", "p")
    assert (a.auths, b.auths) == ([None], ["Bearer sk-secrets-abcdef"])


def test_a_redirect_from_the_configured_server_carries_no_key(servers, monkeypatch):
    a, b = servers
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", a.url)
    a.mode, a.redirect_to = "redirect", b.url
    with pytest.raises(BackendError, match="HTTP 302"):
        OpenAICompatibleGenerator(a.url, "m").generate("s", "p")
    assert a.auths == [f"Bearer {KEY}"] and b.requests == []


def test_keyless_401_says_why_no_key_was_sent(servers, monkeypatch):
    a, b = servers
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", a.url)
    b.mode = "401"
    with pytest.raises(BackendError) as info:
        OpenAICompatibleGenerator(b.url, "m").generate("s", "p")
    msg = str(info.value)
    assert f"only sent to {a.url}" in msg and f"set OPENAI_BASE_URL to {b.url}" in msg and KEY not in msg


def test_cohere_env_key_goes_only_to_cohere_base_url(servers, monkeypatch):
    a, b = servers
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    monkeypatch.setenv("CO_API_KEY", KEY)  # the cohere package's own fallback must not fire either
    monkeypatch.setenv("COHERE_BASE_URL", a.url)
    CohereReranker().score("q", ["a"])
    CohereReranker(base_url=b.url).score("q", ["a"])
    assert a.auths == [f"Bearer {KEY}"] and KEY not in str(b.auths) and len(b.requests) == 1
    with pytest.raises(ValueError, match="carries credentials"):
        CohereReranker(base_url=f"http://u:{KEY}@127.0.0.1:1")


def test_tokens_in_a_base_url_are_scrubbed_but_still_reach_that_host(servers, caplog):
    a, _ = servers
    caplog.set_level(logging.DEBUG)
    host = a.url.removeprefix("http://")
    url = f"http://alice:pw-TOKEN-7788@{host}/v1?api_key=QUERY-TOKEN-5566"
    emb = OpenAIEmbedder(url, "m")
    gen = OpenAICompatibleGenerator(url, "m")
    assert emb.name == f"openai:{a.url}?api_key=***#m"
    assert emb.embed(["x"]).shape == (1, 8)
    assert a.requests[-1]["path"] == "/v1/embeddings?api_key=QUERY-TOKEN-5566"
    assert a.requests[-1]["auth"].startswith("Basic ")  # the URL's own userinfo, to the URL's own host
    a.mode = "500"
    with pytest.raises(BackendError) as info:
        gen.generate("s", "p")
    dead = OpenAICompatibleGenerator("http://bob:pw-TOKEN-7788@127.0.0.1:9/?token=QUERY-TOKEN-5566", "m", timeout=0.5)
    with pytest.raises(BackendError) as refused:
        dead.generate("s", "p")
    shown = [emb.name, repr(emb), emb.backend, gen.name, repr(gen), str(info.value), str(refused.value),
             dead.name, repr(dead), caplog.text]
    for secret in ("pw-TOKEN-7788", "QUERY-TOKEN-5566"):
        assert all(secret not in s for s in shown)


def url_variants(url: str, decoy: str):
    """Spellings of `url` an attacker or a careless user might produce, some dressed up as `decoy`."""
    scheme, rest = url.split("://", 1)
    host, port = rest.rsplit(":", 1)
    d_host = decoy.split("://", 1)[1]
    hosts = st.sampled_from([host, host.upper() if host.isalpha() else host])
    return st.builds(
        lambda sc, h, user, path, q: f"{sc}://{user}{h}:{port}{path}{q}",
        st.sampled_from([scheme, scheme.upper()]), hosts,
        st.sampled_from(["", f"{d_host}@", "x:y@", f"{d_host.replace(':', '%3A')}@"]),
        st.sampled_from(["", "/", "/v1", "/v1/", f"/{d_host}", "/x/../v1"]),
        st.sampled_from(["", f"?next={decoy}", f"?base={d_host}"]))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_key_reaches_only_the_configured_origin_whatever_the_spelling(servers, data):
    a, b = servers
    for target, decoy in ((a, b), (b, a)):
        url = data.draw(url_variants(target.url, decoy.url))
        target.requests.clear()
        with mock.patch.dict(os.environ, {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": a.url}):
            gen = OpenAICompatibleGenerator(url, "m", timeout=2)
        # a path the fake does not serve is fine; only where the key went matters
        with contextlib.suppress(BackendError):
            gen.generate("s", "p")
        assert len(target.requests) == 1, url
        auth = target.requests[0]["auth"]
        if target is a:
            assert auth == f"Bearer {KEY}", url
        else:  # nothing, or the URL's own userinfo as Basic: never the operator's key
            assert auth is None or (auth.startswith("Basic ") and KEY not in base64.b64decode(auth[6:]).decode()), url
