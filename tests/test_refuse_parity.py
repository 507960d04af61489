"""The browser's re-fusion (ui/refuse/fuse.mjs, run in node) equals the library's `assemble` (issue 35).

For each strategy, 1,200 random search records — ties, an empty side, one candidate, identical scores, huge and
tiny values, duplicates inside a list, ids named like Object's own properties ("toString", "__proto__"), facts, a
reranker with and without split-on-ambiguous, both presets, adaptive weights (queries with identifiers, short and
long, rare and common terms, the shipped and learned rule strengths) — are assembled by Python and, from
`refuse_payload`, by the JS twin, half of them at knobs other than the search's (a slider moved); the final lists
must have the same order and scores within 1e-9, for every registered strategy (DBSF: retrieval/fusion/dbsf.py,
μ ± 3σ per side, clipped).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from retrieval.fusion import FUSIONS, convex_fusion
from retrieval.pipeline.assemble import assemble
from retrieval.pipeline.adaptive import Strengths
from retrieval.pipeline.browser import refuse_payload, strategies
from retrieval.pipeline.records import RerankRecord, SearchRecord, frozen
from retrieval.pipeline.settings import resolve_settings
from retrieval.types import MemoryTrace, ScoredMemoryTrace

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CASES = 1200
if NODE is None and os.environ.get("CI") == "true":
    pytest.fail("node is not installed: the browser's fusion cannot be checked (CI must have it: `make ci-deps`)",
                pytrace=False)
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the parity test runs the JS in node)")


def scores_of(rng: random.Random, n: int) -> list[float]:
    kind = rng.choice(["plain", "ties", "same", "huge", "tiny", "mixed", "zeros"])
    if kind == "plain":
        return [rng.uniform(0, 30) for _ in range(n)]
    if kind == "ties":
        return [rng.choice([0.25, 0.5, 1.0, 3.0]) for _ in range(n)]
    if kind == "same":
        return [rng.uniform(0, 5)] * n
    if kind == "huge":
        return [rng.uniform(1, 9) * 10.0 ** rng.randint(250, 307) for _ in range(n)]
    if kind == "tiny":
        return [rng.uniform(1, 9) * 10.0 ** -rng.randint(300, 320) for _ in range(n)]
    if kind == "zeros":
        return [0.0] * n
    return [rng.choice([0.0, 1e-300, 5e-324, 1.0, 1e300, rng.random()]) for _ in range(n)]


def ranked(rng: random.Random, ids: list[str], n: int) -> list[tuple[str, float]]:
    n = min(n, len(ids))
    picked = rng.sample(ids, n)
    if n and rng.random() < 0.1:
        picked.append(rng.choice(picked))  # a repeated id inside one list
    pairs = list(zip(picked, scores_of(rng, len(picked))))
    return pairs if rng.random() < 0.15 else sorted(pairs, key=lambda p: -p[1])


def trace(i: str, score: float) -> ScoredMemoryTrace:
    return ScoredMemoryTrace(MemoryTrace(id=i, content=f"text of {i}"), score)


def random_record(rng: random.Random, names: tuple[str, ...] = ()) -> SearchRecord:
    ids = [f"t{j:02d}" for j in range(rng.choice([1, 2, 5, 12, 30]))] + list(names)
    side = lambda: rng.choice([0, 1, 1, 3, 8, 20])
    variants = rng.choice([1, 1, 1, 2])
    dense = [tuple(trace(i, s) for i, s in ranked(rng, ids, side())) for _ in range(variants)]
    sparse = [tuple(ranked(rng, ids, side())) for _ in range(variants)]
    in_dense = {t.id for lst in dense for t in lst}
    in_sparse = {i for lst in sparse for i, _ in lst}
    hydrated = {i: trace(i, s) for i, s in zip(sorted(in_sparse - in_dense), scores_of(rng, len(in_sparse)))
                if rng.random() < 0.8}
    bm25 = {i: s for i, s in zip(sorted(in_dense - in_sparse), scores_of(rng, len(in_dense)))}
    facts = tuple(trace(f"fact:{j}", rng.random()) for j in range(rng.choice([0, 0, 1, 2])))
    pool = sorted(in_dense | in_sparse | {f.id for f in facts})
    rerank = None
    if pool and rng.random() < 0.5:
        rs = dict(zip(pool, scores_of(rng, len(pool)) if rng.random() < 0.3 else [rng.random() for _ in pool]))
        cands = rng.sample(pool, min(3, len(pool)))
        split = {i: (rng.random(), rng.random()) for i in cands}
        rerank = RerankRecord(pool_ids=tuple(pool), scores=frozen(rs), split_candidate_ids=tuple(cands),
                              split_halves=frozen({i: ("a", "b") for i in cands}), split_scores=frozen(split))
    query = rng.choice(["q", "status of ticket FX-209847", "where do I live now", "BRCA1",
                        "what did we decide about the quarterly budget review meeting with the finance team last week",
                        "user_id v2.3 2023-05-01"])
    idf = {w: rng.choice([0.1, 1.0, 2.5, 7.0]) for w in query.split() if rng.random() < 0.7}
    return SearchRecord(query=query, search_queries=(query,) * variants if rng.random() > 0.02 else (), scope=None,
                        mood=None, qvec=None, dense_lists=tuple(dense), sparse_lists=tuple(sparse),
                        sparse_hydrated=frozen(hydrated), dense_bm25=frozen(bm25), fact_traces=facts, facts=(),
                        rerank=rerank, escalations=(), timings_ms=frozen(), over_fetch_top_k=10_000,
                        query_idf=frozen(idf), bm25_docs=rng.choice([0, 1, 2, 50, 5000]))


def random_settings(rng: random.Random, fusion: str):
    preset = "agentos" if fusion == "rrf" and rng.random() < 0.4 else "hybrid"
    dw = rng.randint(0, 20) * 0.05
    sw = rng.randint(1 if dw == 0 else 0, 20) * 0.05
    over = {"dense_weight": dw, "sparse_weight": sw, "rrf_k": rng.randint(1, 200),
            "rerank_weight": rng.randint(0, 20) * 0.05,
            "fusion": fusion, "normalization": rng.choice(["minmax", "theoretical", "zscore"])}
    s = resolve_settings(preset, overrides=over, recall_top_k=rng.randint(1, 25),
                         split_threshold=rng.choice([None, 0.5]))
    learned = None
    if rng.random() < 0.35:  # adaptive weights: the shipped rules, or a store's learned strengths
        learned = Strengths(*(rng.randint(-4, 4) * 0.05 for _ in range(4))) if rng.random() < 0.5 else None
        s = s.with_(adaptive=True)
    return s, learned


def run_node(cases: list[dict]) -> list[list[list]]:
    out = subprocess.run([NODE, str(ROOT / "tests" / "js" / "refuse_parity.mjs")], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)


def check(fusion: str, seed: int) -> None:
    rng = random.Random(seed)
    cases, expected = [], []
    for _ in range(CASES):
        rec = random_record(rng, ("toString", "constructor", "__proto__") if rng.random() < 0.1 else ())
        s, learned = random_settings(rng, fusion)
        result = assemble(rec, s, learned)
        payload = refuse_payload(result.diagnostics)
        if rng.random() < 0.5:  # a slider moved: the browser re-fuses the same payload under other knobs
            dw = rng.randint(0, 20) * 0.05
            moved = {"dense_weight": dw, "sparse_weight": rng.randint(1 if dw == 0 else 0, 20) * 0.05,
                     "rerank_weight": rng.randint(0, 20) * 0.05, "recall_top_k": rng.randint(1, 25)}
            if fusion == "rrf":
                moved["rrf_k"] = rng.randint(1, 200)
            result = assemble(rec, s.with_(**moved), learned)
        setting = refuse_payload(result.diagnostics)["setting"]  # the knobs as the panel holds them
        cases.append({"payload": payload, "setting": {**setting, "fusion": fusion}})
        expected.append([(t.id, t.retrieval_score) for t in result.traces])
    got = run_node(cases)
    for n, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert [i for i, _ in have] == [i for i, _ in want], (fusion, n, cases[n]["setting"])
        for (i, a), (_, b) in zip(want, have):
            assert abs(a - b) <= 1e-9, (fusion, n, i, a, b)


@pytest.mark.parametrize("fusion", ["rrf", "convex", "dbsf"])
def test_the_browser_fuses_as_the_library_does(fusion):
    check(fusion, seed={"rrf": 1, "convex": 2, "dbsf": 3}[fusion])


def test_dbsf_reference_is_mean_plus_minus_three_sigma_clipped():
    """The DBSF twin's reference: each side (s − (μ−3σ)) / 6σ clipped to [0, 1], then the weighted sum."""
    fused = convex_fusion([[("a", 1.0), ("b", 2.0), ("c", 3.0)], [("a", 5.0)]], weights=[0.5, 0.5],
                          normalization="zscore")
    # σ = 1 (sample), μ = 2: a → (1 − (−1)) / 6 = 1/3 on the dense side, 0.5 on the one-score side.
    assert {f.id: f.score for f in fused} == pytest.approx({"a": 0.5 / 3 + 0.25, "b": 0.25, "c": 0.5 * 4 / 6},
                                                           abs=1e-15)


def test_the_strategy_list_comes_from_the_library_and_each_has_a_browser_twin():
    names = [s["name"] for s in strategies()]
    assert names == list(FUSIONS) and {"rrf", "convex", "dbsf"} <= set(names)
    twins = (ROOT / "ui" / "refuse" / "fuse.mjs").read_text()
    assert all(f"  {n}: (" in twins for n in names), "every registered strategy needs its browser twin"
