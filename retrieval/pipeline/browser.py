"""What the browser needs to re-fuse a search on its own (issue 35): the strategy list and one record as plain data.

`strategies()` is the one place the browser's fusion menu comes from: each strategy's name, label and parameters.
The browser holds a twin of each (`ui/refuse/fuse.mjs`, checked against `assemble` by tests/test_refuse_parity.py).
`refuse_payload(diagnostics)` turns a search's `SearchRecord` (and the settings it was assembled under) into JSON-able
data sent once per search: every candidate list with its raw scores, the rank-completion entries, the hydration and
rerank numbers, and for the explanation each candidate's text, cognitive terms and BM25 terms; `fusion_payload` is
the part re-fusion reads (a case's queries are sent so: `retrieval.judgments.live`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval.fusion import WEIGHT_NAMES, catalogue
from retrieval.pipeline.adaptive import RULE_STRENGTHS, features, shift_of
from retrieval.pipeline.assemble import best_dense, complete_lists, deep_enough
from retrieval.pipeline.explain import dense_terms, list_names
from retrieval.pipeline.settings import CHOICES, FUSION_PARAMS, KNOBS, check_choice, check_knob

TEXT_CHARS = 400  # the text a row and an explanation show (the page's own table shows the whole text)
BM25_TERMS_FOR = 60  # candidates whose BM25 terms are looked up and sent (a look-up each; the rest say so)
# The knobs the browser's setting holds and commits back: the fusion, every declared fusion parameter (the weights and
# each strategy's own), the rerank weight and the depth. The payload's setting, its numeric controls and the
# write-back of a commit (`committed`) are made from it, so a strategy's new parameter needs no edit in any of them.
SETTING_KNOBS = ("fusion", *FUSION_PARAMS, "rerank_weight", "recall_top_k")
KNOB_NAMES = tuple(n for n in SETTING_KNOBS if n in KNOBS)  # the numeric ones: a slider each


def _knob(name: str) -> dict[str, Any]:
    k = KNOBS[name]
    lo, hi = k.ui_range
    # A slider whose range and step are whole numbers (RRF k) moves in whole steps (as `ui.links` reads the table).
    integer = k.integer or all(float(x).is_integer() for x in (lo, hi, k.step))
    return {"name": name, "kind": "int" if integer else "float", "min": lo, "max": hi, "step": k.step}


def _param(p: dict[str, Any]) -> dict[str, Any]:
    """A strategy's declared parameter as the panel's control: a choice, or a number with its slider range."""
    if p["kind"] == "choice":
        return {"name": p["name"], "kind": "choice", "options": list(p["choices"])}
    if p["name"] in KNOBS:
        return _knob(p["name"])
    lo, hi = p["ui"] or (p["lo"], p["hi"])
    return {"name": p["name"], "kind": p["kind"], "min": lo, "max": hi, "step": p["step"]}


def strategies() -> list[dict[str, Any]]:
    """Every fusion strategy the library registers (`retrieval.fusion.catalogue`), with the parameters its controls
    show besides the two side weights (one list, one source: a registered strategy appears here with no edit;
    its browser twin in `ui/refuse/fuse.mjs` is held to `assemble` by tests/test_refuse_parity.py)."""
    return [{"name": c["name"], "label": c["title"],
             "params": [_param(p) for p in c["params"] if p["name"] not in WEIGHT_NAMES]}
            for c in catalogue()]


def controls() -> dict[str, dict[str, Any]]:
    """The numeric controls' ranges (the same table links and config files are checked against)."""
    return {n: _knob(n) for n in KNOB_NAMES}


def _pairs(lst) -> list[list[Any]]:
    return [[i, float(s)] for i, s in lst]


def _rerank(rec, s) -> dict[str, Any] | None:
    rr = rec.rerank
    if rr is None or rr.error is not None or rr.scores is None:
        return None
    split = None
    if s.split_threshold is not None and rr.split_error is None and rr.split_scores:
        first = rr.scores or {}
        split = {i: {"better": float(max(sc)), "whole": float(first.get(i, 0.0)),
                     "chosen": "a" if sc[0] >= sc[1] else "b"} for i, sc in rr.split_scores.items()}
    return {"scores": {i: float(v) for i, v in rr.scores.items()}, "split": split}


def _record_part(rec, s) -> dict[str, Any]:
    """What `assemble` reads, as plain data."""
    dense_best = best_dense(rec)
    dense = [_pairs((t.id, t.retrieval_score) for t in lst) for lst in rec.dense_lists]
    sparse = [_pairs(lst) for lst in rec.sparse_lists]
    completion: dict[str, list] = {"dense": [], "sparse": []}
    if s.rules.complete_ranks and dense and sparse and any(rec.sparse_lists):
        d0, s0, _ = complete_lists(rec, [tuple(p) for p in dense[0]], [tuple(p) for p in sparse[0]])
        completion = {"dense": _pairs(d0[len(dense[0]):]), "sparse": _pairs(s0[len(sparse[0]):])}
    hydrated = {i: "sparse" for i in rec.sparse_hydrated}
    hydrated.update({i: "dense" for i in dense_best})
    base = {i: float(t.retrieval_score) for i, t in rec.sparse_hydrated.items()}
    base.update({i: float(t.retrieval_score) for i, t in dense_best.items()})
    return {"empty": not rec.search_queries, "sparse_empty": not any(rec.sparse_lists), "dense": dense,
            "sparse": sparse, "completion": completion, "complete_ranks": s.rules.complete_ranks,
            "hydrated": hydrated, "base": base, "hydrate_sparse_only": s.rules.hydrate_sparse_only,
            "blend_fused": s.rules.blend_base == "fused",
            "facts": [[t.id, float(t.retrieval_score)] for t in rec.fact_traces], "rerank": _rerank(rec, s),
            "list_names": list_names(rec)}


def browser_setting(s) -> dict[str, Any]:
    """The settings value as the browser's controls hold it: every knob of `SETTING_KNOBS` (the browser switches
    fusion too, so every fusion knob, the ones the strategy does not use at the preset's value)."""
    k = {**s.fusion_defaults(), "rerank_weight": s.rerank_weight, "recall_top_k": s.recall_top_k}
    return {n: k[n] for n in SETTING_KNOBS}


def committed(value: Mapping[str, Any]) -> dict[str, Any]:
    """A setting the browser committed (`browser_setting`'s shape, any part of it) as its controls hold it: each knob of
    `SETTING_KNOBS` it carries, checked by the library's rules (ValueError naming the knob and what is allowed), a
    whole-step slider's (RRF k) as an int. Anything else it carries is not a setting and is left out."""
    kinds = {n: c["kind"] for n, c in controls().items()}
    out: dict[str, Any] = {}
    for name in (n for n in SETTING_KNOBS if n in value):
        v = check_choice(name, value[name]) if name in CHOICES else check_knob(name, value[name])
        out[name] = int(v) if kinds.get(name) == "int" else v
    return out


def _explain_part(diag, rec) -> dict[str, Any]:
    """Per candidate: its text, its cognitive (dense) terms and its BM25 terms, for explanations in the browser."""
    traces = {t.id: t for t in rec.sparse_hydrated.values()}
    traces.update(best_dense(rec))
    traces.update({t.id: t for t in rec.fact_traces})
    texts = {i: t.content[:TEXT_CHARS] for i, t in traces.items()}
    dense = {i: [{"term": r["term"], "weight": r["weight"], "value": r["value"], "points": r["points"]}
                 for r in dense_terms(t.score_breakdown.as_dict())] for i, t in traces.items()
             if i not in {f.id for f in rec.fact_traces}}
    bm25: dict[str, Any] = {}
    if rec.search_queries:
        for i in list(diag.stage_ids["final"]) + list(diag.stage_ids["merged"]):
            if len(bm25) >= BM25_TERMS_FOR:
                break
            if i not in bm25:
                tree = rec.bm25_terms.get(i)
                bm25[i] = None if tree is None else [{"term": r["term"], "score": float(r["score"]), "tf": r.get("tf"),
                                                      "idf": r.get("idf")} for r in tree]
    return {"texts": texts, "dense_terms": dense, "bm25_terms": bm25}


def adaptive_shift(rec, s, strengths=None) -> float | None:
    """Under `adaptive`, how far this query's rules move the dense share (`retrieval.pipeline.adaptive.shift_of`: a
    function of the record alone, whatever the weights; `strengths` the store's learned ones, None the rules), so the
    browser adapts any weights it is given as `adapt` does; None when adaptive is off."""
    if not s.adaptive:
        return None
    return shift_of(features(rec).signals(), strengths or RULE_STRENGTHS)


def fusion_payload(diag) -> dict[str, Any]:
    """What re-fusing one search needs and nothing more: the record's lists and numbers, the setting it was assembled
    under, the server's own final list (the browser checks itself against it) and how its fact rows are credited to
    their source traces when scored (`Diagnostics.credit`). A case's queries travel so
    (`retrieval.judgments.live`)."""
    rec, s = diag.record, diag.settings
    return {"v": 1, **_record_part(rec, s), "setting": browser_setting(s), "adaptive": bool(s.adaptive),
            "adaptive_shift": adaptive_shift(rec, s, diag.strengths),
            "preset": s.rules.name, "fusions": list(s.rules.fusions),
            "max_top_k": max(1, rec.over_fetch_top_k // max(1, rec.over_fetch_multiplier)),
            "deep_enough": deep_enough(rec, s.recall_top_k),
            "server_final": [[i, float(diag.stage_scores["final"][i])] for i in diag.stage_ids["final"]],
            "credit": diag.credit}


def refuse_payload(diag) -> dict[str, Any]:
    """One search, as the browser re-fuses it: `fusion_payload`, the dense and sparse stage lists, the strategies and
    controls, and what explanations show."""
    return {**fusion_payload(diag), "stages": {k: list(diag.stage_ids[k]) for k in ("dense", "sparse")},
            "strategies": strategies(), "controls": controls(), **_explain_part(diag, diag.record)}
