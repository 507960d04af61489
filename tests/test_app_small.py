"""Small visible defects: icons Debian's Chromium can draw, a demo banner that names only what the app offers."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from tests.apphelpers import demo_app_env, open_page

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120
APP_FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]
# Debian's Chromium ships no colour-emoji font: a pictograph past U+1F000 (🔎 📚 🧩 …) is drawn as a box (⊠), in a
# page icon (the favicon is an SVG of that character) as in a label. Material icons (`:material/…:`) ship with
# Streamlit; symbols in the basic plane (✂ ★ ▲ ⚖) are in DejaVu Sans.
NO_GLYPH = re.compile("[\U0001F000-\U0001FAFF]")


def test_no_page_or_label_uses_an_emoji_the_browser_cannot_draw():
    found = []
    for path in APP_FILES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{n} {unicodedata.name(ch, hex(ord(ch)))}"
                      for ch in NO_GLYPH.findall(line)]
    assert found == [], "use a :material/…: icon instead: " + "; ".join(found)


def test_the_emoji_check_sees_a_magnifier():
    assert NO_GLYPH.search('page_icon="🔎"') and not NO_GLYPH.search('label="✂ split ★ ▲"')


@pytest.fixture
def demo_mode(tmp_path_factory, monkeypatch):
    env = demo_app_env(tmp_path_factory, "small-demo")  # built before demo mode refuses writes
    db = next(env)
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    yield db
    next(env, None)


# What the app can do to a store, and the words a banner would use for each: a banner may say one is "off" only
# if some page offers it (outside demo mode).
ACTIONS = {"deactivat": ("deactivate",), "re-embed": ("re-embed", "reembed"), "fact edit": ("edit fact",
                                                                                             "fact edit")}


def test_the_demo_banner_names_only_features_the_app_has(demo_mode):
    at = open_page(None, TIMEOUT)
    assert not at.exception
    banner = " ".join(i.value for i in at.info if "read-only" in i.value).lower()
    assert "demo mode" in banner and "uploading" in banner and "deleting" in banner
    pages = " ".join(p.read_text(encoding="utf-8").lower() for p in [ROOT / "app.py", *(ROOT / "pages").glob("*.py")])
    for word, labels in ACTIONS.items():
        if word in banner:
            assert any(label in pages for label in labels), f"the banner says {word!r} is off; no page offers it"


def test_a_rerun_carrying_an_address_the_page_wrote_a_moment_ago_does_not_undo_a_slider(demo_mode):
    """Quick arrow presses: a rerun can arrive with the address of two presses ago (the browser had not taken the
    newer one yet). That address is this session's own, not a link: the slider keeps its newest value."""
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q="invoice INV-20931", i_scope="user:maya")
    assert not at.exception, at.exception
    start = at.slider(key="i_dense_weight").value
    older = dict(at.query_params)
    for value in (round(start - 0.05, 2), round(start - 0.10, 2)):
        at.slider(key="i_dense_weight").set_value(value).run()
        assert not at.exception, at.exception
    newest = at.slider(key="i_dense_weight").value
    assert newest == round(start - 0.10, 2)
    for k, v in older.items():  # the stale address comes back with the next rerun
        at.query_params[k] = v
    at.run()
    assert at.slider(key="i_dense_weight").value == newest
