"""Traces read in their context (issue 36): choosing the context setting and the fusion weight honestly.

LoCoMo dev (5 conversations, 997 questions, evidence recall@10 at the `end` clock): one store per context
setting (window × next × sides, at most `--max-chars` characters; plus the setting off), each built through the
Workspace exactly as a user's store would be (the context materialised in the rows), MiniLM embeddings cached
per distinct text (`--cache`). Every question runs once per store; the `hybrid` default is re-fused for each dense
weight of the one grid (no search). Leave-one-conversation-out: for each conversation, the (setting, dense weight)
with the best mean recall@10 over the other four is scored on it; the five held-out parts together are compared
with the setting off at today's default weight (paired bootstrap 95 % interval). The setting and weight chosen on
all five are reported with their BM25 and dense recalls (the hybrid must stay ahead of both sides).

No threads, no context: the demo set (nDCG@10) and, with `--scifact`, SciFact are run with the chosen setting
on and off; every ranking must be identical (the setting is a no-op without threads).

Run: HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_context.py \
        --locomo ../shared/eval/locomo-dev/locomo-dev.json --cache /tmp/issue36 --out docs/eval/context.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from typing import Any
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from retrieval.cli.eval import headline_metric  # noqa: E402
from retrieval.eval.clock import make_clock  # noqa: E402
from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.lab import DENSE_WEIGHTS  # noqa: E402
from retrieval.eval.runner import credited_ids, run_queries  # noqa: E402
from retrieval.hybrid import HybridRetriever  # noqa: E402
from retrieval.metrics import mean, paired_bootstrap  # noqa: E402
from retrieval.store.context import OFF, ContextSetting  # noqa: E402
from retrieval.workspace.core import Workspace  # noqa: E402

DEFAULT_WEIGHT = 0.5  # the hybrid preset's dense weight today


def log(m: str) -> None:
    print(m, file=sys.stderr, flush=True)


class CachedEmbedder:
    """MiniLM with every distinct text embedded once (kept in an .npz between runs); the store sees `minilm`."""

    def __init__(self, path: Path):
        from retrieval.models.registry import make_embedder

        self.inner = make_embedder("minilm")
        self.name, self.dim, self.path = self.inner.name, self.inner.dim, path
        self.memo: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as z:
                self.memo = dict(zip(z["keys"].tolist(), z["vecs"]))
        self.new = 0

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, texts):
        keys = [self.key(t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self.memo))
        if todo:
            by_key = {k: t for k, t in zip(keys, texts)}
            vecs = np.asarray(self.inner.embed([by_key[k] for k in todo]), dtype=np.float32)
            self.memo.update(zip(todo, vecs))
            self.new += len(todo)
        return np.stack([self.memo[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)

    def save(self) -> None:
        if self.new:
            keys = list(self.memo)
            np.savez(self.path, keys=np.asarray(keys), vecs=np.stack([self.memo[k] for k in keys]))
            self.new = 0


WINDOWS = ((1, False), (2, False), (3, False), (1, True))


def settings(max_chars: int, dense_windows: tuple[int, ...] = (1,)) -> dict[str, ContextSetting]:
    """Off; BM25-side context for every window (no embedding); dense and both sides for `dense_windows` only (each
    window costs one MiniLM pass over the corpus, minutes on this machine)."""
    out = {"off": OFF}
    for window, nxt in WINDOWS:
        for sides in ("bm25", "dense", "both"):
            if sides != "bm25" and (nxt or window not in dense_windows):
                continue
            s = ContextSetting(window=window, sides=sides, next=nxt, max_chars=max_chars)
            out[f"w{window}{'+next' if nxt else ''}/{sides}"] = s
    return out


def build(name: str, traces, setting: ContextSetting, emb: CachedEmbedder, cache: Path, clock) -> Workspace:
    uri = cache / name
    if uri.exists():
        shutil.rmtree(uri)
    ws = Workspace(str(uri), embedder=emb, clock=clock, fact_extractor=None)
    ws.store.new_context = setting
    t0 = time.perf_counter()
    ws.ingest(traces, extract_facts=False)
    if hasattr(emb, "save"):
        emb.save()
    log(f"  {name}: {len(traces)} traces in {time.perf_counter() - t0:.0f}s")
    return ws


def per_query(ws: Workspace, queries, clock, score) -> dict[str, list[float]]:
    """Recall@10 per question: dense, BM25, and the hybrid at every dense weight of the grid."""
    r = HybridRetriever(ws.store, bm25=ws.bm25, fact_store=None)
    runs = run_queries(r, queries, clock=clock)
    out = {"dense": [score(credited_ids(x.result, "dense"), x.q) for x in runs],
           "sparse": [score(credited_ids(x.result, "sparse"), x.q) for x in runs]}
    for w in DENSE_WEIGHTS:
        out[f"hybrid@{w:g}"] = [score(credited_ids(r.reweight(x.result, dense_weight=w, sparse_weight=1 - w),
                                                   "final"), x.q) for x in runs]
    out["final"] = [score(credited_ids(x.result, "final"), x.q) for x in runs]
    return out


def choose(scores: dict[str, dict[str, list[float]]], rows: list[int]) -> tuple[str, float]:
    """The (setting, dense weight) with the best mean hybrid recall@10 over `rows` (ties: off, lower weight)."""
    best = None
    for name, per in scores.items():
        for w in DENSE_WEIGHTS:
            m = mean([per[f"hybrid@{w:g}"][i] for i in rows])
            key = (round(m, 10), name == "off", -w)
            if best is None or key > best[0]:
                best = (key, name, w)
    assert best is not None
    return best[1], best[2]


def leave_one_out(scores, queries) -> dict:
    convs = sorted({q.scope.scope_id for q in queries})
    held = [0.0] * len(queries)
    folds = []
    for c in convs:
        test = [i for i, q in enumerate(queries) if q.scope.scope_id == c]
        train = [i for i, q in enumerate(queries) if q.scope.scope_id != c]
        name, w = choose(scores, train)
        for i in test:
            held[i] = scores[name][f"hybrid@{w:g}"][i]
        base = mean([scores["off"][f"hybrid@{DEFAULT_WEIGHT:g}"][i] for i in test])
        folds.append({"held_out": c, "questions": len(test), "chosen": name, "dense_weight": w,
                      "recall@10": round(mean([held[i] for i in test]), 4), "off_default": round(base, 4)})
        log(f"  fold {c}: chose {name} at dense weight {w:g}: {folds[-1]['recall@10']} (off: {base:.4f})")
    base = scores["off"][f"hybrid@{DEFAULT_WEIGHT:g}"]
    return {"folds": folds, "held_out_recall@10": round(mean(held), 4), "off_default_recall@10": round(mean(base), 4),
            "held_out_minus_off": paired_bootstrap(base, held).as_dict()}


def summary(scores, name: str, w: float) -> dict:
    per = scores[name]
    hyb = per[f"hybrid@{w:g}"]
    return {"setting": name, "dense_weight": w, "hybrid": round(mean(hyb), 4), "bm25": round(mean(per["sparse"]), 4),
            "dense": round(mean(per["dense"]), 4),
            "hybrid_minus_bm25": paired_bootstrap(per["sparse"], hyb).as_dict(),
            "hybrid_minus_dense": paired_bootstrap(per["dense"], hyb).as_dict()}


def locomo(path: str, cache: Path, max_chars: int, emb: CachedEmbedder, dense_windows: tuple[int, ...],
           labels: tuple[str, ...] = ()) -> dict:
    name, traces, queries = load_dataset(f"locomo:{path}")
    clock = make_clock("end", traces)
    _, score = headline_metric(True)
    emb.embed([q.query for q in queries])
    if hasattr(emb, "save"):
        emb.save()
    scores: dict[str, dict[str, list[float]]] = {}
    timing: dict[str, float] = {}
    for label, setting in settings(max_chars, dense_windows).items():
        if labels and label not in labels:
            continue
        saved = cache / "scores" / (label.replace("/", "-").replace("+", "_") + ".json")
        if saved.is_file():  # a run cut short keeps what it measured; the same store and queries give the same scores
            scores[label] = json.loads(saved.read_text())
            continue
        t0 = time.perf_counter()
        uri = cache / label.replace("/", "-").replace("+", "_")
        if uri.exists() and (uri / "traces.lance").exists():
            ws = Workspace(str(uri), embedder=emb, clock=clock, fact_extractor=None)  # built by an earlier run
        else:
            ws = build(uri.name, traces, setting, emb, cache, clock)
        timing[label] = round(time.perf_counter() - t0, 1)
        scores[label] = per_query(ws, queries, clock, score)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(scores[label]))
        log(f"  {label}: hybrid@0.5 {mean(scores[label]['hybrid@0.5']):.4f}  bm25 {mean(scores[label]['sparse']):.4f}"
            f"  dense {mean(scores[label]['dense']):.4f}")
    table = {k: {"bm25": round(mean(v["sparse"]), 4), "dense": round(mean(v["dense"]), 4),
                 **{f"hybrid@{w:g}": round(mean(v[f"hybrid@{w:g}"]), 4) for w in DENSE_WEIGHTS}}
             for k, v in scores.items()}
    loo = leave_one_out(scores, queries)
    chosen, w = choose(scores, list(range(len(queries))))
    return {"dataset": name, "questions": len(queries), "traces": len(traces), "metric": "evidence recall@10",
            "clock": "end", "max_chars": max_chars, "table": table, "leave_one_conversation_out": loo,
            "chosen_on_all": summary(scores, chosen, w), "off_default": summary(scores, "off", DEFAULT_WEIGHT),
            "setting_of": {k: v.to_text() for k, v in settings(max_chars, dense_windows).items() if k in scores},
            "build_seconds": timing}


def no_op(spec: str, setting: ContextSetting, cache: Path, emb) -> dict:
    """The chosen setting on a set without threads: every ranking identical to the setting off."""
    name, traces, queries = load_dataset(spec)
    clock = make_clock(None, traces)
    metric, score = headline_metric(False)
    ranked = {}
    for label, s in (("off", OFF), ("on", setting)):
        ws = build(f"{name}-{label}", traces, s, emb, cache, clock)
        r = HybridRetriever(ws.store, bm25=ws.bm25, fact_store=None)
        ranked[label] = [credited_ids(x.result, "final") for x in run_queries(r, queries, clock=clock)]
    same = sum(a == b for a, b in zip(ranked["off"], ranked["on"]))
    return {"dataset": name, "queries": len(queries), "metric": metric, "identical_rankings": same,
            metric: round(mean([score(ids, q) for ids, q in zip(ranked["off"], queries)]), 4),
            "threads": sum(t.thread is not None for t in traces)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--scifact", default=None, help="BEIR SciFact folder (optional: minutes of embedding)")
    ap.add_argument("--cache", default="/tmp/issue36")
    ap.add_argument("--noop-only", default=None, help="SETTING-JSON: only the no-op check of --scifact with the "
                    "hashing embedder (rankings on vs off; its nDCG is not MiniLM's), written to --out")
    ap.add_argument("--max-chars", type=int, default=300)
    ap.add_argument("--dense-windows", default="1", help="windows measured with dense and both sides, e.g. 1,2")
    ap.add_argument("--labels", default="", help="only these settings (comma-separated labels, e.g. off,w1/bm25)")
    ap.add_argument("--skip-noop", action="store_true", help="no demo no-op check")
    ap.add_argument("--out", default=str(ROOT / "docs" / "eval" / "context.json"))
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    if args.noop_only:
        from retrieval.models import HashingEmbedder

        row = no_op(f"beir:{args.scifact}", ContextSetting.from_text(args.noop_only), cache, HashingEmbedder(384))
        Path(args.out).write_text(json.dumps({"command": " ".join(["scripts/bench_context.py"] + sys.argv[1:]),
                                              "embedder": "hashing (384-d)", **row}, indent=2) + "\n")
        return 0
    emb = CachedEmbedder(cache / "minilm-cache.npz")
    t0 = time.perf_counter()
    out: dict[str, Any] = {"command": " ".join(["scripts/bench_context.py"] + sys.argv[1:]), "locomo": locomo(
        args.locomo, cache, args.max_chars, emb, tuple(int(w) for w in args.dense_windows.split(",") if w),
        tuple(x for x in args.labels.split(",") if x))}
    chosen = ContextSetting.from_text(out["locomo"]["setting_of"][out["locomo"]["chosen_on_all"]["setting"]])
    out["no_op"] = [] if args.skip_noop else [no_op("demo", chosen, cache, emb)]
    if args.scifact:
        out["no_op"].append(no_op(f"beir:{args.scifact}", chosen, cache, emb))
    out["seconds"] = round(time.perf_counter() - t0)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
