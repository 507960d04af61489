"""What the glossary's generated entries say, against the values they are generated from (newcomer: the PAD entry
said every mood number runs from −1 to 1 while the Arousal slider runs 0–1; the RRF entry gave hybrid's k as if
hybrid fused by RRF, while it fuses by a convex combination unless RRF is chosen)."""
from __future__ import annotations

import pytest

from retrieval.pipeline.presets import PRESETS, get_preset
from ui.glossary import GLOSSARY, MOOD
from ui.links import FIELDS


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
