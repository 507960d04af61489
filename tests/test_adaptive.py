"""Adaptive fusion weights: the rules (bounded, explained), the pipeline (off = as before, on = re-fusable and every
explanation number adds up with the adapted weights), the knob everywhere a knob is, and learning from grades."""
from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from retrieval.eval.adaptive import SHARES, adapted_shares, learn, score_strengths
from retrieval.eval.runner import credited_ids, load_judgments, run_queries
from retrieval.ingest.demo import JUDGMENTS, load_demo_traces
from retrieval.models import HashingEmbedder
from retrieval.pipeline.adaptive import (MAX_SHIFT, RULES, SHARE_RANGE, STEP, Strengths, adapt, adapted_share,
                                         features, identifiers, shift_of)
from retrieval.pipeline.assemble import assemble, reweight
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import frozen
from retrieval.fusion import RRF, Convex
from retrieval.pipeline.settings import RetrievalSettings, resolve_settings
from retrieval.types import Scope
from retrieval.workspace.core import Workspace
from ui.links import read_link, write_link

from demostore import copy_demo

TICKET = "status of ticket FX-209847"
PRIYA = Scope.parse("user:priya")


# ---------------------------------------------------------------- identifiers
@pytest.mark.parametrize("query,ids", [
    ("status of ticket FX-209847", ("FX-209847",)),
    ("what happened with invoice INV-20931?", ("INV-20931",)),
    ("order 1187-4420 and 209847", ("1187-4420", "209847")),
    ("booking reference QX7P2L", ("QX7P2L",)),
    ("BRCA1 mutations and IL-6", ("BRCA1", "IL-6")),
    ("set user_id in getUser of v2.3.1", ("user_id", "getUser", "v2.3.1")),
    ("meeting on 2023-05-01", ("2023-05-01",)),
])
def test_identifiers_are_found(query, ids):
    assert identifiers(query) == ids


@pytest.mark.parametrize("query", ["where do I live now?", "what did Caroline do in 2023?", "the 3rd meeting at 10am",
                                   "Is it OK?", "the 90s", "a well-known fact"])
def test_ordinary_words_years_and_times_are_not_identifiers(query):
    assert identifiers(query) == ()


# ---------------------------------------------------------------- the rules
def _record(query: str, idf: dict[str, float], docs: int, dense: list[float], sparse: list[float]):
    hit = SimpleNamespace
    return SimpleNamespace(query=query, query_idf=frozen(idf), bm25_docs=docs,
                           dense_lists=((tuple(hit(retrieval_score=s) for s in dense)),),
                           sparse_lists=(tuple((f"s{i}", s) for i, s in enumerate(sparse)),))


words = st.text(alphabet="abcFX-0123456789 _.?", max_size=60)
scores = st.lists(st.floats(0, 50, allow_nan=False), max_size=6)
weights = st.floats(0, 1, allow_nan=False)
strength = st.floats(-0.2, 0.2, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(words, st.dictionaries(st.sampled_from("abcdef"), st.floats(0.01, 9)), st.integers(0, 10_000), scores, scores,
       weights, weights, st.builds(Strengths, strength, strength, strength, strength))
def test_weights_stay_in_range_and_a_move_has_a_reason(query, idf, docs, dense, sparse, dw, sw, strengths):
    if dw == 0 and sw == 0:
        sw = 0.5
    a = adapt(_record(query, idf, docs, dense, sparse), RRF(weights=(dw, sw)), strengths)
    assert 0 <= a["dense_weight"] <= 1 and 0 <= a["sparse_weight"] <= 1
    assert a["dense_weight"] + a["sparse_weight"] > 0
    share, new = dw / (dw + sw), a["dense_weight"] / (a["dense_weight"] + a["sparse_weight"])
    assert abs(new - share) <= MAX_SHIFT + STEP / 2 + 1e-5  # bounded (weights are rounded to 6 digits)
    if share in (0.0, 1.0):  # a side set off stays off
        assert (a["dense_weight"], a["sparse_weight"]) == (dw, sw)
    moved = (a["dense_weight"], a["sparse_weight"]) != (dw, sw)
    assert bool(a["reasons"]) == moved and a["summary"]
    if moved:
        assert min(SHARE_RANGE[0], share) - 1e-5 <= new <= max(SHARE_RANGE[1], share) + 1e-5
        assert a["summary"].startswith("dense " if new > share else "sparse ")
    for s in features(_record(query, idf, docs, dense, sparse)).signals().values():
        assert -1 <= s <= 1


def test_an_identifier_leans_sparse_and_says_so():
    a = adapt(_record(TICKET, {"fx": 4.0, "ticket": 2.0}, 50, [0.6, 0.59], [9.0, 3.0]), Convex(), None)
    assert a.strategy == Convex(weights=(a.dense_weight, a.sparse_weight)) and a.configured == Convex()
    assert a["fusion"] == a.strategy.spec and RetrievalSettings(fusion=a.strategy).strategy == a.strategy
    assert a["sparse_weight"] > 0.5 > a["dense_weight"]
    assert a["summary"].startswith(f"sparse {a['sparse_weight']:g}: the query holds the identifier FX-209847")
    assert "“fx” is in 1 of 50 traces" in "; ".join(a["reasons"])  # df from idf: ln(51 / 1.5) = 3.53 → ceiling
    zero = adapt(_record(TICKET, {}, 0, [], []), RRF(), Strengths(0, 0, 0, 0))
    assert (zero["dense_weight"], zero["sparse_weight"], zero["reasons"]) == (0.5, 0.5, ())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=len(RULES), max_size=len(RULES)),
       st.builds(Strengths, strength, strength, strength, strength), st.sampled_from(SHARES))
def test_vectorised_shares_match_the_pipelines(signals, strengths, share):
    sig = dict(zip(RULES, signals))
    want = adapted_share(share, shift_of(sig, strengths))
    got = adapted_shares(np.array([signals]), np.array([[getattr(strengths, r) for r in RULES]]), np.array([share]))
    assert got[0, 0] == pytest.approx(want)


def test_learning_finds_the_strength_that_helps():
    # Two queries: an identifier one that scores only at low dense shares, a long one only at high ones.
    table = np.array([[1.0 if p <= 0.3 else 0.0 for p in SHARES], [1.0 if p >= 0.7 else 0.0 for p in SHARES]])
    signals = np.array([[1.0, -0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    share0 = np.array([0.5, 0.5])
    learned = learn(table, signals, share0)
    vec = np.array([[getattr(learned, r) for r in RULES]])
    assert score_strengths(table, signals, share0, vec).mean() == 1.0
    assert learned.identifier < 0 < learned.length
    with pytest.raises(ValueError, match="identifier"):
        Strengths(identifier=0.5)


# ---------------------------------------------------------------- the pipeline
@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    ws = Workspace(str(tmp_path_factory.mktemp("adaptive") / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    ws.ingest(load_demo_traces())
    return ws


def _same(a, b) -> None:
    assert [(t.id, t.retrieval_score) for t in a.traces] == [(t.id, t.retrieval_score) for t in b.traces]
    assert a.diagnostics.stage_ids == b.diagnostics.stage_ids
    assert a.diagnostics.stage_scores == b.diagnostics.stage_scores
    assert a.diagnostics.fused == b.diagnostics.fused


def test_adaptive_off_is_todays_result(demo_ws):
    r = demo_ws.retriever(preset="hybrid", fact_store=None)
    for q in load_judgments(JUDGMENTS):
        res = r.retrieve(q.query, scope=q.scope)
        d = res.diagnostics
        assert d.settings.adaptive is False and d.adaptive is None
        assert d.fusion_weights == (d.settings["dense_weight"], d.settings["sparse_weight"])
        # the record's query features change nothing when adaptive is off
        bare = replace(d.record, query_idf=frozen(), bm25_docs=0)
        _same(res, assemble(bare, d.settings))
        _same(res, reweight(reweight(res, adaptive=True), adaptive=False))


def test_an_identifier_query_gets_sparse_weight_and_the_explanation_adds_up(demo_ws):
    for fusion in ("convex", "rrf"):
        r = demo_ws.retriever(preset="hybrid", fact_store=None, fusion=fusion, adaptive=True)
        res = r.retrieve(TICKET, scope=PRIYA)
        d = res.diagnostics
        a = d.adaptive
        assert a["dense_weight"] < d.settings["dense_weight"] and a["sparse_weight"] > d.settings["sparse_weight"]
        assert "FX-209847" in a["reasons"][0] and a["summary"].startswith("sparse ")
        with pytest.raises(FrozenInstanceError):  # a frozen value, as the rest of the diagnostics
            a.summary = "x"  # type: ignore[misc]
        a["rules"][0]["shift"] = 99.0  # its plain data is a copy: the value is unchanged
        assert a["rules"][0]["shift"] != 99.0 and a.rules[0][3] != 99.0
        assert d.fusion_weights == a.strategy.weights == (a["dense_weight"], a["sparse_weight"])
        assert a.configured == d.settings.strategy
        assert a.strategy == d.settings.strategy.with_weights(a.strategy.weights)
        _same(res, reweight(r.retrieve(TICKET, scope=PRIYA, adaptive=False), adaptive=True))  # the re-fusion path
        touched = dict.fromkeys(i for s in ("final", "merged", "dense", "sparse") for i in d.stage_ids[s])
        for tid in touched:
            ex = d.explain(tid)
            assert ex.adaptive["summary"] == a["summary"]
            if ex.rrf is None:
                continue
            assert ex.rrf["weights"] == {"dense": a["dense_weight"], "sparse": a["sparse_weight"]}
            assert ex.stages["merged"][1] == pytest.approx(sum(ex.rrf["contributions"].values()))
            for name, c in ex.rrf["contributions"].items():
                rank, w = ex.rrf["ranks"][name], ex.rrf["weights"]["dense" if name.startswith("dense") else "sparse"]
                if fusion == "rrf":
                    assert c == pytest.approx(0.0 if rank is None else w / (d.settings["rrf_k"] + rank))
                else:
                    assert (c == 0.0) if rank is None else (0.0 <= c <= w + 1e-12)


def test_the_table_scores_what_the_pipeline_ranks(demo_ws):
    from retrieval.eval.adaptive import configured_share, share_table, signal_matrix
    from retrieval.metrics import ndcg_at_k
    from retrieval.pipeline.adaptive import RULE_STRENGTHS

    def score(ranked, q):
        return ndcg_at_k(ranked, q.qrels, 10)

    runs = run_queries(demo_ws.retriever(preset="hybrid", fact_store=None), load_judgments(JUDGMENTS)[:20])
    table, signals = share_table(runs, score), signal_matrix(runs)
    share0 = np.array([configured_share(r) for r in runs])
    looked_up = score_strengths(table, signals, share0, np.array([[getattr(RULE_STRENGTHS, k) for k in RULES]]))
    piped = [score(credited_ids(reweight(r.result, adaptive=True), "final"), r.q) for r in runs]
    assert looked_up[:, 0] == pytest.approx(piped)


# ---------------------------------------------------------------- the knob everywhere
def test_settings_and_config_take_only_a_bool():
    assert resolve_settings("hybrid", overrides={"adaptive": True}).adaptive is True
    with pytest.raises(ValueError, match="adaptive"):
        resolve_settings("hybrid", overrides={"adaptive": "yes"})
    cfg = PipelineConfig().with_(adaptive=True)
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    old = {"preset": "hybrid", "fusion": "convex", "dense_weight": 0.5}  # a file exported before the switch existed
    assert PipelineConfig.from_json(json.dumps(old)).settings.adaptive is False
    with pytest.raises(ValueError, match="adaptive"):
        PipelineConfig.from_json(json.dumps({**old, "adaptive": "false"}))
    with pytest.raises(ValueError, match="adaptive='maybe' must be true or false"):  # the current shape
        PipelineConfig.from_json(json.dumps({"settings": "adaptive=maybe"}))
    assert "adaptive" in cfg.fusion_knobs() and cfg.search_key() == PipelineConfig().search_key()  # a re-fusion


def test_a_link_round_trips_adaptive_and_an_old_link_leaves_it_off():
    params = write_link("i_", PipelineConfig().with_(adaptive=True), "q", None)
    assert params["i_settings"].endswith(" adaptive=true")
    link = read_link(params, "i_", [])
    assert link.config["adaptive"] is True and not link.ignored
    old = {"i_q": "q", "i_dense_weight": "0.5", "i_adaptive": "true"}  # a link from before the settings field
    assert read_link(old, "i_", []).config["adaptive"] is True
    del old["i_adaptive"]
    assert "adaptive" not in read_link(old, "i_", []).config
    bad = read_link({**old, "i_adaptive": "maybe"}, "i_", [])
    assert "adaptive" not in bad.config and bad.ignored[0].param == "i_adaptive"
    bad = read_link({**params, "i_settings": "adaptive=maybe"}, "i_", [])
    assert "adaptive" not in bad.config and bad.ignored[0].why == "adaptive='maybe' must be true or false"


def test_cli_query_prints_the_adapted_weights(tmp_path, capsys):
    from retrieval.cli.main import main

    db = str(tmp_path / "db")
    copy_demo(db)  # what `build-demo --embedder hashing` builds (tests/demostore.py: built once a run)
    assert main(["query", TICKET, "--db", db, "--embedder", "hashing", "--scope", "user:priya", "--adaptive"]) == 0
    out = capsys.readouterr().out
    assert "adaptive weights: sparse 0." in out and "the query holds the identifier FX-209847" in out
    assert main(["query", TICKET, "--db", db, "--embedder", "hashing", "--scope", "user:priya", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["adaptive"] is None
    assert main(["query", TICKET, "--db", db, "--embedder", "hashing", "--scope", "user:priya", "--json",
                 "--adaptive"]) == 0
    a = json.loads(capsys.readouterr().out)["adaptive"]  # the adapted strategy as its canonical string, parsed back
    fusion = RetrievalSettings.parse(f"fusion={a['fusion']}").strategy
    assert fusion.weights == (a["dense_weight"], a["sparse_weight"]) and a["sparse_weight"] > 0.5
    # `adapt`: the rule strengths learned from the demo case's grades, with the held-out effect, as JSON
    assert main(["adapt", "--db", db, "--embedder", "hashing", "--case", "demo", "--resamples", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queries"] == out["tune"] + out["held_out"] == len(load_judgments(JUDGMENTS))
    assert set(out["learned"]["strengths"]) == set(RULES) and "vs_fixed" in out["learned"]
    assert out["oracle_share"] >= max(out["rules"]["fixed"], out["rules"]["adaptive"])  # the per-query best bounds both
    assert main(["adapt", "--db", db, "--embedder", "hashing"]) == 2  # neither --case nor --dataset
    assert "give --case NAME" in capsys.readouterr().err


def test_the_reason_is_shown_as_typed_wherever_it_goes():
    from ui.charts import rank_flow_figure
    from ui.derive import adaptive_sentence
    from ui.text import plain, plotly_plain

    query = "ticket my_code_x <b>%{y}</b>"
    a = adapt(_record(query, {}, 0, [0.5, 0.45], [5.0, 4.0]), RRF(weights=(0.5, 0.5)))
    assert a["reasons"][0] == "the query holds the identifier my_code_x"  # underscores read as Markdown
    sentence = adaptive_sentence(a)
    assert plain("; ".join(a["reasons"])) in sentence and "my_code_x" not in sentence  # escaped: my\_code\_x
    assert sentence.startswith("**Adaptive weights**: dense 0.3 / sparse 0.7 for this query (set: dense 0.5")
    title = rank_flow_figure({"final": ["x"]}, note="Adaptive weights: " + a["summary"]).layout.title.text
    assert title.endswith("Adaptive weights: sparse 0.7: the query holds the identifier my_code_x</span>")
    title = rank_flow_figure({"final": ["x"]}, note="<b>%{y}</b>").layout.title.text
    assert plotly_plain("<b>%{y}</b>") in title and "<b>%{y}" not in title  # no tag, no substitution
    assert rank_flow_figure({"final": ["x"]}).layout.title.text.endswith("click a point to explain it")


# ---------------------------------------------------------------- learned strengths in the store
def test_learned_strengths_are_recorded_used_and_undone(tmp_path):
    from retrieval.pipeline.adaptive import MAX_STEP
    from retrieval.workspace.retrievers import build_retriever
    from retrieval.store.adaptive import (KEY_ADAPTIVE, MAX_STRENGTH, RULE_NAMES, AdaptiveRecord, read_adaptive,
                                          undo_adaptive, write_adaptive)

    assert RULE_NAMES == RULES and MAX_STRENGTH == MAX_STEP  # the store's copy of the pipeline's rules
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(64), fact_extractor=None)
    ws.ingest(load_demo_traces())
    cfg = PipelineConfig().with_(adaptive=True, facts=False)
    shipped = build_retriever(ws, cfg).retrieve(TICKET, scope=PRIYA).diagnostics.adaptive
    assert read_adaptive(ws.store) is None and shipped["learned"] is False
    strengths = {"identifier": 0.2, "length": 0.0, "rarity": 0.0, "confidence": 0.0}  # an identifier leans dense
    rec = AdaptiveRecord(strengths, "demo", "tester", "2026-01-01T00:00:00+00:00", "ndcg@10", 0.5, 0.6,
                         {"delta": 0.1, "lo": 0.01, "hi": 0.2}, 45)
    write_adaptive(ws.store, rec)
    assert read_adaptive(ws.store) == rec
    res = build_retriever(ws, cfg).retrieve(TICKET, scope=PRIYA)
    a = res.diagnostics.adaptive
    assert a["learned"] is True and a["strengths"] == strengths and a["dense_weight"] > 0.5
    assert "Rule strengths learned" in __import__("ui.derive", fromlist=["x"]).adaptive_sentence(a)
    off = build_retriever(ws, cfg.with_(adaptive=False)).retrieve(TICKET, scope=PRIYA)
    assert off.diagnostics.adaptive is None  # recorded strengths change nothing while adaptive is off …
    assert reweight(off, adaptive=True).diagnostics.adaptive == a  # … and are the ones a re-fusion switches on
    assert undo_adaptive(ws.store) is None and read_adaptive(ws.store) is None
    with pytest.raises(ValueError, match="nothing|no learned"):
        undo_adaptive(ws.store)
    for bad in ('{"strengths": {"identifier": 5}}', "not json", json.dumps({**json.loads(rec.to_json()), "x": 1}),
                json.dumps({**json.loads(rec.to_json()), "strengths": {**strengths, "identifier": 0.9}})):
        ws.store.table().update_field_metadata({"path": ws.store.columns.vector, "metadata": {KEY_ADAPTIVE: bad}})
        assert read_adaptive(ws.store) is None  # untrusted: ignored, never applied
        assert build_retriever(ws, cfg).retrieve(TICKET, scope=PRIYA).diagnostics.adaptive == shipped


def test_adapt_records_a_case_only_with_a_held_out_gain(tmp_path, capsys):
    from retrieval.cli.main import main
    from retrieval.store.adaptive import read_adaptive

    db = str(tmp_path / "db")
    copy_demo(db)  # what `build-demo --embedder hashing` builds (tests/demostore.py: built once a run)
    assert main(["adapt", "--db", db, "--embedder", "hashing", "--case", "demo", "--resamples", "300"]) == 0
    text = capsys.readouterr().out
    recorded = read_adaptive(Workspace(db, embedder=HashingEmbedder(384)).store)
    if "recorded: learned from case 'demo'" in text:  # the held-out interval was above zero
        assert recorded is not None and recorded.interval["lo"] > 0
        assert main(["adapt", "--db", db, "--embedder", "hashing", "--undo"]) == 0
    else:
        assert "not recorded" in text and recorded is None
        assert main(["adapt", "--db", db, "--embedder", "hashing", "--undo"]) == 2


def test_the_confidence_reason_names_the_side_surer_of_its_first_even_when_a_learned_strength_is_negative():
    from retrieval.pipeline.adaptive import Features, _reason

    sure_bm25 = Features((), 6, None, None, None, 0, dense_gap=0.02, sparse_gap=0.8)
    signal = sure_bm25.signals()["confidence"]
    assert signal < 0
    assert _reason("confidence", sure_bm25, signal, shift=0.1 * signal) == "BM25's #1 leads its #2 by 80%"
    learned = _reason("confidence", sure_bm25, signal, shift=-0.2 * signal)  # toward dense: away from the surer
    assert learned.startswith("BM25's #1 leads its #2 by 80%") and "learned: the surer side gives weight" in learned


def test_adapt_undo_refuses_in_demo_mode_and_writes_nothing(tmp_path, capsys, monkeypatch):
    from retrieval.cli.main import main
    from retrieval.store.adaptive import AdaptiveRecord, read_adaptive, write_adaptive

    db = str(tmp_path / "db")
    ws = Workspace(db, embedder=HashingEmbedder(64), fact_extractor=None)
    ws.ingest(load_demo_traces()[:5])
    rec = AdaptiveRecord({"identifier": 0.1, "length": 0.0, "rarity": 0.0, "confidence": 0.0}, "demo", "tester",
                         "2026-01-01T00:00:00+00:00", "ndcg@10", 0.5, 0.6, {"delta": 0.1, "lo": 0.01, "hi": 0.2}, 45)
    write_adaptive(ws.store, rec)
    monkeypatch.setenv("RETRIEVAL_MODE", "demo")
    assert main(["adapt", "--undo", "--db", db, "--embedder", "hashing"]) == 2
    assert "demo mode" in capsys.readouterr().err
    assert read_adaptive(Workspace(db, embedder=HashingEmbedder(64)).store) == rec
