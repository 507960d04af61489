"""Inspect with adaptive weights: the panel's toggle, the link that carries it, the reason in the explanation and
the rank flow, and switching it re-fuses (AppTest on the demo store, hashing embedder)."""
from __future__ import annotations

import pytest

from apphelpers import demo_app_env, open_page

TIMEOUT = 60
TICKET = "status of ticket FX-209847"


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "adaptive_app")


def inspect(**params):
    return open_page("pages/2_Inspect.py", TIMEOUT, **params)


def weights_lines(at) -> list[str]:
    return [i.value for i in at.info if "Adaptive weights" in i.value]


def test_the_toggle_is_off_by_default_and_switching_it_shows_the_reason(demo_env):
    at = inspect(i_q=TICKET, i_scope="user:priya")
    assert not at.exception
    toggle = at.toggle(key="i_adaptive")
    assert toggle.value is False and "per-query fusion weights" in toggle.help.lower()
    assert at.query_params["i_settings"].endswith(" adaptive=false") and not weights_lines(at)
    toggle.set_value(True).run()
    assert not at.exception
    assert at.query_params["i_settings"].endswith(" adaptive=true")
    assert any("Re-fused from cached stage lists" in c.value for c in at.caption)  # no new search
    d = at.session_state["i_result"][1].diagnostics  # the searched result; the shown one is re-fused from it
    assert d.adaptive is None
    line = weights_lines(at)
    assert line and "the query holds the identifier FX-209847" in line[0]
    assert "for this query (set: dense 0.5 / sparse 0.5)" in line[0]
    a = at.session_state["i_result"][1].diagnostics.settings  # the weights as set …
    table = next(h.value for h in at.get("html") if "class='rt-stages'" in h.value)
    assert f"convex, {a['normalization']}, adaptive 0." in table  # … and the query's own under the Merged heading
    flow = next(c for c in at.get("plotly_chart") if "Rank flow" in c.proto.spec)
    assert "Adaptive weights: sparse 0." in flow.proto.spec and "FX-209847" in flow.proto.spec


def test_a_link_with_adaptive_opens_with_it_on(demo_env):
    at = inspect(i_q=TICKET, i_scope="user:priya", i_adaptive="true")
    assert not at.exception and at.toggle(key="i_adaptive").value is True
    assert weights_lines(at)
    d = at.session_state["i_result"][1].diagnostics
    assert d.adaptive is not None and d.adaptive["sparse_weight"] > 0.5


def test_reset_fusion_turns_adaptive_off_with_the_other_fusion_knobs(demo_env):
    at = inspect(i_q=TICKET, i_scope="user:priya")
    at.toggle(key="i_adaptive").set_value(True).run()
    assert at.toggle(key="i_adaptive").value is True and weights_lines(at)
    at.button(key="i_reset_fusion").click().run()
    assert not at.exception
    assert at.toggle(key="i_adaptive").value is False and not weights_lines(at)
