"""`python -m retrieval …` end to end (hashing embedder: no model needed)."""
import json

import pytest

from retrieval.cli.main import main


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("cli") / "db")
    assert main(["build-demo", "--db", db, "--embedder", "hashing"]) == 0
    return db


def test_build_demo_is_reused_the_second_time(demo_db, capsys):
    assert main(["build-demo", "--db", demo_db, "--embedder", "hashing"]) == 0
    assert "reusing it" in capsys.readouterr().out


def test_query_prints_five_stages_and_the_fact_first(demo_db, capsys):
    assert main(["query", "where do I live now?", "--db", demo_db, "--embedder", "hashing",
                 "--scope", "user:maya"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("rank"))
    assert all(s in header for s in ("dense", "sparse", "merged", "reranked", "final"))
    first = next(line for line in out.splitlines() if line.strip().startswith("1. "))
    assert "fact-graph:user:livesIn" in first and "[fact from maya-moved-berlin]" in first


def test_query_json_and_presets_and_explain(demo_db, capsys):
    assert main(["query", "status of ticket FX-209847", "--db", demo_db, "--embedder", "hashing",
                 "--scope", "user:priya", "--preset", "agentos", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["stage_ids"]) == {"dense", "sparse", "merged", "reranked", "final"}
    assert main(["query", "status of ticket FX-209847", "--db", demo_db, "--embedder", "hashing",
                 "--scope", "user:priya", "--explain", "priya-lens-repair", "--explain", "no-such-id"]) == 0
    out = capsys.readouterr().out
    assert "explain priya-lens-repair: Rank 1" in out and "No trace with id 'no-such-id'" in out


def test_ingest_reports_bad_lines_and_keeps_good(tmp_path, capsys):
    f = tmp_path / "notes.jsonl"
    f.write_text('{"id": "a", "content": "I work at Acme Corp."}\n{oops\n{"id": "b", "content": ""}\n')
    db = str(tmp_path / "db")
    assert main(["ingest", str(f), "--db", db, "--embedder", "hashing", "--scope", "user:u1"]) == 0
    cap = capsys.readouterr()
    assert "1 trace(s) read" in cap.out and "1 new fact(s)" in cap.out
    assert "line 2: invalid JSON" in cap.err and "line 3" in cap.err
    assert main(["status", "--db", db, "--embedder", "hashing"]) == 0
    assert json.loads(capsys.readouterr().out)["traces"] == 1


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "missing.jsonl"), "--db", str(tmp_path / "db")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["query", "x", "--db", str(tmp_path / "empty"), "--embedder", "hashing"]) == 2
    assert "is empty" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["query", "x", "--scope", "galaxy:1"])


def test_eval_on_the_demo_set(tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert main(["eval", "--dataset", "demo", "--cache-dir", str(tmp_path / "cache"), "--embedder", "hashing",
                 "--out", str(out), "--sweep", "--max-queries", "12"]) == 0
    table = capsys.readouterr().out
    assert "| hybrid | final |" in table and "| agentos | BM25 only |" in table
    data = json.loads(out.read_text())
    assert data["queries"] == 12 and "best" in data["configs"]["hybrid"]["sweep"]
