"""Label-free calibration: pseudo-queries, the criterion, the store record and its undo, the CLI, Tune's button."""
from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.eval.calibrate import (MAX_WORDS, MIN_PHRASE, MIN_WORDS, calibrate, crop_phrase, decide,
                                      pseudo_queries, same_setting, sample_traces)
from retrieval.eval.lab import Candidate, CandidateScore, LabResult
from retrieval.models import HashingEmbedder
from retrieval.fusion import RRF, Convex
from retrieval.store.calibration import (KEY_CALIBRATION, CalibrationRecord, calibrated_knobs,
                                         read_calibration, read_previous, undo_calibration, write_calibration)
from retrieval.types import MemoryTrace, Scope

T0 = datetime(2024, 1, 1, tzinfo=UTC)
EDGE = re.compile(r"^\W+|\W+$")


def _norm(words):
    return [EDGE.sub("", w) for w in words]


def _is_subsequence(small, big) -> bool:
    it = iter(big)
    return all(any(w == b for b in it) for w in small)


words = st.text(alphabet="abcdefghijklmnop", min_size=1, max_size=8)
sentence = st.lists(words, min_size=1, max_size=20).map(lambda ws: " ".join(ws) + ".")


@settings(max_examples=200, deadline=None)
@given(st.lists(sentence, min_size=1, max_size=6), st.integers(0, 10_000), st.sampled_from([0.0, 0.25, 0.5]))
def test_a_cropped_phrase_is_a_shorter_ordered_part_of_its_trace(sentences, seed, drop):
    text = " ".join(sentences)
    phrase = crop_phrase(text, random.Random(seed), drop=drop)
    again = crop_phrase(text, random.Random(seed), drop=drop)
    assert phrase == again  # deterministic for a seed
    if phrase is None:
        return
    got, source = _norm(phrase.split()), _norm(text.split())
    assert MIN_PHRASE - 1 <= len(got) <= MAX_WORDS  # an edge word of punctuation only may be stripped
    assert len(got) < len(source)  # never the whole trace
    assert _is_subsequence(got, source)


def test_a_middle_sentence_is_cropped_not_the_first_or_last():
    text = "Title words here now. Middle sentence holds the phrase we want. Closing words are here too."
    for seed in range(20):
        phrase = crop_phrase(text, random.Random(seed), drop=0.0)
        assert set(phrase.split()) <= set(["Middle", "sentence", "holds", "the", "phrase", "we", "want"])


def test_a_tiny_trace_gives_no_phrase():
    assert crop_phrase("too short", random.Random(0)) is None
    assert crop_phrase("", random.Random(0)) is None


def _trace(i: int, scope_id: str, n_words: int = 20, active: bool = True) -> MemoryTrace:
    return MemoryTrace(id=f"{scope_id}-{i}", content=" ".join(f"w{i}x{j}" for j in range(n_words)) + ".",
                       scope="user", scope_id=scope_id, created_at=T0 + timedelta(hours=i), is_active=active)


def test_sampling_spreads_over_scopes_and_skips_tiny_and_inactive_traces():
    traces = ([_trace(i, "big") for i in range(100)] + [_trace(i, "small") for i in range(3)]
              + [_trace(i, "tiny", n_words=MIN_WORDS - 1) for i in range(50)]
              + [_trace(i, "off", active=False) for i in range(50)])
    got = sample_traces(traces, 10, seed=1)
    by = {s: sum(t.scope_id == s for t in got) for s in ("big", "small", "tiny", "off")}
    assert by == {"big": 7, "small": 3, "tiny": 0, "off": 0}  # round-robin: every small-scope trace, then the rest
    assert sample_traces(traces, 10, seed=1) == got
    assert {t.scope_id for t in sample_traces(traces, 5, scope=Scope("user", "small"))} == {"small"}


def test_pseudo_queries_name_their_source_as_the_one_relevant_trace():
    traces = [_trace(i, f"u{i % 3}") for i in range(30)]
    qs = pseudo_queries(traces, 12, seed=0)
    src = {t.id: t for t in traces}
    assert len(qs) == 12
    for q in qs:
        tid = q.qid.removeprefix("calib:")
        assert q.qrels == {tid: 1.0} and q.scope == Scope("user", src[tid].scope_id)
        assert q.query != src[tid].content


def test_a_question_writer_is_used_and_a_failing_one_keeps_the_phrase():
    traces = [_trace(i, "u") for i in range(12)]
    plain = pseudo_queries(traces, 5, seed=0)
    asked = pseudo_queries(traces, 5, seed=0, question_writer=lambda p: f"what about {p}?\nignored line")
    assert [q.query for q in asked] == [f"what about {q.query}?" for q in plain]

    def broken(_):
        raise RuntimeError("model gone")

    assert [q.query for q in pseudo_queries(traces, 5, seed=0, question_writer=broken)] == [q.query for q in plain]
    assert [q.query for q in pseudo_queries(traces, 5, seed=0, question_writer=lambda p: "")] == \
        [q.query for q in plain]


# ---------------------------------------------------------------- the criterion
def _lab(base: list[float], best: list[float], best_c: Candidate) -> LabResult:
    halves = tuple("held-out" if i % 2 else "tune" for i in range(len(base)))
    base_c = Candidate.of("convex", 0.5, 10, "theoretical")
    mean = lambda vs, h: sum(v for v, x in zip(vs, halves) if x == h) / max(1, halves.count(h))
    score = lambda c, vs: CandidateScore(c, mean(vs, "tune"), mean(vs, "held-out"), sum(vs) / len(vs))
    b = score(best_c, best)
    return LabResult("ndcg@10", (b,), b, score(base_c, base), (), None, (tuple(best),), tuple(base), halves)


def test_the_default_is_kept_when_the_interval_includes_zero():
    rng = random.Random(0)
    base = [rng.random() for _ in range(60)]
    best = [v + (0.05 if i % 4 == 1 else -0.05 if i % 4 == 3 else 0.3) for i, v in enumerate(base)]  # tune-only gain
    iv, adopt = decide(_lab(base, best, Candidate.of("rrf", 0.4, 10)), resamples=2000)
    assert iv.lo <= 0 <= iv.hi and not adopt


def test_a_winner_is_adopted_only_with_an_interval_above_zero():
    base = [0.5] * 60
    best = [0.5 + (0.1 if i % 3 else 0.0) for i in range(60)]
    iv, adopt = decide(_lab(base, best, Candidate.of("rrf", 0.4, 10)), resamples=2000)
    assert iv.lo > 0 and adopt
    # the same setting as the default (k means nothing to convex) is never "adopted", however it scores
    _, again = decide(_lab(base, best, Candidate.of("convex", 0.5, 60, "theoretical")), resamples=2000)
    assert not again and same_setting(Candidate.of("convex", 0.5, 60, "theoretical"),
                                      Candidate.of("convex", 0.5, 10, "theoretical"))


# ---------------------------------------------------------------- a store: record, undo, defaults
def _write_store(path: str, n: int = 90, dim: int = 2):
    """Synthetic traces whose dense side is nearly useless (2-d hashing): BM25-heavy fusion wins clearly."""
    from retrieval.workspace.core import Workspace

    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(400)]
    sent = lambda: " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 10))) + "."
    traces = [MemoryTrace(id=f"t{i}", content=" ".join(sent() for _ in range(3)), scope="user",
                          scope_id=f"u{i % 3}", created_at=T0 + timedelta(hours=i)) for i in range(n)]
    ws = Workspace(path, embedder=HashingEmbedder(dim), fact_extractor=None)
    ws.ingest(traces)
    return ws


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    ws = _write_store(str(tmp_path_factory.mktemp("calib") / "db"))
    return ws, calibrate(ws.store, ws.bm25, sample=60, resamples=2000)


def test_calibration_on_a_store_states_its_criterion_and_reports_progress(calibrated, tmp_path):
    ws, res = calibrated
    assert res.adopt and res.interval.lo > 0 and res.winner.dense_weight < 0.5  # BM25-heavy beats a useless dense
    assert res.verdict.startswith(f"{res.winner.label} beats the default")
    assert res.queries == 60 and res.scopes == 3 and res.clock["mode"] == "end"
    seen = []
    calibrate(ws.store, ws.bm25, sample=12, resamples=200, progress=lambda f, t: seen.append(f))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    with pytest.raises(ValueError, match="at least 10 pseudo-queries"):
        calibrate(ws.store, ws.bm25, sample=5)
    with pytest.raises(ValueError, match="calibration needs 10 or more"):
        calibrate(ws.store, ws.bm25, sample=50, scope=Scope("user", "nobody"))


def test_record_undo_round_trip_and_the_retriever_uses_it(calibrated):
    ws, res = calibrated
    ident = ws.store.identity()
    assert read_calibration(ws.store) is None and calibrated_knobs(ws.store) == {}
    first = res.record(by="tester")
    write_calibration(ws.store, first)
    assert read_calibration(ws.store) == first and read_previous(ws.store) is None
    assert ws.store.identity() == ident  # the analyser and embedder beside it are untouched
    r = ws.retriever()
    assert (r.defaults["fusion"], r.defaults["dense_weight"]) == (first.fusion.name, first.fusion.weights[0])
    explicit = ws.retriever(default_dense_weight=0.9, default_sparse_weight=0.1)
    # explicit wins, unmixed
    assert explicit.defaults["dense_weight"] == 0.9 and explicit.defaults["fusion"] == "convex"
    assert explicit.defaults["normalization"] == "theoretical"
    assert ws.retriever(preset="agentos").defaults["fusion"] == "rrf"  # agentos stays exact
    second = CalibrationRecord(**{**first.__dict__, "label": "RRF k=10, dense 0.3",
                                  "fusion": "rrf(dense_weight=0.3,sparse_weight=0.7,rrf_k=10.0)"})
    assert second.fusion == RRF(k=10, weights=(0.3, 0.7))
    write_calibration(ws.store, second)
    assert read_calibration(ws.store) == second and read_previous(ws.store) == first
    assert undo_calibration(ws.store) == first and read_previous(ws.store) is None
    assert undo_calibration(ws.store) is None and read_calibration(ws.store) is None
    with pytest.raises(ValueError, match="no calibration to undo"):
        undo_calibration(ws.store)
    assert ws.retriever().defaults["fusion"] == "convex" and ws.retriever().defaults["dense_weight"] == 0.5


@pytest.mark.parametrize("value", ["{not json", json.dumps({"fusion": "magic"}), json.dumps([1, 2]),
                                   json.dumps({"fusion": "rrf", "extra": 1})])
def test_a_tampered_record_is_ignored_not_applied(calibrated, value):
    ws, res = calibrated
    rec = res.record(by="tester")
    bad = value if "magic" not in value else json.dumps({**json.loads(rec.to_json()), "fusion": "magic"})
    ws.store.table().update_field_metadata({"path": "vector", "metadata": {KEY_CALIBRATION: bad}})
    try:
        assert read_calibration(ws.store) is None and calibrated_knobs(ws.store) == {}
        assert ws.retriever().defaults["dense_weight"] == 0.5
    finally:
        ws.store.table().update_field_metadata({"path": "vector", "metadata": {KEY_CALIBRATION: None}})


def test_a_record_validates_its_fusion_by_the_strategys_declarations():
    base = dict(fusion="rrf(dense_weight=0.4,sparse_weight=0.6,rrf_k=10.0)", label="x", by="me",
                at="2026-01-01T00:00:00+00:00", metric="ndcg@10", default_score=0.5, score=0.6)
    for bad, message in (("rrf(dense_weight=1.5,sparse_weight=0.6,rrf_k=10.0)", "dense_weight=1.5 must be"),
                         ("rrf(rrf_k=0)", "rrf_k=0.0 must be a number > 0"), ("sum", "fusion='sum' is unknown"),
                         ("rrf(normalization=minmax)", "'normalization=minmax' is not one of its parameters"),
                         ("dbsf(dense_weight=0,sparse_weight=0)", "both 0"), (3, "is not a fusion strategy")):
        with pytest.raises(ValueError, match=re.escape(message)):
            CalibrationRecord(**{**base, "fusion": bad})
    with pytest.raises(ValueError, match="hybrid preset"):
        CalibrationRecord(**{**base, "preset": "agentos"})
    rec = CalibrationRecord(**base)
    assert rec.describe() == "x (2026-01-01)" and rec.fusion == RRF(k=10, weights=(0.4, 0.6))
    assert json.loads(rec.to_json())["fusion"] == "rrf(dense_weight=0.4,sparse_weight=0.6,rrf_k=10.0)"
    assert CalibrationRecord.from_json(rec.to_json()) == rec


OLD_SHAPE = {"fusion": "convex", "normalization": "theoretical", "dense_weight": 0.4, "sparse_weight": 0.6,
             "rrf_k": 10.0, "label": "convex theoretical, dense 0.4", "by": "me", "at": "2026-01-01T00:00:00+00:00",
             "metric": "ndcg@10 (held-out pseudo-queries)", "default_score": 0.5, "score": 0.6,
             "interval": {"delta": 0.1, "lo": 0.02, "hi": 0.18, "n": 40, "confidence": 0.95},
             "sample": {"queries": 40, "seed": 0}, "preset": "hybrid"}


def test_a_record_written_in_the_old_shape_is_read_into_the_one_value(calibrated):
    ws, _ = calibrated
    rec = CalibrationRecord.from_json(json.dumps(OLD_SHAPE))
    assert rec.fusion == Convex(normalization="theoretical", weights=(0.4, 0.6))
    assert rec.knobs() == {"fusion": "convex", "dense_weight": 0.4, "sparse_weight": 0.6,
                           "normalization": "theoretical"}
    assert (rec.label, rec.interval["lo"], rec.sample) == (OLD_SHAPE["label"], 0.02, OLD_SHAPE["sample"])
    with pytest.raises(ValueError, match="dense_weight=7 must be"):  # the value as written
        CalibrationRecord.from_json(json.dumps({**OLD_SHAPE, "dense_weight": 7}))
    ws.store.table().update_field_metadata({"path": "vector", "metadata": {KEY_CALIBRATION: json.dumps(OLD_SHAPE)}})
    try:  # an old store's record still applies
        assert read_calibration(ws.store) == rec
        r = ws.retriever()
        assert (r.defaults["fusion"], r.defaults["dense_weight"], r.default_rrf_k) == ("convex", 0.4, 10)
    finally:
        ws.store.table().update_field_metadata({"path": "vector", "metadata": {KEY_CALIBRATION: None}})


# ---------------------------------------------------------------- CLI
def test_cli_calibrate_records_reports_and_undoes(tmp_path, capsys):
    from retrieval.cli.main import main

    db = str(tmp_path / "db")
    _write_store(db)
    assert main(["calibrate", "--db", db, "--sample", "60", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["adopt"] and out["dry_run"] and not out["recorded"] and out["interval"]["lo"] > 0
    from retrieval.store.memory import MemoryStore

    assert read_calibration(MemoryStore(db)) is None  # a dry run records nothing
    assert main(["calibrate", "--db", db, "--sample", "60"]) == 0
    text = capsys.readouterr().out
    assert "recorded: the store's hybrid defaults are now" in text and "calibrate --undo" in text
    rec = read_calibration(MemoryStore(db))
    assert rec is not None and rec.label == out["winner_label"] and rec.sample["queries"] == 60
    assert main(["query", "w1 w2", "--db", db, "--scope", "user:u0", "--json"]) == 0  # the query uses it
    capsys.readouterr()
    assert main(["calibrate", "--db", db, "--undo"]) == 0
    assert "the hybrid preset’s fixed defaults" in capsys.readouterr().out
    assert main(["calibrate", "--db", db, "--undo"]) == 2
    assert "no calibration to undo" in capsys.readouterr().err
    assert main(["calibrate", "--db", db, "--sample", "3"]) == 2
    assert "at least 10 pseudo-queries" in capsys.readouterr().err


def test_cli_query_takes_the_calibrated_defaults_unless_a_fusion_flag_is_given():
    from retrieval.cli.main import build_parser, config_from_args

    cal = RRF(k=20, weights=(0.3, 0.7))  # the store's calibrated strategy, as the record holds it
    args = build_parser().parse_args(["query", "x"])
    assert config_from_args(args, cal).settings.strategy is cal
    assert config_from_args(args).settings["fusion"] == "convex"
    args = build_parser().parse_args(["query", "x", "--dense-weight", "0.8"])
    cfg = config_from_args(args, cal)
    assert cfg.settings.strategy == Convex(normalization="theoretical", weights=(0.8, 0.5))


# ---------------------------------------------------------------- Tune's button
def test_tune_calibrates_records_and_undoes(tmp_path, monkeypatch):
    from apphelpers import open_page
    from ui.text import plain

    db = str(tmp_path / "db")
    _write_store(db)
    monkeypatch.setenv("RETRIEVAL_DB", db)
    monkeypatch.delenv("RETRIEVAL_EMBEDDER", raising=False)  # the embedder the store records (2-d hashing)
    at = open_page("pages/4_Tune.py", 120)
    assert any("not calibrated" in c.value for c in at.caption)
    from ui.glossary import explain

    said = [c.value for c in at.caption if explain("nDCG@10") in c.value]  # its own caption, not a run-on
    assert said == [explain("nDCG@10")], said
    at.number_input(key="cal_sample").set_value(60).run()
    at.button(key="cal_run").click().run(timeout=120)
    assert not at.exception
    res = at.session_state["cal_result"]
    table = [d.value for d in at.dataframe if "95 % interval" in d.value.columns][0]
    assert table["95 % interval"].iloc[1] == f"[{res.interval.lo:+.4f}, {res.interval.hi:+.4f}]"
    assert any(s.value.startswith(plain(res.winner.label)) for s in at.success)
    at.button(key="cal_record").click().run()
    assert not at.exception
    from retrieval.store.memory import MemoryStore

    rec = read_calibration(MemoryStore(db))
    assert rec is not None and rec.label == res.winner.label
    assert at.session_state["t_dense_weight"] == rec.fusion.weights[0]
    assert at.session_state["i_fusion"] == rec.fusion.name
    line = plain(f"calibrated: {rec.describe()}")  # the caption escapes Markdown
    assert any(line in c.value for c in at.caption)
    home = open_page(None, 60)
    assert any(line in c.value for c in home.caption)
    at.button(key="cal_undo").click().run()
    assert not at.exception and read_calibration(MemoryStore(db)) is None
    assert any(s.value.startswith("Undone") for s in at.success)


# ---------------------------------------------------------------- the lab's intervals and its RRF grid
def test_lab_interval_pairs_the_held_out_queries_and_the_grid_is_the_labs_own():
    from retrieval.metrics import paired_bootstrap

    base = [0.1 * (i % 7) for i in range(40)]
    best = [v + (0.2 if i % 5 else -0.1) for i, v in enumerate(base)]
    lab = _lab(base, best, Candidate.of("rrf", 0.4, 10))
    held = [i for i in range(40) if i % 2]
    want = paired_bootstrap([base[i] for i in held], [best[i] for i in held], resamples=500)
    assert lab.interval(resamples=500) == want
    assert lab.interval(half=None, resamples=500) == paired_bootstrap(base, best, resamples=500)
    cells = [CandidateScore(Candidate.of("rrf", w, k), tune=w * 10 + k, held_out=0.0, all=0.0)
             for w in (0.3, 0.6) for k in (5, 60)] + [CandidateScore(Candidate.of("convex", 0.5), 9.0, 0.0, 0.0)]
    grid = LabResult("ndcg@10", tuple(cells), cells[0], cells[0], ())
    assert grid.rrf_cells() == ([0.3, 0.6], [5, 60], [[8.0, 63.0], [11.0, 66.0]])
    with pytest.raises(ValueError, match="no query in the held-out half"):
        LabResult("ndcg@10", (cells[0],), cells[0], cells[0], (), None, ((1.0,),), (0.0,), ("tune",)).interval()


def test_rare_mode_leaves_out_the_rarest_words_of_the_phrase():
    from retrieval.eval.calibrate import doc_freq

    traces = [MemoryTrace(id=f"d{i}", content=f"the cat sat on mat number {i} today", scope="user", scope_id="u",
                          created_at=T0) for i in range(5)]
    df = doc_freq(traces)
    assert df["the"] == 5 and df["0"] == 1
    text = "the cat alpha beta gamma delta sat on mat today"  # any 8-word window holds alpha and beta
    df = {"alpha": 1, "beta": 2, "gamma": 9, "delta": 9, "the": 9, "cat": 9, "sat": 9, "on": 9, "mat": 9, "today": 9}
    phrase = crop_phrase(text, random.Random(0), max_words=8, drop=0.25, df=df)
    kept = phrase.split()
    assert len(kept) == 6 and "alpha" not in kept and "beta" not in kept  # the two rarest of the window went
    assert "gamma" in kept and "delta" in kept
