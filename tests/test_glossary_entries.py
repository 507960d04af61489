"""What the glossary's generated entries say, against the values they are generated from (newcomer: the PAD entry
said every mood number runs from −1 to 1 while the Arousal slider runs 0–1; the RRF entry gave hybrid's k as if
hybrid fused by RRF, while it fuses by a convex combination unless RRF is chosen), and the words a newcomer met on
Home, Tune and the sidebar without an explanation."""
from __future__ import annotations

import re

import pytest

from retrieval.fusion import FUSIONS, WEIGHTS, get_strategy
from retrieval.pipeline.presets import PRESETS, get_preset
from retrieval.store.context import ContextSetting
from retrieval.types import CONTEXT_SIDES
from apphelpers import ROOT
from ui.glossary import GLOSSARY, MOOD, explained
from ui.links import FIELDS
from ui.panel import fusion_help


def _num(x: float) -> str:
    return f"{x:g}".replace("-", "−")


@pytest.mark.parametrize("name", MOOD)
def test_the_pad_entry_says_each_mood_sliders_own_range(name):
    f = FIELDS[name]
    assert f"{name} from {_num(f.lo)} to {_num(f.hi)}" in GLOSSARY["PAD"], GLOSSARY["PAD"]


@pytest.mark.parametrize("preset", PRESETS)
def test_the_rrf_entry_says_k_only_where_rrf_is_fused(preset):
    p = get_preset(preset)
    said = GLOSSARY["RRF"]
    if p.fusion == "rrf":
        assert f"{p.rrf_k:g} in {preset}" in said, said
    else:  # hybrid: convex by default, so its k is what a switch to RRF finds
        assert f"{p.rrf_k:g} when the {preset} preset fuses by RRF" in said, said
        assert f"{p.rrf_k:g} in the {preset} preset" not in said, said


# A division whose divisor is a bare product ("/6σ_d": 6 × σ_d, or 6σ then × d?) is ambiguous: parenthesise it.
BARE_DIVISOR = re.compile(r"/\s*\d+\s*[^\d\s(.,]")


@pytest.mark.parametrize("name", FUSIONS)
def test_the_fusion_help_says_each_strategy_in_words_then_an_unambiguous_formula(name):
    """Newcomer: the Fusion radio's help was bare formulas (φ, μ, σ undefined) and "/6σ_d" read two ways."""
    s = get_strategy(name)
    said = fusion_help()
    assert f"{s.title}: {s.in_words}. Score = {s.formula}." in said, said
    assert not BARE_DIVISOR.search(s.formula), s.formula
    for sym in sorted({c for c in s.formula if c in "φμσ"}):  # each symbol used is said in words
        assert re.search(rf"{sym}(?: and \w)? the ", s.formula), (sym, s.formula)
    for p in WEIGHTS:
        assert f"{p.attr} the {p.title.lower()}" in said, said


def test_the_fusion_and_normalisation_helps_explain_convex_and_theoretical():
    from retrieval.fusion import Convex

    (norm,) = Convex.params
    assert GLOSSARY["theoretical"] in explained(norm.help)  # the Normalisation box names `theoretical`
    assert GLOSSARY["convex"] in explained(fusion_help())  # the Fusion radio names convex fusion


# Words a newcomer met on Home, Tune and the sidebar with no explanation (each now said in plain words).
JARGON = re.compile(r"\bhydration\b|\brerank blend at\b|\bvalence [+−-]|\bfeeding\b|\bend clock\b", re.IGNORECASE)


def test_home_cards_say_their_settings_in_plain_words():
    from retrieval.ingest.demo import load_examples

    for ex in load_examples():
        assert not JARGON.search(ex["look_for"]), ex["look_for"]


@pytest.mark.parametrize("sides", CONTEXT_SIDES)
def test_homes_context_line_says_where_the_context_goes(sides):
    said = ContextSetting(window=1, sides=sides).describe()
    assert not JARGON.search(said) and "added to each trace's text" in said, said


def test_tunes_calibration_and_the_sidebars_tag_hint_are_for_their_reader():
    calibration = (ROOT / "ui" / "calibration.py").read_text()
    assert not JARGON.search(calibration)
    asof = (ROOT / "ui" / "asof.py").read_text()
    hints = [m.start() for m in re.finditer(r"`python -m retrieval tag NAME`", asof)]
    assert hints and all("an operator can tag" in asof[i - 60:i] for i in hints), "a CLI hint not for the operator"
