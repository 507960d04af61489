"""SPEC §14 commands: `case import/list/export`, `snapshot run/diff` (in-process via main(argv); one subprocess)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cases") / "db")
    assert main(["build-demo", "--db", path, "--embedder", "hashing"]) == 0
    return path


def run(capsys, *argv) -> tuple[int, dict | None, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # a usage error (argparse: a flag's value checked by its declaration)
        code = exc.code
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


def test_build_demo_ships_the_demo_case(db, capsys):
    code, out, _ = run(capsys, "case", "list", "--db", db)
    assert code == 0
    assert out == {"cases": [{"case": "demo", "queries": 45, "judged_queries": 45, "scale": "graded", "snapshots": 2,
                              "note": ""}]}
    assert main(["build-demo", "--db", db, "--embedder", "hashing"]) == 0  # reusing the store keeps the case once
    capsys.readouterr()
    assert run(capsys, "case", "list", "--db", db)[1]["cases"][0]["queries"] == 45
    assert run(capsys, "case", "list", "--db", db)[1]["cases"][0]["snapshots"] == 2  # shipped once, not again


def test_import_lists_unknowns_keeps_the_rest_and_round_trips(db, capsys, tmp_path):
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "1", "text": "status of invoice INV-20931"}\n'  # grades are per (scope, query text, trace):
        '{"_id": "2", "text": "washer error code E-4102"}\n'  # texts unlike the demo case's keep them apart
        '{"_id": "3", "text": "a query nobody judged"}\n'
        "broken\n")
    (tmp_path / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\tmaya-inv-20931\t2\n1\tno-such-trace\t1\n2\tmaya-washer-error\t3\n"
        "2\tmaya-washer-fixed\t9\n7\tmaya-inv-20931\t1\n2 maya-washer-error-again\n")
    code, out, err = run(capsys, "case", "import", "mini", "--queries", str(tmp_path / "queries.jsonl"),
                         "--qrels", str(tmp_path / "qrels.tsv"), "--scope", "user:maya", "--db", db)
    assert code == 0
    assert out == {"case": "mini", "queries": 2, "judgments": 2, "unknown_ids": ["no-such-trace"],
                   "unknown_queries": ["7"], "errors": [
                       'queries.jsonl line 4: not a BEIR query: expected {"_id": ..., "text": "..."}',
                       "qrels.tsv line 5: grade '9' is outside the graded scale; use one of 0, 1, 2, 3",
                       "qrels.tsv line 7: has 2 column(s); expected TREC `qid 0 docid grade` or BEIR "
                       "`query-id<TAB>corpus-id<TAB>score`"]}
    assert "no-such-trace" in err and "skipped" in err
    code, out, _ = run(capsys, "case", "export", "mini", "--out", str(tmp_path / "out"), "--db", db)
    assert code == 0 and [Path(p).name for p in out["files"]] == ["queries.jsonl", "test.tsv", "qrels.trec",
                                                                   "mini.jsonl"]
    assert (tmp_path / "out" / "qrels.trec").read_text() == "1 0 maya-inv-20931 2\n2 0 maya-washer-error 3\n"
    code, out, _ = run(capsys, "case", "import", "mini-trec", "--queries", str(tmp_path / "out" / "queries.jsonl"),
                       "--qrels", str(tmp_path / "out" / "qrels.trec"), "--scope", "user:maya", "--db", db)
    assert code == 0 and (out["queries"], out["judgments"], out["errors"]) == (2, 2, [])
    code, out, _ = run(capsys, "case", "import", "mini-jsonl", "--jsonl", str(tmp_path / "out" / "mini.jsonl"),
                       "--db", db)
    assert code == 0 and (out["queries"], out["judgments"]) == (2, 2)


@pytest.mark.parametrize("argv, message", [
    (["case", "import", "my case!", "--jsonl", "x.jsonl"], "case name 'my case!' has odd characters (' !')"),
    (["case", "import", "ok", "--qrels", "x.tsv"], "give --queries FILE"),
    (["case", "export", "nope", "--out", "/tmp/x"], "no case named 'nope'"),
    (["snapshot", "run", "nope", "--embedder", "hashing"], "no case named 'nope'"),
    (["snapshot", "run", "demo", "--embedder", "hashing", "--dense-weight", "7"],
     "argument --dense-weight: dense_weight=7.0 must be a number >= 0 and <= 1"),
    (["snapshot", "run", "demo", "--embedder", "hashing", "--settings", "fusion=rrf(rrf_k=0)"],
     "argument --settings: rrf_k=0.0 must be a number > 0 and <= 1000"),
    (["snapshot", "diff", "s1", "s2"], "no snapshot 's1'"),
])
def test_bad_input_is_one_clear_error(db, capsys, argv, message):
    code, out, err = run(capsys, *argv, "--db", db)
    assert code == 2 and out is None and message in err and err.startswith("error: ")


def test_snapshot_run_and_diff(db, capsys):
    code, a, err = run(capsys, "snapshot", "run", "demo", "--embedder", "hashing", "--label", "base", "--db", db)
    assert code == 0 and "query 45/45" in err
    assert set(a) >= {"snapshot", "metrics", "queries"} and a["queries"] == a["judged_queries"] == 45
    assert set(a["metrics"]) == {"ndcg@10", "recall@10", "mrr", "p@10", "judged@10", "err@10"}
    assert 0 < a["metrics"]["ndcg@10"] <= 1 and "errors" not in a
    code, b, _ = run(capsys, "snapshot", "run", "demo", "--embedder", "hashing", "--dense-weight", "0.9",
                     "--sparse-weight", "0.1", "--db", db)
    assert code == 0 and b["snapshot"] != a["snapshot"]
    code, d, _ = run(capsys, "snapshot", "diff", a["snapshot"], b["snapshot"], "--db", db)
    assert code == 0 and (d["a"], d["b"]) == (a["snapshot"], b["snapshot"])
    for m in ("ndcg@10", "recall@10", "mrr", "judged@10"):
        assert d["metrics"][m]["delta"] == pytest.approx(b["metrics"][m] - a["metrics"][m])
    assert d["p_value"] == d["metrics"]["ndcg@10"]["p_value"] and 0 <= d["p_value"] <= 1
    from retrieval.judgments import JudgmentStore
    from retrieval.judgments.diff import diff_snapshots
    from retrieval.judgments.fresh import case_qrels, traces_now
    js = JudgmentStore(db)  # the CLI's interval is the library's: the paired bootstrap the Snapshots page shows
    sa, sb = js.snapshot(a["snapshot"]), js.snapshot(b["snapshot"])
    today = case_qrels(js, traces_now(db), js.case("demo"))[0]  # what the Snapshots page scores with
    want = diff_snapshots(sa, sb, today).metrics[0].interval
    iv = d["metrics"]["ndcg@10"]["interval"]
    assert iv == {**want.as_dict(), "text": want.describe()} and iv["n"] == d["metrics"]["ndcg@10"]["n"]
    assert want.lo <= want.delta <= want.hi and want.delta == pytest.approx(d["metrics"]["ndcg@10"]["delta"])
    assert len(d["queries"]) == 45 and d["config_changes"] == {"dense_weight": [0.5, 0.9], "sparse_weight": [0.5, 0.1]}
    deltas = [q["delta"] for q in d["queries"]]
    assert deltas == sorted(deltas, key=lambda x: round(x, 9))
    moved = [m for q in d["queries"] for m in q["moved"]]
    assert moved and all(m["stage"] == "merged" for m in moved)  # only fusion weights changed
    code, out, _ = run(capsys, "snapshot", "list", "demo", "--db", db)
    assert [s["snapshot"] for s in out["snapshots"]][-2:] == [a["snapshot"], b["snapshot"]]


def test_the_module_entry_point_runs_case_list(db):
    out = subprocess.run([sys.executable, "-m", "retrieval", "case", "list", "--db", db], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [c["case"] for c in json.loads(out.stdout)["cases"]][0] == "demo"


def test_snapshot_grade_with_a_fake_openai_compatible_server(db, capsys):
    from fake_llm_server import FakeServer

    from retrieval.judgments import JudgmentStore

    code, a, _ = run(capsys, "snapshot", "run", "demo", "--embedder", "hashing", "--db", db)
    with FakeServer() as server:
        server.chat_text = "1"
        code, rep, _ = run(capsys, "snapshot", "grade", a["snapshot"], "--generator", f"openai:{server.url}#m",
                           "--k", "3", "--db", db)
        asked = len(server.requests)
        server.mode = "500"
        code500, rep500, _ = run(capsys, "snapshot", "grade", a["snapshot"], "--generator",
                                 f"openai:{server.url}#m", "--k", "5", "--regrade", "--db", db)
    assert code == 0 and rep["graded"] == asked > 0 and rep["graded"] + rep["skipped"] == 45 * 3
    assert rep["stopped"] is None and rep["grader"].startswith("openai-compatible (m @")
    machine = [j for j in JudgmentStore(db).judgments("machine")]
    assert len(machine) == asked and {j.grade for j in machine} == {1}
    assert code500 == 2 and rep500["graded"] == 0 and "500" in rep500["stopped"]
