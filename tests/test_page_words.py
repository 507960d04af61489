"""The words every page shows, generated from the page list on disk (`app.py` and `pages/*.py`), so a new page is
covered with no edit:

- one word for a result nobody has graded: "ungraded" (the app's verb is "grade"), never "unrated" or
  "unjudged" (the metric `judged@10` keeps the name SPEC gives it);
- every glossary term a page shows (`ui/glossary.py`: RBO, err@10, PAD…) has its glossary explanation reachable
  on that page: in a `help=` tooltip (a widget's, a metric's or a grid column's) or a caption.

Each page is opened, as the local operator, on the non-interference store (tests/nonint.py: notes, a case with
grades and two snapshots) with its own query and scope parameters (`<prefix>q`, `<prefix>scope`), then again with
every toggle in its body switched on — so the tables, metrics and panels that need a query or a case are drawn — and
then through the steps in `RESULT_VIEWS` (a mode chosen, a run button pressed) for the views a page draws only after a
run (Compare on a labelled set, Tune's Evaluate, a Snapshots run).

Beyond reachable somewhere on the page: a metric or a grid column whose own label names a term carries that term's
explanation in its own tooltip (a reader hovers the number they look at), and a metric label writes the term as the
glossary does (`nDCG@10 (B)` on both of Compare's views, never `ndcg@10 (B)` on one and `nDCG@10 B` on the other).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from google.protobuf import text_format
from streamlit.testing.v1 import AppTest

from apphelpers import ROOT
from nonint import CASE, NOW, QUERY, build
from retrieval.replay.store import QueryLog
from ui.glossary import GLOSSARY, terms_in

TIMEOUT = 180
PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
OTHER_WORDS = re.compile(r"\b(unrated|unjudged)\b", re.IGNORECASE)
_ID = re.compile(r'\bid: "[^"]*"\n?')
# Views a page draws only after input or a run, each checked once drawn: its steps, (widget kind, key, value to set or
# None to click), in order.
RESULT_VIEWS: dict[str, list[list[tuple[str, str, str | None]]]] = {
    "pages/3_Compare.py": [[("text_input", "cmp_q", QUERY), ("selectbox", "cmp_scope", "user:maya")],
                           [("radio", "cmp_mode", "a labelled set"), ("button", "cmp_run", None)]],
    "pages/4_Tune.py": [[("selectbox", "t_case", CASE), ("button", "t_run", None)]],  # Evaluate: per stage, per query
    # A snapshot run: its message, then the diff of the new run against the one before (the diff of the fixture's two
    # snapshots is drawn already on opening).
    "pages/6_Snapshots.py": [[("selectbox", "s_case", CASE), ("text_input", "s_label", "words"),
                              ("button", "s_run", None)]],
}
# What each result view draws that the page does not draw before its steps: the check that the steps were run.
RESULT_SHOWN = {"pages/3_Compare.py": "Click a query to open it in Inspect with B",
                "pages/4_Tune.py": "Per stage (the evaluated configuration)",
                "pages/6_Snapshots.py": "judged queries in"}

# One logged query of the visitor's scope: the Log page replays it (its numbers, drift among them).
LOG_LINES = [{"timestamp": NOW.isoformat(), "query": QUERY, "scope": "user:maya",
              "results": [{"id": "maya-washer-error", "score": 0.91}], "feedback": "up"}]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("words") / "db")
    build(db, "store", only_visitor=False)
    QueryLog(db).import_lines([json.dumps(line) for line in LOG_LINES])  # so the Log page draws its replayed rows
    return db


def page_params(path: str) -> dict[str, str]:
    m = re.search(r'^P = "([a-z]+_)"', (ROOT / path).read_text(), re.M)
    return {f"{m.group(1)}q": QUERY, f"{m.group(1)}scope": "user:maya", f"{m.group(1)}case": CASE} if m else {}


def own_tooltips(at) -> list[tuple[str, str, str]]:
    """(kind, label, its own tooltip) of every metric and every grid column."""
    out = []
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if node.type == "metric":
            out.append(("metric", proto.label, proto.help))
        elif node.type in ("arrow_data_frame", "dataframe"):
            config = json.loads(proto.columns or "{}")
            for name in map(str, node.value.columns):
                c = config.get(name)
                out.append(("column", name, str(c.get("help", "")) if isinstance(c, dict) else ""))
    return out


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
    TOOLTIPS[path] = own_tooltips(at)
    body = [t for t in at.main.toggle if not t.value]
    if body:
        for t in body:
            t.set_value(True)
        at.run()
        assert not at.exception, at.exception
        shots.append(shown_and_explained(at))
        TOOLTIPS[path] += own_tooltips(at)
    for steps in RESULT_VIEWS.get(path, []):
        for kind, key, value in steps:
            widget = getattr(at, kind)(key=key)
            (widget.click() if value is None else widget.set_value(value)).run()
            assert not at.exception, at.exception
        shots.append(shown_and_explained(at))
        TOOLTIPS[path] += own_tooltips(at)
    return shots


RENDERS: dict[str, list[tuple[list[str], list[str], list[str]]]] = {}
TOOLTIPS: dict[str, list[tuple[str, str, str]]] = {}  # every view of each page: own_tooltips


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


def as_the_glossary_writes(term: str) -> re.Pattern[str]:
    """The term in the glossary's own case (any k for an @10 measure)."""
    return re.compile(rf"(?<![\w@]){re.escape(term).replace('@10', r'@[0-9]+')}(?![\w@])")


@pytest.mark.parametrize("path", PAGES)
def test_a_metric_or_column_naming_a_term_explains_it_in_its_own_tooltip(rendered, path):
    rendered(path)
    shown = TOOLTIPS[path]
    bare = sorted({(kind, label) for kind, label, tip in shown for t in terms_in(label) if GLOSSARY[t] not in tip})
    assert not bare, f"{path}: {bare} name a glossary term with no tooltip of their own (ui/glossary.py helps, " \
                     "column_help)"
    spelled = sorted({label for kind, label, _ in shown if kind == "metric" for t in terms_in(label)
                      if not as_the_glossary_writes(t).search(label)})
    assert not spelled, f"{path}: metric labels {spelled} write a glossary term otherwise than the glossary does"


def test_compare_result_views_are_checked():
    """Both of Compare's result views are drawn by the words tests: one query (metrics, both lists) and a labelled set
    (metrics, per-query grid)."""
    labels = {label for _, label, _ in TOOLTIPS.get("pages/3_Compare.py", [])}
    if not labels:
        pytest.skip("Compare was not rendered in this run (run the whole file)")
    assert {"Overlap", "Jaccard", "nDCG@10 (B)", "recall@10 (B)", "MRR (B)", "nDCG@10 (A)", "Δ rank"} <= labels, labels


@pytest.mark.parametrize("path", sorted(RESULT_VIEWS))
def test_each_result_view_is_drawn_and_checked(path):
    """The steps in `RESULT_VIEWS` drew the view they are for (an Evaluate that errored, or a button renamed, would
    leave the page as it was and the words tests would check nothing new)."""
    if path not in RENDERS:
        pytest.skip(f"{path} was not rendered in this run (run the whole file)")
    before, after = ("\n".join(view) for view in (RENDERS[path][0][0], RENDERS[path][-1][0]))
    assert RESULT_SHOWN[path] not in before and RESULT_SHOWN[path] in after, f"{path}: its result view was not drawn"


def test_the_log_pages_replayed_rows_are_checked():
    """The Log page is drawn with a logged query replayed: its rows (overlap, RBO, drift) are among what is checked."""
    if "pages/8_Log.py" not in RENDERS:
        pytest.skip("Log was not rendered in this run (run the whole file)")
    shown = "\n".join(e for view, _, _ in RENDERS["pages/8_Log.py"] for e in view)
    assert re.search(r"drift \d", shown), "the Log page drew no replayed row"
    assert "drift" in terms_in(shown), "the Log page says 'drift' (1 − RBO): a glossary term, explained where shown"


def test_the_page_list_is_found_on_disk():
    assert len(PAGES) == 1 + len(list((ROOT / "pages").glob("*.py"))) >= 10
    assert Path(ROOT / "pages" / "7_Judge.py").is_file() and "pages/7_Judge.py" in PAGES


def test_the_glossary_matches_what_pages_write():
    assert terms_in("A ndcg@10 · B ndcg@5 · mrr · err@10 · RBO · Mood (PAD)") == ["RBO", "err@10", "nDCG@10", "MRR",
                                                                                   "PAD"]
    assert terms_in("padding · Ann · judged · fusion=rrf · bm25_k1") == []  # rrf: the setting's value, not the word
    assert terms_in("Sparse (BM25) · RRF k · DBSF (mean ± 3σ) · BEIR qrels · ANN (IVF-PQ)") == [
        "ANN", "BM25", "RRF", "DBSF", "qrels", "BEIR", "IVF"]



# The field's abbreviations a newcomer meets besides the measures: each one a page shows must be a glossary term (and
# then the checks above want its explanation on that page).
FIELD_WORDS = ("BM25", "RRF", "DBSF", "BEIR", "TREC", "qrels", "IVF", "ANN")


def test_the_fields_abbreviations_a_page_shows_are_glossary_terms():
    if set(RENDERS) != set(PAGES):
        pytest.skip("not every page was rendered in this run (run the whole file)")
    shown = "\n".join(e for shots in RENDERS.values() for view, _, _ in shots for e in view)
    on_pages = [w for w in FIELD_WORDS if re.search(rf"(?<![\w@]){w}(?![\w@])", shown)]
    assert {"BM25", "RRF", "qrels"} <= set(on_pages), on_pages  # the pages were drawn with their words
    missing = [w for w in on_pages if w not in GLOSSARY]
    assert not missing, f"pages show {missing}, which ui/glossary.py does not explain"

