"""Every page in streamlit.testing AppTest, on the demo corpus with the model-free hashing embedder."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from retrieval.demo import build_demo_index
from retrieval.models import HashingEmbedder

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("app") / "db")
    build_demo_index(db, log=lambda m: None, embedder=HashingEmbedder(384))
    old = {k: os.environ.get(k) for k in ("RETRIEVAL_DB", "RETRIEVAL_EMBEDDER")}
    os.environ.update(RETRIEVAL_DB=db, RETRIEVAL_EMBEDDER="hashing")
    yield db
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def page(path: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if path:
        at.switch_page(path)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def texts(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    parts += [w.value for w in at.warning] + [s.value for s in at.success] + [e.value for e in at.error]
    return "\n".join(str(p) for p in parts)


def test_home_shows_status_and_examples(demo_env):
    at = page()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Traces"] == "294" and metrics["Scopes"] == "3" and int(metrics["Facts"]) > 20
    import json

    from retrieval.demo import TRACES

    rows = [json.loads(line) for line in TRACES.read_text().splitlines()]
    active = sum(1 for r in rows if r.get("is_active", True))
    assert int(metrics["BM25 documents"]) == active < len(rows)  # inactive traces are never searched
    assert "in step with the store" in texts(at)
    assert "where do I live now?" in texts(at)


def test_home_on_an_empty_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_DB", str(tmp_path / "empty"))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = page()
    assert not at.exception and "The store is empty" in texts(at)


def test_corpus_loads_the_demo_into_an_empty_store_and_browses(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_DB", str(tmp_path / "fresh"))
    monkeypatch.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = page("pages/1_Corpus.py")
    at.button(key="c_demo").click().run()
    assert not at.exception
    assert any("Stored 294 trace(s)" in s.value for s in at.success)
    at.text_input(key="c_needle").input("INV-20931").run()
    table = [d for d in at.dataframe if len(d.value) and "content" in d.value.columns][0].value
    assert "maya-inv-20931" in set(table["id"])
    assert all("20931" in c or "20931" in i for c, i in zip(table["content"], table["id"]))


def inspect(**params) -> AppTest:
    return page("pages/2_Inspect.py", **params)


def column_ids(at, stage: str) -> list[str]:
    import re

    block = next((m.value for m in at.markdown if f"data-stage='{stage}'" in m.value), "")
    return re.findall(r"<code title='([^']+)'>", block)


def test_inspect_shows_five_stages_and_an_explanation(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya")
    assert not at.exception
    heads = [m.value for m in at.markdown if m.value.startswith("**") and " · " in m.value]
    assert [h.split("**")[1] for h in heads[:5]] == ["Dense", "Sparse (BM25)", "Merged (RRF)", "Reranked", "Final"]
    assert column_ids(at, "sparse")[0] == "priya-lens-repair"
    assert column_ids(at, "final")[0] == "priya-lens-repair"
    assert "<mark>FX</mark>" in next(m.value for m in at.markdown if "data-stage='sparse'" in m.value)
    assert any("Rank 1 of 10" in s.value for s in at.success)  # explanation of the selected trace


def test_moving_a_fusion_slider_refuses_from_cache(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya")
    before = column_ids(at, "final")
    at.slider(key="i_dense_weight").set_value(0.0)
    at.slider(key="i_sparse_weight").set_value(1.0).run()
    assert not at.exception
    assert any("Re-fused from cached stage lists" in c.value for c in at.caption)
    after = column_ids(at, "final")
    assert after != before
    sparse = column_ids(at, "sparse")
    assert after[: len(sparse)] == sparse  # dense weight 0: BM25 order decides


def test_typed_id_and_agentos_preset_explain_why_not(demo_env):
    at = inspect(i_q="status of ticket FX-209847", i_scope="user:priya", i_preset="agentos")
    assert at.radio(key="i_preset").value == "agentos"
    import json

    assert json.loads(at.json[0].value)["rrf_k"] == 60  # the settings the result was made with
    at.text_input(key="i_typed").input("maya-intro").run()
    assert not at.exception
    assert any("Dropped at **dense**" in w.value and "belongs to scope user:maya" in w.value for w in at.warning)
    at.text_input(key="i_typed").input("no-such-trace").run()
    assert any("No trace with id 'no-such-trace'" in w.value for w in at.warning)


def test_fact_query_injects_the_fact_first(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya")
    assert column_ids(at, "final")[0].startswith("fact-graph:user:livesIn")
    assert "fact" in next(m.value for m in at.markdown if "data-stage='final'" in m.value)


def test_selecting_cohere_without_a_key_is_a_clear_error(demo_env, monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    at = inspect(i_q="where do I live now?", i_scope="user:maya", i_reranker="cohere")
    assert not at.exception
    assert any("COHERE_API_KEY" in e.value for e in at.error)


def test_empty_query_and_reranker_path(demo_env):
    at = inspect(i_scope="user:maya")
    assert not at.exception and any("Type a query" in c.value for c in at.caption)
    at = inspect(i_q="who has been complaining about the driver app?", i_scope="user:maya", i_reranker="embedding",
                 i_split_threshold="1.0")
    assert not at.exception
    assert column_ids(at, "reranked")
    assert any("Split-on-ambiguous" in c.value for c in at.caption)


def test_config_json_round_trips_and_bad_files_are_named():
    from ui.state import PipelineConfig

    cfg = PipelineConfig.for_preset("agentos", reranker="embedding", split_threshold=0.5, valence=-0.4)
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match="unknown config field"):
        PipelineConfig.from_json('{"speed": 3}')
    with pytest.raises(ValueError, match="not valid JSON"):
        PipelineConfig.from_json("{")
    with pytest.raises(ValueError, match="'rrf_k' is 0"):
        PipelineConfig.from_json('{"rrf_k": 0}')


def test_compare_one_query(demo_env):
    at = page("pages/3_Compare.py")
    at.text_input(key="cmp_q").input("status of ticket FX-209847").run()
    at.selectbox(key="cmp_scope").select("user:priya").run()
    assert not at.exception
    assert {m.label for m in at.metric} >= {"Overlap", "Jaccard", "nDCG@10 B"}
    assert any(c.value.startswith("Entered B's top-k:") for c in at.caption)
    assert any("Δ rank" in d.value.columns for d in at.dataframe)


def test_compare_labelled_set(demo_env):
    at = page("pages/3_Compare.py")
    at.radio(key="cmp_mode").set_value("the labelled demo set").run()
    at.button(key="cmp_run").click().run()
    assert not at.exception
    assert {m.label for m in at.metric} >= {"ndcg@10 (B)", "recall@10 (B)", "mrr (B)"}


def test_tune_evaluates_and_sweeps(demo_env):
    at = page("pages/4_Tune.py")
    at.button(key="t_run").click().run(timeout=180)
    assert not at.exception
    assert any("Best on the tune half" in c.value for c in at.caption)
    assert any("wins" in c.value and "losses" in c.value for c in at.caption)
    stages = [d.value for d in at.dataframe if "stage" in d.value.columns][0]
    assert list(stages["stage"]) == ["dense", "sparse", "merged", "final"]


def test_facts_page_and_last_injected(demo_env):
    at = inspect(i_q="where did I live first?", i_scope="user:maya")
    at.switch_page("pages/5_Facts.py").run()
    assert not at.exception
    at.selectbox(key="f_scope").select("user:maya").run()
    table = [d.value for d in at.dataframe if "predicate" in d.value.columns][0]
    assert {"Lisbon", "Porto", "Berlin"} <= set(table[table["predicate"] == "livesIn"]["object"])
    assert table["injected"].sum() == 3
    assert "where did I live first?" in texts(at)


def test_switching_preset_loads_its_fusion_defaults(demo_env):
    at = inspect(i_q="where do I live now?", i_scope="user:maya")
    assert (at.slider(key="i_dense_weight").value, at.slider(key="i_rrf_k").value) == (0.5, 10)
    at.radio(key="i_preset").set_value("agentos").run()
    assert not at.exception
    assert (at.slider(key="i_dense_weight").value, at.slider(key="i_sparse_weight").value,
            at.slider(key="i_rrf_k").value) == (0.7, 0.3, 60)
    at.slider(key="i_rrf_k").set_value(30).run()
    at.button(key="i_reset_fusion").click().run()
    assert at.slider(key="i_rrf_k").value == 60


def test_cohere_reranker_through_the_page_and_a_wrong_key(demo_env, monkeypatch):
    from fake_llm_server import FakeServer

    with FakeServer() as server:
        monkeypatch.setenv("COHERE_API_KEY", "sk-page-test-123456")
        monkeypatch.setenv("COHERE_BASE_URL", server.url)
        from ui.cache import get_reranker

        get_reranker.clear()
        at = inspect(i_q="where do I live now?", i_scope="user:maya", i_reranker="cohere")
        assert not at.exception and column_ids(at, "reranked")
        assert server.requests[-1]["path"] == "/v2/rerank"
        server.mode = "401"
        at = inspect(i_q="what's my dog called?", i_scope="user:maya", i_reranker="cohere")
        warn = " ".join(w.value for w in at.warning)
        assert "reranker:error" in warn and "wrong or expired" in warn and "sk-page-test" not in warn
        assert column_ids(at, "final")  # the merged order is kept, the page stays usable
        get_reranker.clear()
