"""How the `hybrid` preset's defaults were chosen: a grid on development data only.

For each switch the preset has (rank completion on/off) and each fusion setting (dense weight,
sparse = 1 − dense; RRF k), the final-list metric on LoCoMo conversations 1–5 (evidence recall@10)
and on the demo judgments (nDCG@10). SciFact is a reported test set and is not used here.

Run: .venv/bin/python scripts/choose_hybrid_defaults.py --locomo ../shared/eval/locomo-dev/locomo-dev.json
     [--out docs/eval/hybrid-choice.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from retrieval.pipeline.presets import AGENTOS_PRESET, HYBRID_PRESET  # noqa: E402
from retrieval.cli.eval import open_eval_workspace  # noqa: E402
from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.metrics import evidence_recall_at_k, mean, ndcg_at_k  # noqa: E402
from retrieval.eval.runner import credited_ids  # noqa: E402

WEIGHTS = [0.3, 0.4, 0.5, 0.6, 0.7]
KS = [5, 10, 20, 60]


def grid(spec: str, metric_name: str, cache_dir: str) -> dict:
    name, traces, queries = load_dataset(spec)
    ws = open_eval_workspace(name, traces, cache_dir, log=lambda m: print(m, file=sys.stderr))

    def metric(ids, q):
        if metric_name == "recall@10":
            return evidence_recall_at_k(ids, list(q.qrels), 10)
        return ndcg_at_k(ids, q.qrels, 10)

    out = {"dataset": spec, "metric": metric_name, "weights": WEIGHTS, "ks": KS, "grids": {}}
    # Variants are new frozen presets passed to the retriever; nothing global changes.
    variants = {"agentos": AGENTOS_PRESET, "hybrid": replace(HYBRID_PRESET, complete_ranks=False),
                "hybrid+completion": replace(HYBRID_PRESET, complete_ranks=True)}
    for label, preset in variants.items():
        r = ws.retriever(preset=preset, fact_store=None)
        runs = [(q, r.retrieve(q.query, scope=q.scope, recall_top_k=10)) for q in queries]
        out["grids"][label] = [[round(mean([metric(credited_ids(r.reweight(x, dense_weight=w, sparse_weight=1 - w,
                                                                            rrf_k=k), "final"), q)
                                            for q, x in runs]), 4) for k in KS] for w in WEIGHTS]
        print(label, out["grids"][label], file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--cache-dir", default=".cache/eval")
    ap.add_argument("--out", default="docs/eval/hybrid-choice.json")
    args = ap.parse_args()
    res = {"locomo": grid(f"locomo:{args.locomo}", "recall@10", args.cache_dir),
           "demo": grid("demo", "ndcg@10", args.cache_dir)}
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
