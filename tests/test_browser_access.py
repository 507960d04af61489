"""Real browser, proxy-header sign-in: a user limited to one scope cannot reach another scope's
traces by URL parameters, by a typed id, or through an explanation. Playwright sets the identity header
an authenticating proxy (oauth2-proxy) would set; under CI=true the test may not skip (see `chromium`)."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from demostore import copy_demo
from ui.serve import start_app, stop_app
from waits import settled

HEADER = "X-Forwarded-Email"
POLICY = '[users."maya@example.com"]\nscopes = ["user:maya"]\n'
OTHER_ID = "priya-lens-repair"  # a trace of user:priya that the query below would find

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):

    root = tmp_path_factory.mktemp("browser-access")
    db = root / "db"
    copy_demo(str(db))
    (root / "access.toml").write_text(POLICY)
    proc, url = start_app(db, embedder="hashing", log=root / "streamlit.log",
                          env={"RETRIEVAL_AUTH": "proxy", "RETRIEVAL_POLICY": str(root / "access.toml"),
                               "RETRIEVAL_MODE": None})
    yield url
    stop_app(proc)


def as_user(browser, email: str | None):
    headers = {HEADER: email} if email else {}
    page = browser.new_context(extra_http_headers=headers, viewport={"width": 1600, "height": 2000}).new_page()
    page.set_default_timeout(120_000)  # a ceiling, not a wait: at load 18 a click took over Playwright's 30 s
    return page


def wait_text(page, text: str, timeout: int = 60_000):
    page.get_by_text(text).first.wait_for(timeout=timeout)


def scope_options(page, key: str) -> tuple[str, list[str]]:
    """The scope picker's value and every option it offers (opened like a user would)."""
    box = page.locator(f".st-key-{key} input[role=combobox]")
    box.wait_for(timeout=60_000)
    value = box.input_value()
    box.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    labels = [t.strip() for t in options.all_inner_texts()]
    page.keyboard.press("Escape")
    return value, labels


def test_limited_user_cannot_reach_another_scope(browser, app_url, artifacts):
    page = as_user(browser, "maya@example.com")
    params = {"i_q": "lens repair", "i_scope": "user:priya", "i_id": OTHER_ID}
    page.goto(f"{app_url}/Inspect?{urlencode(params)}")
    wait_text(page, "Signed in as")
    wait_text(page, "Why is it here?", timeout=90_000)
    # URL parameters: the scope asked for is not offered, the query ran in maya's scope only.
    assert scope_options(page, "i_scope") == ("user:maya", ["user:maya"])
    page.wait_for_function("() => location.search.includes('i_scope=user%3Amaya')", timeout=30_000)
    wait_text(page, "not visible from this query")  # the explained id from the URL
    settled(page)  # the whole run is drawn (the rank flow and the rest come after that sentence)
    body = page.inner_text("body")
    assert "Priya" not in body and "Fixation" not in body and "(all scopes)" not in body  # priya's words
    page.screenshot(path=str(artifacts / "access-limited-inspect.png"), full_page=True)

    # A typed id in the explain box.
    box = page.get_by_label("Trace id to explain")
    box.fill("priya-intro")
    box.press("Enter")
    wait_text(page, "'priya-intro' is not visible from this query")
    settled(page)
    assert "Priya" not in page.inner_text("body")

    # "All scopes" by URL is no way round either.
    page.goto(f"{app_url}/Inspect?{urlencode({'i_q': 'lens repair', 'i_scope': 'all'})}")
    wait_text(page, "Why is it here?", timeout=90_000)
    assert scope_options(page, "i_scope") == ("user:maya", ["user:maya"])

    # Facts and Corpus offer maya's scope only.
    for path, key in (("Facts", "f_scope"), ("Corpus", "c_bscope")):
        page.goto(f"{app_url}/{path}")
        wait_text(page, "Signed in as")
        assert scope_options(page, key) == ("user:maya", ["user:maya"]), path
        settled(page)  # the buttons, if the page drew them, come later in the run than the scope picker
        assert not page.locator("[data-testid=stButton] button", has_text=re.compile("Delete|Load the demo")).count()


def test_without_the_header_only_the_sign_in_and_unknown_users_get_nothing(browser, app_url):
    page = as_user(browser, None)
    page.goto(f"{app_url}/Inspect?{urlencode({'i_q': 'lens repair', 'i_scope': 'user:priya'})}")
    wait_text(page, HEADER)
    assert page.get_by_role("heading", name="Sign in").count() == 1
    assert page.locator("[data-testid=stSelectbox]").count() == 0 and "Why is it here?" not in page.inner_text("body")
    page = as_user(browser, "mallory@example.com")
    page.goto(app_url)
    wait_text(page, "No access: mallory@example.com is not in the access policy")
    assert page.locator("[data-testid=stMetric]").count() == 0
