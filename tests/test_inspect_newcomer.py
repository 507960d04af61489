"""What a newcomer reads on Inspect: the Query box's example belongs to the scope selected (an example of another
scope finds nothing there), and one trace's explanation has one "Why is it here?" — the live panel's own explanation
is titled for what it is (the trace at the sliders' setting)."""
from __future__ import annotations

import pytest
from google.protobuf import text_format

from retrieval.ingest.demo import load_examples
from apphelpers import demo_app_env, open_page
from ui.view import NEUTRAL_PLACEHOLDER

TIMEOUT = 180
PAGE = "pages/2_Inspect.py"
EXAMPLES = load_examples()
SCOPES = sorted({ex["scope"] for ex in EXAMPLES})  # more than one, so a hint from the wrong scope can be seen


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "inspect-newcomer")


@pytest.mark.parametrize("scope", SCOPES)
def test_the_query_box_suggests_an_example_of_the_selected_scope(demo, scope):
    at = open_page(PAGE, TIMEOUT, i_scope=scope)
    assert not at.exception, at.exception
    assert at.selectbox(key="i_scope").value == scope
    hint = at.text_input(key="i_q").placeholder
    own = {f"e.g. {ex['query']}" for ex in EXAMPLES if ex["scope"] == scope}
    assert own and hint in own, f"scope {scope} selected, the Query box suggests {hint!r}"  # each has an example


def test_a_scope_with_no_example_gets_a_neutral_hint():
    from ui.view import query_placeholder

    assert query_placeholder("user:nobody", EXAMPLES) == NEUTRAL_PLACEHOLDER
    # All scopes: the example names its scope, where its Home card's claim holds (newcomer: the hint claimed nothing
    # about scope, and the card's "BM25's #1" was not so across all scopes).
    assert query_placeholder(None, EXAMPLES) == f"e.g. {EXAMPLES[0]['query']} — in {EXAMPLES[0]['scope']}"


def everything_written(at) -> str:
    """Every element's text, and the code of the components (the live panel writes its titles in its script)."""
    out = []
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        if node.type == "bidi_component":
            out += [proto.js_content, proto.html_content]
        else:
            out.append(text_format.MessageToString(proto, as_utf8=True))
    return "\n".join(out)


def test_one_trace_has_one_why_is_it_here(demo):
    ex = EXAMPLES[0]
    at = open_page(PAGE, TIMEOUT, **ex["params"])
    assert not at.exception, at.exception
    assert "Live tuning" in [s.value for s in at.subheader]  # the live panel, with its own explanation, is drawn
    written = everything_written(at)
    assert written.count("Why is it here?") == 1, "two blocks are titled 'Why is it here?' for one trace"
