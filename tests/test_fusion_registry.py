"""Fusion strategies as a registry: every registered strategy declares its name, formula and parameters,
shows its settings, builds from knobs, and is what the pipeline, the explanation, the panel and the lab use.
Properties are checked for every registered strategy, so a new one is covered by adding it."""
import json
import re
from pathlib import Path

import pytest

from retrieval.fusion import (FUSIONS, REGISTRY, RRF, STRATEGIES, WEIGHTS, Convex, catalogue, get_strategy,
                              strategy_for)

ROOT = Path(__file__).resolve().parent.parent
LISTS = [[("a", 0.9), ("b", 0.5), ("c", 0.1)], [("b", 7.0), ("d", 3.0)]]


def test_repr_shows_settings_and_the_spec_examples():
    assert str(RRF(k=60, weights=(0.7, 0.3))) == "RRF(k=60, weights=(0.7, 0.3))"
    assert repr(Convex(normalization="theoretical", weights=(0.5, 0.5))) == "Convex(theoretical, weights=(0.5, 0.5))"
    assert RRF(k=10).setting == "RRF k=10" and Convex(normalization="zscore").family == ("convex", "zscore")


@pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.name)
def test_every_strategy_declares_itself_and_round_trips_its_knobs(cls):
    assert REGISTRY[cls.name] is cls and get_strategy(cls.name) is cls
    assert cls.short and cls.title and cls.formula and cls.__doc__
    default = cls.from_knobs({})
    for p in cls.params:
        assert p.check(p.default) == p.default  # the default lies in its own range
        assert p.grid and all(p.check(v) == v for v in p.grid)  # the lab searches only valid values
    knobs = default.knobs()
    assert knobs["fusion"] == cls.name and strategy_for(knobs) == default
    assert str(default).startswith(f"{cls.__name__}(") and str(default).endswith("weights=(0.5, 0.5))")
    out = default.fuse(LISTS, [0.5, 0.5])
    assert [f.id for f in out] and sorted(f.id for f in out) == ["a", "b", "c", "d"]
    assert all(f.score == pytest.approx(sum(f.contributions)) for f in out)
    assert [f.ranks for f in out if f.id == "b"] == [(2, 1)]


def test_catalogue_is_plain_data_a_ui_can_be_generated_from():
    cat = json.loads(json.dumps(catalogue()))
    assert [c["name"] for c in cat] == list(FUSIONS)
    rrf = cat[0]
    assert rrf["formula"] == "w_d/(k+rank_d) + w_s/(k+rank_s)"
    assert [p["name"] for p in rrf["params"]] == ["dense_weight", "sparse_weight", "rrf_k"]
    assert rrf["params"][2] == {"name": "rrf_k", "attr": "k", "kind": "float", "default": 60.0, "lo": 0.0,
                                "hi": 1000.0, "step": 1.0, "lo_open": True, "ui": [1, 200], "choices": [],
                                "grid": [5, 10, 20, 60], "help": "Higher k flattens rank differences (RRF only).",
                                "label": "RRF k"}
    assert [p.name for p in WEIGHTS] == ["dense_weight", "sparse_weight"]


def test_parameters_are_checked_with_a_message_naming_them():
    with pytest.raises(ValueError, match=r"rrf_k=0 must be a number > 0 and <= 1000"):
        strategy_for({"fusion": "rrf", "rrf_k": 0})
    with pytest.raises(ValueError, match=r"normalization='l2' is unknown; use one of minmax, theoretical, zscore"):
        strategy_for({"fusion": "convex", "normalization": "l2"})
    with pytest.raises(ValueError, match=r"fusion='nope' is unknown; use one of " + ", ".join(FUSIONS)):
        get_strategy("nope")


def test_settings_knob_ranges_come_from_the_strategy_declarations():
    from retrieval.pipeline.settings import CHOICES, KNOBS

    k = RRF.params[0]
    assert (KNOBS["rrf_k"].lo, KNOBS["rrf_k"].hi, KNOBS["rrf_k"].lo_open, KNOBS["rrf_k"].ui) == (k.lo, k.hi, True, k.ui)
    assert CHOICES["fusion"] == FUSIONS and CHOICES["normalization"] == Convex.params[0].choices


def test_no_module_outside_the_fusion_package_branches_on_a_fusion_name():
    """The claim "a new fusion is one file": nobody else compares a fusion kind to a literal name."""
    pattern = re.compile(r'''(==|!=)\s*["'](rrf|convex|dbsf)["']|["'](rrf|convex|dbsf)["']\s*(==|!=)''')
    files = [p for d in ("retrieval", "ui", "pages", "scripts") for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in files if "fusion" not in p.relative_to(ROOT).parts
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []
    assert pattern.search('if s.fusion == "convex":')  # the check can fail


def test_explanation_asks_the_strategy():
    from ui.view import fusion_rows, fusion_title

    rrf = {"fusion": "rrf", "params": {"rrf_k": 10.0}, "k": 10.0, "weights": {"dense": 0.7, "sparse": 0.3},
           "ranks": {"dense": 2, "sparse": None}, "contributions": {"dense": 0.7 / 12, "sparse": 0.0},
           "score": 0.7 / 12}
    assert fusion_title(rrf) == "RRF: each list adds weight / (k + rank), k = 10"
    assert [r["formula"] for r in fusion_rows(rrf)] == ["0.7 / (10 + 2)", "not in this list: 0", ""]
    old = {"fusion": "convex", "normalization": "minmax", "k": 60, "weights": {"dense": 0.5, "sparse": 0.5},
           "ranks": {"dense": 1, "sparse": 3}, "contributions": {"dense": 0.5, "sparse": 0.25}, "score": 0.75}
    assert fusion_title(old).startswith("Convex fusion (minmax normalisation)")  # a record without `params`
    assert [r["formula"] for r in fusion_rows(old)][:2] == ["0.5 × 1", "0.5 × 0.5"]


def test_a_strategy_has_one_canonical_string_that_parses_back():
    from retrieval.fusion import DBSF, parse_fusion

    for s in (RRF(k=12.5, weights=(0.7, 0.3)), Convex(normalization="zscore", weights=(0.1, 0.9)),
              DBSF(weights=(0.5, 0.5))):
        assert parse_fusion(s.spec) == s
    assert RRF(k=10, weights=(0.4, 0.6)).spec == "rrf(dense_weight=0.4,sparse_weight=0.6,rrf_k=10.0)"
    assert parse_fusion("rrf", {"rrf_k": 10.0}) == RRF(k=10, weights=(0.5, 0.5))  # left out: the defaults given
    with pytest.raises(ValueError, match=r"'normalization=minmax' is not one of its parameters \(dense_weight, "
                                         r"sparse_weight, rrf_k\)"):
        parse_fusion("rrf(normalization=minmax)")
