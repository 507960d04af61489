"""`python -m retrieval eval`: per-stage metrics for presets on BEIR, LoCoMo or the demo set.

The corpus is embedded once into a LanceDB store under --cache-dir and reused (a sweep re-fuses
cached stage lists and re-embeds nothing). `--clock now|end|ISO-TIME` sets the instant recency is
scored at (`retrieval.eval.clock`; default `end` for a dataset with real timestamps, else `now`), and
every JSON written records it.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from retrieval.cli.knobs import flag_knobs, settings_knobs
from retrieval.pipeline.config import PipelineConfig, generator_fields, reranker_fields
from retrieval.pipeline.settings import RetrievalSettings
from retrieval.pipeline.factory import RegistryModels
from retrieval.workspace.retrievers import build_retriever
from retrieval.hybrid import STAGES
from retrieval.eval.clock import EVAL_NOW, ClockSpec, ScopeClock, make_clock
from retrieval.eval.datasets import load_dataset
from retrieval.metrics import evidence_recall_at_k, mean, mrr, ndcg_at_k, recall_at_k
from retrieval.eval.lab import DENSE_WEIGHTS, RRF_KS  # the one grid (Tune's search, the lab)
from retrieval.eval.runner import credited_ids, run_queries, sweep



def open_eval_workspace(name: str, traces, cache_dir: str, embedder=None, log=print, clock=None):
    """The dataset's cached store; `clock` is the store's clock (default: the pinned `EVAL_NOW`)."""
    from retrieval.workspace.core import Workspace

    uri = Path(cache_dir) / name
    clock = clock or (lambda: EVAL_NOW)
    ws = Workspace(str(uri), embedder=embedder, clock=clock, fact_extractor=None)
    if ws.store.count() != len(traces) or _lost_threads(ws, traces):
        if uri.exists():
            shutil.rmtree(uri)
        ws = Workspace(str(uri), embedder=embedder, clock=clock, fact_extractor=None)
        t0 = time.perf_counter()
        last = [0.0]

        def progress(done, total):
            if time.perf_counter() - last[0] > 5 or done == total:
                last[0] = time.perf_counter()
                log(f"  embedded {done}/{total}")

        log(f"embedding {len(traces)} documents into {uri} (once; cached for later runs)")
        ws.ingest(traces, progress=progress, extract_facts=False)
        log(f"  done in {time.perf_counter() - t0:.0f}s")
    _as_new_store(ws, log)
    return ws


def _lost_threads(ws, traces) -> bool:
    """A cache built before traces carried their thread (LoCoMo sessions): rebuilt, so context can be read."""
    first = next((t for t in traces if t.thread is not None), None)
    stored = ws.store.get([first.id]) if first is not None else []
    return bool(stored) and stored[0].thread is None


def _as_new_store(ws, log) -> None:
    """An evaluation measures what a new store does: a cache made before today's defaults (or with other settings)
    is switched to the BM25 analyser and statistics a new store records (no re-embedding)."""
    from retrieval.store.identity import NEW_STORE_ANALYZER, NEW_STORE_STATISTICS

    ident = ws.store.identity()
    if ident.analyzer != NEW_STORE_ANALYZER:
        log(f"  cached store: BM25 analyser set to {NEW_STORE_ANALYZER!r}, as a new store records (rebuilding BM25)")
        ws.set_analyzer(NEW_STORE_ANALYZER)
    if ident.statistics != NEW_STORE_STATISTICS:
        log(f"  cached store: BM25 statistics set to {NEW_STORE_STATISTICS!r}, as a new store records")
        ws.set_bm25_statistics(NEW_STORE_STATISTICS)
    from retrieval.store.context import NEW_STORE_CONTEXT
    from retrieval.store.threads import setting_of

    if setting_of(ws.store) != NEW_STORE_CONTEXT:
        log(f"  cached store: context set to {NEW_STORE_CONTEXT.describe()}, as a new store records (re-indexing)")
        ws.set_context(NEW_STORE_CONTEXT)


def _metrics(ranked, q, locomo: bool) -> dict[str, float]:
    if locomo:
        ev = list(q.qrels)
        return {f"recall@{k}": evidence_recall_at_k(ranked, ev, k) for k in (5, 10, 25)}
    return {"ndcg@10": ndcg_at_k(ranked, q.qrels, 10), "recall@10": recall_at_k(ranked, q.qrels, 10),
            "recall@100": recall_at_k(ranked, q.qrels, 100), "mrr": mrr(ranked, q.qrels, 10)}


def evaluate_config(retriever, queries, locomo: bool, deep_k: int | None, clock: ScopeClock | None = None,
                    **kw) -> dict:
    """Two passes: default depth (top-10, N=30) for @5/@10/nDCG/MRR, and a deep pass for @25/@100.

    `deep_k=None` skips the deep pass (a reranker over a 300-deep pool per query is too slow here).
    `clock` (the store's `ScopeClock`) scores each query at its scope's instant.
    """
    rows: dict[str, dict[str, list[float]]] = {}
    by_cat: dict[str, dict[str, list[float]]] = {}
    t0 = time.perf_counter()
    shallow = run_queries(retriever, queries, clock=clock, recall_top_k=10, **kw)
    t_shallow = time.perf_counter() - t0
    deep = run_queries(retriever, queries, clock=clock, recall_top_k=deep_k, **kw) if deep_k else shallow
    for a, b in zip(shallow, deep):
        for stage in STAGES:
            ids_a, ids_b = credited_ids(a.result, stage), credited_ids(b.result, stage)
            if not ids_a and not ids_b and stage in ("merged", "reranked"):
                continue  # the stage did not run (no fusion or no reranker); an empty dense/sparse/final list scores 0
            ma, mb = _metrics(ids_a, a.q, locomo), _metrics(ids_b, b.q, locomo)
            merged = {k: (mb[k] if k in ("recall@25", "recall@100") else ma[k]) for k in ma
                      if deep_k or k not in ("recall@25", "recall@100")}
            for k, v in merged.items():
                rows.setdefault(stage, {}).setdefault(k, []).append(v)
                if locomo and stage == "final":
                    by_cat.setdefault(a.q.category or "?", {}).setdefault(k, []).append(v)
    return {
        "stages": {s: {k: round(mean(v), 4) for k, v in m.items()} | {"queries": len(next(iter(m.values())))}
                   for s, m in rows.items()},
        "final_by_category": {c: {k: round(mean(v), 4) for k, v in m.items()} | {"queries": len(next(iter(m.values())))}
                              for c, m in sorted(by_cat.items())},
        "ms_per_query": round(1000 * t_shallow / max(1, len(queries)), 1),
        "_runs": shallow,
    }


def check_eval_settings(args) -> None:
    """ValueError when `--settings` comes with a flag that would say something else: a knob flag, `--adaptive`, a
    `--preset` other than the string's, or a `recall_top_k` other than 10 (eval measures at its own depths)."""
    s: RetrievalSettings | None = getattr(args, "settings", None)
    if s is None:
        return
    settings_knobs(args, {"adaptive": ("adaptive", False)})  # a knob flag or --adaptive beside it is refused
    if args.preset and args.preset != [s.preset_name]:
        raise ValueError(f"--settings names preset {s.preset_name}; drop --preset or put the preset in the string")
    if s.recall_top_k != 10:
        raise ValueError(f"--settings recall_top_k={s.recall_top_k}: eval measures at 10 (and a deep pass at 25 or "
                         "100); drop recall_top_k from the string")


def eval_settings(args, preset: str) -> RetrievalSettings:
    """The one settings value `preset` is evaluated under: `--settings` as it is, else the preset's with the knob
    flags (agentos keeps its own fusion) and `--dense-weight` as a balance (`FusionStrategy.balanced`)."""
    given: RetrievalSettings | None = getattr(args, "settings", None)
    if given is not None:
        return given
    s = RetrievalSettings(preset=preset, adaptive=bool(getattr(args, "adaptive", False)))
    if preset == "agentos":
        return s
    s = s.with_(**flag_knobs(args, ("fusion", "normalization", "rrf_k")))
    dense = getattr(args, "dense_weight", None)
    return s if dense is None else s.with_(fusion=s.strategy.balanced(dense))


def run_eval_cli(args) -> int:
    log = lambda m: print(m, file=sys.stderr, flush=True)
    try:
        check_eval_settings(args)
        name, traces, queries = load_dataset(args.dataset)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.max_queries:
        queries = queries[: args.max_queries]
    locomo = name.startswith("locomo")
    from retrieval.models.registry import make_embedder

    if args.embedder != "minilm":
        name += f"-{args.embedder}"  # never mix vectors of two embedders in one cached store
    clock = make_clock(getattr(args, "clock", None), traces)
    ws = open_eval_workspace(name, traces, args.cache_dir, embedder=make_embedder(args.embedder), log=log,
                             clock=clock)
    from retrieval.eval.memo import QueryMemo

    log(f"embedding {len(queries)} queries in batches")
    ws.store.use_embedder(QueryMemo(ws.store.embedder, [q.query for q in queries]))
    presets = [args.settings.preset_name] if getattr(args, "settings", None) else args.preset or ["agentos", "hybrid"]
    models = RegistryModels(ws.store.embedder)  # one reranker/generator for every preset
    log(f"{name}: {len(traces)} documents, {len(queries)} queries; presets {presets}; reranker {args.reranker}; "
        f"hyde {args.hyde}; clock {clock!r}")
    out = {"dataset": args.dataset, "documents": len(traces), "queries": len(queries), "reranker": args.reranker,
           "hyde": args.hyde, "clock": clock.describe(), "adaptive": bool(getattr(args, "adaptive", False)),
           "configs": {}}
    for preset in presets:
        hyde_fields = generator_fields(args.hyde) if args.hyde != "none" else {}
        settings = eval_settings(args, preset)
        cfg = PipelineConfig(settings=settings).with_(facts=False, hyde=bool(hyde_fields), **hyde_fields,
                                                      **reranker_fields(args.reranker))
        r = build_retriever(ws, cfg, models)
        deep = (25 if locomo else 100) if args.reranker == "none" and args.hyde == "none" else None
        res = {"settings": str(settings), **evaluate_config(r, queries, locomo, deep, clock=clock)}
        runs = res.pop("_runs")
        if args.sweep:
            sw = sweep(r, runs, DENSE_WEIGHTS, RRF_KS, metric="recall@10" if locomo else "ndcg@10")
            res["sweep"] = {"dense_weights": sw.dense_weights, "ks": sw.ks, "tune": sw.tune, "held_out": sw.held_out,
                            "best": sw.best_params}
        if getattr(args, "lab", False):
            res["lab"] = run_lab(runs, locomo, clock.describe())
        out["configs"][preset] = res
        log(f"  {preset}: {res['ms_per_query']} ms/query")
    print(format_table(out, locomo))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2))
    return 0


def headline_metric(locomo: bool):
    """The one metric a dataset is judged by: `(name, score(ranked_ids, labelled_query) -> float)`."""
    if locomo:
        return "recall@10", lambda ranked, q: evidence_recall_at_k(ranked, list(q.qrels), 10)
    return "ndcg@10", lambda ranked, q: ndcg_at_k(ranked, q.qrels, 10)


def open_clocked_set(spec: str, cache_dir: str, clock: ClockSpec | str | None = None, log=print):
    """A dataset's cached MiniLM store with its queries embedded once, its clock the dataset's `ScopeClock` for
    `clock` (None = the dataset's default): `(ws, queries, metric, score, scope_clock)`. Run each query inside
    `with scope_clock.scoped(q.scope):`."""
    from retrieval.models.registry import make_embedder
    from retrieval.eval.memo import QueryMemo

    name, traces, queries = load_dataset(spec)
    scope_clock = make_clock(clock, traces)
    ws = open_eval_workspace(name, traces, cache_dir, embedder=make_embedder("minilm"), log=log, clock=scope_clock)
    ws.store.use_embedder(QueryMemo(ws.store.embedder, [q.query for q in queries]))
    metric, score = headline_metric(name.startswith("locomo"))
    return ws, queries, metric, score, scope_clock


def open_benchmark_set(spec: str, cache_dir: str, log=print):
    """`open_clocked_set` at the pinned `now` (as before `--clock`): `(ws, queries, metric, score)`."""
    return open_clocked_set(spec, cache_dir, "now", log)[:4]


def run_lab(runs, locomo: bool, clock: dict | None = None) -> dict:
    """Every fusion function's best on the tune half, its held-out score and the whole set (`--lab`)."""
    from retrieval.eval.lab import fusion_grid, search_fusions

    metric, score = headline_metric(locomo)
    lab = search_fusions(runs, fusion_grid(), metric=metric, scorer=lambda ranked, q: {metric: score(ranked, q)},
                         clock=clock)
    best = {" ".join(family): {"label": b.candidate.label, "tune": round(b.tune, 4), "held_out": round(b.held_out, 4),
                               "all": round(b.all, 4)}
            for family, b in lab.best_by_family().items()}  # "RRF", "convex minmax", … (each registered strategy)
    out = lab.to_dict()
    per_query = out.pop("per_query")  # thousands of rows: keep the counts in the JSON, the rows in the app
    out["best_vs_baseline"] = {"wins": sum(r["delta"] > 1e-9 for r in per_query),
                               "losses": sum(r["delta"] < -1e-9 for r in per_query), "queries": len(per_query)}
    out["per_function"] = best
    return out


def format_table(out: dict, locomo: bool) -> str:
    cols = ["recall@5", "recall@10", "recall@25"] if locomo else ["ndcg@10", "recall@10", "recall@100", "mrr"]
    lines = [f"| configuration | stage | {' | '.join(cols)} |", "|" + "---|" * (len(cols) + 2)]
    for preset, res in out["configs"].items():
        for stage, m in res["stages"].items():
            label = {"dense": "dense only (MiniLM)", "sparse": "BM25 only"}.get(stage, stage)
            lines.append(f"| {preset} | {label} | " + " | ".join(f"{m[c]:.4f}" if c in m else "—" for c in cols) + " |")
        for b in (res.get("lab") or {}).get("per_function", {}).values():
            lines.append(f"| {preset} lab: {b['label']} (tune {b['tune']:.4f}, held-out {b['held_out']:.4f}) | final | "
                         f"all {b['all']:.4f} |")
        if res.get("sweep"):
            b = res["sweep"]["best"]
            lines.append(f"| {preset} sweep best (dense {b['dense_weight']}, k {b['rrf_k']}) | final | tune "
                         f"{b['tune']:.4f}, held-out {b['held_out']:.4f} |")
    if locomo:
        lines += ["", "| configuration | category | " + " | ".join(cols) + " | queries |",
                  "|" + "---|" * (len(cols) + 3)]
        for preset, res in out["configs"].items():
            for cat, m in res["final_by_category"].items():
                lines.append(f"| {preset} | {cat} | " + " | ".join(f"{m[c]:.4f}" if c in m else "—" for c in cols)
                             + f" | {m['queries']} |")
    return "\n".join(lines)
