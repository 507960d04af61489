"""The words every page shows, generated from the page list on disk (`app.py` and `pages/*.py`), so a new page is
covered with no edit:

- one word for a result nobody has graded: "ungraded" (the app's verb is "grade"), never "unrated" or
  "unjudged" (the metric `judged@10` keeps the name SPEC gives it);
- every glossary term a page shows (`ui/glossary.py`: RBO, err@10, PAD…) has its glossary explanation reachable
  on that page: in a `help=` tooltip (a widget's, a metric's or a grid column's) or a caption.

Each page is opened, as the local operator, on the non-interference store (tests/nonint.py: notes, a case with
grades and two snapshots) with its own query and scope parameters (`<prefix>q`, `<prefix>scope`), then again with
every toggle in its body switched on — so the tables, metrics and panels that need a query or a case are drawn.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf import text_format
from streamlit.testing.v1 import AppTest

from apphelpers import ROOT
from nonint import CASE, QUERY, build
from ui.glossary import GLOSSARY, terms_in

TIMEOUT = 180
PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
OTHER_WORDS = re.compile(r"\b(unrated|unjudged)\b", re.IGNORECASE)
_ID = re.compile(r'\bid: "[^"]*"\n?')


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("words") / "db")
    build(db, "store", only_visitor=False)
    return db


def page_params(path: str) -> dict[str, str]:
    m = re.search(r'^P = "([a-z]+_)"', (ROOT / path).read_text(), re.M)
    return {f"{m.group(1)}q": QUERY, f"{m.group(1)}scope": "user:maya", f"{m.group(1)}case": CASE} if m else {}


def shown_and_explained(at) -> tuple[list[str], list[str], list[str]]:
    """What the page shows, element by element (labels, bodies, options, table headers and cells, tooltips); the
    code of its components (the live panel's script, which writes words too); and what explains what it shows:
    every tooltip (`help`, a grid column's help) and every caption."""
    shown, code, explained = [], [], []
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        if node.type in ("arrow_data_frame", "dataframe"):
            shown.append(" ".join(map(str, node.value.columns)) + "\n" + node.value.to_csv())
            config = json.loads(proto.columns or "{}")
            explained += [str(c.get("help", "")) for c in config.values() if isinstance(c, dict)]
            continue
        if node.type == "bidi_component":
            code += [proto.js_content, proto.html_content, proto.css_content]
            shown.append(proto.json)
            continue
        shown.append(f"{node.type}: " + _ID.sub("", text_format.MessageToString(proto, as_utf8=True)))
        if getattr(proto, "help", ""):
            explained.append(proto.help)
        if node.type == "caption" or getattr(proto, "is_caption", False):
            explained.append(proto.body)
        if node.type == "metric":
            explained.append(proto.help)
    return shown, code, explained


def render(db: str, path: str, monkeypatch) -> list[tuple[list[str], list[str], list[str]]]:
    monkeypatch.setenv("RETRIEVAL_DB", db)
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if path != "app.py":
        at.switch_page(path)
    for k, v in page_params(path).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    shots = [shown_and_explained(at)]
    body = [t for t in at.main.toggle if not t.value]
    if body:
        for t in body:
            t.set_value(True)
        at.run()
        assert not at.exception, at.exception
        shots.append(shown_and_explained(at))
    return shots


RENDERS: dict[str, list[tuple[list[str], list[str], list[str]]]] = {}


@pytest.fixture
def rendered(store, monkeypatch):
    def get(path: str):
        if path not in RENDERS:
            RENDERS[path] = render(store, path, monkeypatch)
        return RENDERS[path]
    return get


@pytest.mark.parametrize("path", PAGES)
def test_a_result_nobody_graded_is_called_ungraded_on_every_page(rendered, path):
    bad = [(m.group(0), line.strip()[:160]) for shown, code, _ in rendered(path) for element in shown + code
           for line in element.splitlines() for m in [OTHER_WORDS.search(line)] if m]
    assert not bad, f"{path} says {bad[:5]} — the app's word is 'ungraded' (ui/grading.py UNGRADED)"


@pytest.mark.parametrize("path", PAGES)
def test_every_glossary_term_a_page_shows_is_explained_on_it(rendered, path):
    missing = {}
    for shown, _, explained in rendered(path):
        reach = "\n".join(explained)
        for element in shown:
            for term in terms_in(element):
                if GLOSSARY[term] not in reach:
                    missing.setdefault(term, element.strip()[:200])
    assert not missing, (f"{path} shows {sorted(missing)} with no explanation (a help= tooltip or caption from "
                         f"ui/glossary.py): {missing}")


def test_the_page_list_is_found_on_disk():
    assert len(PAGES) == 1 + len(list((ROOT / "pages").glob("*.py"))) >= 10
    assert Path(ROOT / "pages" / "7_Judge.py").is_file() and "pages/7_Judge.py" in PAGES


def test_the_glossary_matches_what_pages_write():
    assert terms_in("A ndcg@10 · B ndcg@5 · mrr · err@10 · RBO · Mood (PAD)") == ["RBO", "err@10", "nDCG@10", "MRR",
                                                                                   "PAD"]
    assert terms_in("padding · Ann · judged") == []
