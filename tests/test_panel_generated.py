"""The settings panel's fusion controls are generated from the declarations in `retrieval.fusion` (label, range,
step, choices, help): no second copy of a fusion knob's range or default in ui/ (AppTest, hashing demo store)."""
from __future__ import annotations

import dataclasses

import pytest

from apphelpers import demo_app_env, open_page
from retrieval.fusion import RRF, WEIGHTS, Convex

TIMEOUT = 60


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    yield from demo_app_env(tmp_path_factory, "panel_generated")


def test_fusion_sliders_take_label_range_step_and_help_from_the_declarations(demo_env, monkeypatch):
    import ui.panel

    k = dataclasses.replace(RRF.params[0], label="Rank constant", help="declared help for k")
    norm = dataclasses.replace(Convex.params[0], label="Score normalisation")
    monkeypatch.setattr(ui.panel, "FUSION_CONTROLS", (norm, k))  # what the registry declares is what is drawn
    at = open_page("pages/2_Inspect.py", TIMEOUT, i_q="where do I live now?", i_scope="user:maya")
    assert not at.exception
    slider = at.slider(key="i_rrf_k")
    assert (slider.label, slider.help, slider.min, slider.max, slider.step) == ("Rank constant", "declared help for k",
                                                                               *RRF.params[0].ui, 1)
    assert slider.disabled and slider.value == 10  # convex is the hybrid default; k keeps the preset's value
    dense = at.slider(key="i_dense_weight")
    assert (dense.label, dense.help, dense.min, dense.max, dense.step) == (
        "Dense weight", "the dense list's weight", WEIGHTS[0].lo, WEIGHTS[0].hi, WEIGHTS[0].step)
    box = at.selectbox(key="i_normalization")
    assert (box.label, box.options, box.value) == ("Score normalisation", list(Convex.params[0].choices),
                                                   "theoretical")
    at.radio(key="i_fusion").set_value("rrf").run()
    assert not at.slider(key="i_rrf_k").disabled
    assert not [s for s in at.selectbox if s.key == "i_normalization"]  # a choice only for the strategy that has it
