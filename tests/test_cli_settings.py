"""The CLI's knob flags are generated from the declarations (`retrieval.fusion`'s `Param`s, `KNOBS`) and checked by
the same rules as the API; `--settings STRING` takes the one settings value's canonical form."""
import json

import pytest

from cligen import commands
from demostore import copy_demo
from retrieval.cli.main import main
from retrieval.fusion import STRATEGIES, WEIGHTS
from retrieval.pipeline.settings import RetrievalSettings

TICKET = ["query", "status of ticket FX-209847", "--embedder", "hashing", "--scope", "user:priya", "--json"]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("cli_settings") / "db")
    return copy_demo(db)  # what `build-demo --embedder hashing` builds (tests/demostore.py: built once a run)


def query(capsys, db, *argv) -> tuple[int, dict | None, str]:
    try:
        code = main([*TICKET, "--db", db, *argv])
    except SystemExit as exc:  # a usage error (argparse): checked before the store is opened
        code = exc.code
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def test_every_declared_knob_is_a_flag_of_query_and_snapshot_run():
    declared = {"--fusion", "--rerank-weight", "--settings",
                *{"--" + p.name.replace("_", "-") for s in STRATEGIES for p in (*WEIGHTS, *s.params)}}
    for name in ("query", "snapshot run"):
        flags = {f for a in commands()[name]._actions for f in a.option_strings}
        assert declared <= flags, (name, declared - flags)


def test_settings_string_gives_the_same_ranking_as_the_flags(demo_db, capsys):
    text = "preset=agentos fusion=rrf(dense_weight=0.4,sparse_weight=0.6,rrf_k=20.0) recall_top_k=5"
    code, by_string, _ = query(capsys, demo_db, "--settings", text)
    assert code == 0
    code, by_flags, _ = query(capsys, demo_db, "--preset", "agentos", "--dense-weight", "0.4", "--sparse-weight", "0.6",
                              "--rrf-k", "20", "--top-k", "5")
    assert code == 0 and by_string["stage_ids"] == by_flags["stage_ids"] and len(by_string["final"]) == 5
    assert by_string["settings"] == by_flags["settings"] == str(RetrievalSettings.parse(text))
    code, default, _ = query(capsys, demo_db)
    assert code == 0 and default["stage_ids"] != by_string["stage_ids"]  # the string did change the run


@pytest.mark.parametrize("argv, message", [
    (["--settings", "fusion=rrf(rrf_k=0)"], "argument --settings: rrf_k=0.0 must be a number > 0 and <= 1000"),
    (["--settings", "top=3"], "argument --settings: unknown setting(s) top; use "),
    (["--settings", "preset=agentos fusion=convex"], "the agentos preset is always RRF"),
    (["--settings", "fusion=rrf", "--dense-weight", "0.2"],
     "--settings holds every retrieval knob; drop --dense-weight or put it in the string"),
    (["--settings", "recall_top_k=5", "--top-k", "7"], "drop --recall-top-k or put it in the string"),
    (["--rrf-k", "0"], "argument --rrf-k: rrf_k=0.0 must be a number > 0 and <= 1000"),
    (["--dense-weight", "x"], "argument --dense-weight: dense_weight='x' must be a number >= 0 and <= 1"),
    (["--normalization", "l2"], "argument --normalization: normalization='l2' is unknown; use one of minmax, "
                                "theoretical, zscore"),
])
def test_a_bad_knob_is_one_error_line_naming_it(demo_db, capsys, argv, message):
    code, _, err = query(capsys, demo_db, *argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err



def test_diff_versions_takes_the_settings_string_too(demo_db, capsys):
    base = ["diff-versions", "status of ticket FX-209847", "--from", "1", "--db", demo_db, "--embedder", "hashing",
            "--scope", "user:priya", "--json"]
    assert main([*base, "--settings", "preset=agentos recall_top_k=5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 5  # top k from the string
    assert main([*base, "--settings", "fusion=rrf", "--rrf-k", "5"]) == 2
    assert "--settings holds every retrieval knob; drop --rrf-k" in capsys.readouterr().err


def eval_args(*argv):
    from retrieval.cli.main import build_parser

    return build_parser().parse_args(["eval", "--dataset", "demo", *argv])


def test_eval_builds_one_settings_value_per_preset_and_dense_weight_is_a_balance():
    from retrieval.cli.eval import eval_settings
    from retrieval.fusion import RRF

    args = eval_args("--fusion", "rrf", "--rrf-k", "20", "--dense-weight", "0.7", "--adaptive")
    hybrid = eval_settings(args, "hybrid")
    assert hybrid == RetrievalSettings(fusion=RRF(k=20, weights=(0.7, 0.3)), adaptive=True)
    assert hybrid.strategy == RRF(k=20).balanced(0.7)
    assert eval_settings(args, "agentos") == RetrievalSettings(preset="agentos", adaptive=True)  # its own fusion
    given = eval_args("--settings", str(hybrid))
    assert eval_settings(given, "agentos") is given.settings  # the string's value, as it is


def test_eval_takes_the_settings_string_and_it_scores_as_the_flags(tmp_path, capsys):
    common = ["eval", "--dataset", "demo", "--cache-dir", str(tmp_path / "cache"), "--embedder", "hashing",
              "--max-queries", "6"]
    text = "preset=hybrid fusion=rrf(dense_weight=0.7,sparse_weight=0.3,rrf_k=20.0)"
    assert main([*common, "--settings", text, "--out", str(tmp_path / "a.json")]) == 0
    assert main([*common, "--preset", "hybrid", "--fusion", "rrf", "--rrf-k", "20", "--dense-weight", "0.7",
                 "--out", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["configs"] for n in "ab")
    assert list(a) == list(b) == ["hybrid"]
    assert a["hybrid"]["settings"] == b["hybrid"]["settings"] == str(RetrievalSettings.parse(text))
    assert a["hybrid"]["stages"] == b["hybrid"]["stages"]


@pytest.mark.parametrize("argv, message", [
    (["--settings", "fusion=rrf", "--dense-weight", "0.2"],
     "--settings holds every retrieval knob; drop --dense-weight or put it in the string"),
    (["--settings", "preset=agentos", "--preset", "hybrid"], "--settings names preset agentos; drop --preset"),
    (["--settings", "recall_top_k=5"], "eval measures at 10"),
    (["--settings", "fusion=rrf(rrf_k=0)"], "argument --settings: rrf_k=0.0 must be a number > 0 and <= 1000"),
    (["--dense-weight", "1.5"], "argument --dense-weight: dense_weight=1.5 must be a number >= 0 and <= 1"),
])
def test_eval_refuses_a_settings_string_beside_a_flag_that_says_otherwise(tmp_path, capsys, argv, message):
    try:
        code = main(["eval", "--dataset", "demo", "--cache-dir", str(tmp_path / "cache"), *argv])
    except SystemExit as exc:  # argparse: a value outside its declared range
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert not (tmp_path / "cache").exists()  # refused before any store is opened
