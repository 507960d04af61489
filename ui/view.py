"""What the Inspect page shows, as plain rows and sentences: pure functions of the public records.

No Streamlit here (tested on their own): every number comes from `Diagnostics` / `Explanation`
and is formatted once, with "—" for anything missing — never None, NULL or nan on screen.
"""
from __future__ import annotations

import math
import re
from typing import Any, Literal, TypedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

from retrieval.bm25.index import default_tokenizer
from retrieval.fusion import FusionStrategy, strategy_for

from .text import plain

DASH = "—"
# The one word for a result nobody has graded (the app's verb is "grade"; never "unrated" or "unjudged"):
# the grade controls, the stage table, Compare and the live panel (ui/refuse/view.js) write it.
UNGRADED = "○ ungraded"
STAGE_NAMES = {"dense": "Dense", "sparse": "Sparse (BM25)", "merged": "Merged", "reranked": "Reranked",
               "final": "Final"}
# Recorded timings, in pipeline order; any other recorded stage follows in its own order.
TIMING_ORDER = ("facts", "hyde", "multi_query", "embed", "dense", "sparse", "hydrate", "rerank", "split",
                "assemble", "refusion")
TIMING_LABELS = {"facts": "fact graph", "hyde": "HyDE", "multi_query": "multi-query", "embed": "embed query",
                 "dense": "dense search", "sparse": "BM25 search", "hydrate": "hydrate sparse-only",
                 "rerank": "rerank", "split": "split halves", "assemble": "assemble (fuse, blend, cut)",
                 "refusion": "re-fusion (slider move)"}


def missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def num(x: Any, digits: int = 4) -> str:
    """A number for a table cell; "—" when missing."""
    if missing(x):
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if 0 < abs(x) < 1e-4:  # float noise such as a recency of 2.1e-226 reads as what it means
            return "< 0.0001" if x > 0 else "> −0.0001"
        return f"{x:.{digits}g}"
    return str(x)


def clean(value: Any) -> Any:
    """A JSON-able copy with every None / nan replaced by "—" (for st.json and tables)."""
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return DASH if missing(value) else value


def origin(trace_id: str, stage_ids: Mapping[str, Sequence[str]], fact_ids: Sequence[str] = ()) -> str:
    if trace_id in fact_ids:
        return "fact"
    d, s = trace_id in stage_ids.get("dense", ()), trace_id in stage_ids.get("sparse", ())
    return "both" if d and s else "sparse" if s and not d else "dense"


def snippet(text: str, query: str, limit: int = 140) -> str:
    """Plain text around the first query term (a table cell cannot highlight)."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    terms = set(default_tokenizer(query or ""))
    hits = [m.start() for t in terms for m in [re.search(rf"(?i)\b{re.escape(t)}\b", text)] if m]
    start = max(0, min(min(hits, default=0) - limit // 4, len(text) - limit))
    end = start + limit
    # Cut between words where a space is near (a word cut in half reads as a typo), else at the limit.
    if start and text[start - 1] != " ":
        gap = text.find(" ", start, start + limit // 4)
        start = gap + 1 if gap >= 0 else start
    if end < len(text) and text[end] != " ":
        gap = text.rfind(" ", end - limit // 4, end)
        end = gap if gap > start else end
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def half_snippet(text: str, chosen: str | None) -> str:
    """A snippet of one half of a split note, marked where the note was cut: "…" before the second half ("b", which
    starts mid-note) and after the first ("a"), unless the snippet already says so — as a snippet cut from a longer
    text is."""
    if chosen == "b" and not text.startswith("…"):
        return "…" + text
    if chosen == "a" and not text.endswith("…"):
        return text + "…"
    return text


def whole_texts(diag, store_get: Callable[[list[str]], Iterable[Any]], ids: Iterable[str]) -> dict[str, str]:
    """Each id's stored (whole) text: from the search record first, the store for the rest."""
    rec = diag.record
    out = {t.id: t.content for lst in rec.dense_lists for t in lst}
    out.update({i: t.content for i, t in rec.sparse_hydrated.items()})
    out.update({t.id: t.content for t in rec.fact_traces})
    need = [i for i in ids if i not in out]
    if need:
        out.update({t.id: t.content for t in store_get(need)})
    return out


def split_mark(outcome) -> str:
    """"✂ half b: 0.61 vs whole 0.42" for a replaced trace, "" otherwise."""
    if outcome is None or not outcome.replaced:
        return ""
    i = 0 if outcome.chosen == "a" else 1
    return f"✂ half {outcome.chosen}: {outcome.half_scores[i]:.3f} vs whole {outcome.whole:.3f}"


def split_summary(diag) -> str | None:
    """What split-on-ambiguous did, in one sentence for a Markdown-reading element (the ids escaped; None when
    it was off)."""
    info = diag.split_on_ambiguous
    if not info:
        return None
    rr = diag.record.rerank
    pool = len(rr.pool_ids) if rr is not None else 0
    cands = info.get("candidate_count", 0)
    halved = len(rr.split_halves) if rr is not None else 0
    replaced = list(info.get("replaced_ids", []))
    short = f"; {cands - halved} were too short to halve" if halved < cands else ""
    head = (f"Split-on-ambiguous (threshold {info['threshold']:g}): split {halved} of {cands} candidates "
            f"(the lowest-scoring of the {pool} in the pool{short}), replaced {len(replaced)}")
    if replaced:
        final = set(diag.stage_ids["final"])
        shown = sum(1 for i in replaced if i in final)
        return head + (f" whose better half outscored the whole: {plain(', '.join(replaced))}; {shown} of them "
                       f"{'is' if shown == 1 else 'are'} in the final list of {len(final)}. "
                       "Look for ✂ in the stage table.")
    return head + ": no half beat its whole, so every trace kept its text."


def stage_rows(ex, final_how: str = "") -> list[dict[str, str]]:
    """Rank and score per stage; a completed (estimated) fusion rank is named, never shown as a bare None;
    `final_how` (how the final score was made, `ui.derive.final_how`) is the Final row's note."""
    imputed = (ex.rrf or {}).get("imputed")
    ranks = (ex.rrf or {}).get("ranks", {})
    rows = []
    for stage, v in ex.stages.items():
        note = ""
        if v is None and stage == imputed:
            note = (f"not returned by {stage} search; fusion used rank {num(ranks.get(stage))}, estimated from "
                    "its real score (rank completion)")
        elif v is None:
            note = "not in this list"
        elif stage == "final":
            note = final_how
        rows.append({"stage": STAGE_NAMES.get(stage, stage), "rank": num(v[0]) if v else DASH,
                     "score": num(v[1], 5) if v else DASH, "note": note})
    return rows


def bm25_rows(tree: Sequence[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    """The BM25 score tree, one row per query term, as Elasticsearch's explain:
    score = qtf × idf × tf·(k1+1) / (tf + k1·norm), norm = 1 − b + b·doc_len/avgdl. A total row sums them."""
    if not tree:
        return []
    rows = [{"term": str(r["term"]), "in query": num(r.get("qtf")), "tf": num(r.get("tf")), "df": num(r.get("df")),
             "idf": num(r.get("idf")), "length norm": num(r.get("norm")),
             "doc len / avg": f"{num(r.get('doc_len'))} / {num(r.get('avgdl'))}",
             "tf saturation": num(r.get("saturation")), "term score": num(r.get("score"))} for r in tree]
    total = sum(float(r["score"]) for r in tree)
    rows.append({"term": "= BM25 score", "in query": "", "tf": "", "df": "", "idf": "", "length norm": "",
                 "doc len / avg": "", "tf saturation": "", "term score": num(total)})
    return rows


def bm25_params(tree: Sequence[Mapping[str, Any]] | None) -> str:
    if not tree:
        return ""
    r = tree[0]
    return f"k1 = {num(r.get('k1'))}, b = {num(r.get('b'))}"


def dense_rows(terms: Sequence[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    """The cognitive (dense) score as weight × value per term; the total row is the dense score."""
    if not terms:
        return []
    rows = [{"term": str(t["term"]), "weight": num(t["weight"]), "value": num(t["value"]),
             "points = weight × value": num(t["points"])} for t in terms]
    rows.append({"term": "= dense score", "weight": "", "value": "",
                 "points = weight × value": num(sum(float(t["points"]) for t in terms))})
    return rows


def fusion_rows(rrf: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """Each list's contribution to the fused score, as the fusion strategy writes it (RRF w/(k+rank), a
    score-based fusion w × normalised score)."""
    if not rrf:
        return []
    rows = []
    strategy = explained_strategy(rrf)
    weights = rrf.get("weights", {})
    for name, c in rrf["contributions"].items():
        rank = rrf["ranks"].get(name)
        w = weights.get("sparse" if name.startswith("sparse") else "dense")
        completed = rrf.get("imputed") == name
        rank_cell = DASH if rank is None else (f"{rank} (completed)" if completed else str(rank))
        formula = strategy.term(w, rank, c, num)
        rows.append({"list": name, "rank": rank_cell, "formula": formula, "contribution": num(c, 5)})
    rows.append({"list": "= fused score", "rank": "", "formula": "", "contribution": num(rrf.get("score"), 5)})
    return rows


def explained_strategy(rrf: Mapping[str, Any]) -> FusionStrategy:
    """The fusion strategy an explanation's fusion part names, with its parameters (`params`; an older record's
    `k` and `normalization`)."""
    params = rrf.get("params") or {"rrf_k": rrf.get("k"), "normalization": rrf.get("normalization")}
    return strategy_for(params, fusion=rrf.get("fusion") or "rrf")


def fusion_title(rrf: Mapping[str, Any]) -> str:
    return explained_strategy(rrf).explain_title(num)


def blend_sentence(blend: Mapping[str, float] | None) -> str | None:
    if not blend:
        return None
    b = blend
    return (f"Rerank blend: (1 − {b['weight']:.2f}) × base {b['base']:.4f} + {b['weight']:.2f} × reranker "
            f"{b['rerank']:.4f} = **{b['blended']:.4f}**")


def split_rows(split: Mapping[str, Any] | None) -> list[dict[str, str]]:
    if not split:
        return []
    rows = [{"text": "whole", "reranker score": num(split["whole"]), "chosen": "" if split["replaced"] else "kept",
             "content": ""}]
    for n, name in enumerate(("a", "b")):
        rows.append({"text": f"half {name}", "reranker score": num(split["half_scores"][n]),
                     "chosen": "chosen" if split.get("chosen") == name else "", "content": split["halves"][n]})
    return rows


def split_sentence(split: Mapping[str, Any] | None) -> str | None:
    if not split:
        return None
    a, b = split["half_scores"]
    if split["replaced"]:
        return (f"Split: half {split['chosen']} scored {max(a, b):.4f} against the whole's {split['whole']:.4f}, so "
                f"it replaced the text and added {split['gain']:.4f} (blend weight × the difference).")
    return f"Split: the halves scored {a:.4f} and {b:.4f}, not above the whole's {split['whole']:.4f}: kept whole."


def timing_items(timings: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Every recorded stage time (ms), pipeline order, labelled; missing values and totals left out."""
    known = [k for k in TIMING_ORDER if k in timings]
    rest = [k for k in timings if k not in TIMING_ORDER and k not in ("search", "total")]
    return [(TIMING_LABELS.get(k, k.replace("_", " ")), float(timings[k])) for k in known + rest
            if not missing(timings[k]) and isinstance(timings[k], (int, float))]


def run_steps(cfg) -> list[str]:
    """What a search with `cfg` is about to do, for the progress label."""
    steps = []
    if cfg.facts:
        steps.append("fact graph")
    if cfg.hyde:
        steps.append(f"HyDE with {cfg.generator}")
    if cfg.multi_query_n:
        steps.append(f"{cfg.multi_query_n} query variants with {cfg.generator}")
    steps += ["embedding the query", "dense + BM25 search"]
    if cfg.reranker != "none":
        steps.append(f"reranking with {cfg.reranker}")
        if cfg.settings.split_threshold:
            steps.append("splitting ambiguous traces")
    return steps


NEUTRAL_PLACEHOLDER = "Type a question about the selected scope's traces"


def query_placeholder(scope: Any, examples: Sequence[Mapping[str, Any]]) -> str:
    """The Query box's hint: an example query of the selected scope (`data/demo/examples.json`), so the hint finds
    something in what is searched; a scope with no example gets a neutral hint. Across all scopes the first example
    names its scope: what its Home card promises holds within that scope (other scopes' notes compete otherwise)."""
    for ex in examples:
        if scope is None or ex.get("scope") == str(scope):
            return f"e.g. {ex['query']}" + (f" — in {ex['scope']}" if scope is None and ex.get("scope") else "")
    return NEUTRAL_PLACEHOLDER


def picked_id(state: Any, ids: Sequence[str]) -> str | None:
    """The id a selection event points at: a table row (by position in `ids`) or a chart point
    (its `customdata`). None when nothing is selected."""
    sel = (state or {}).get("selection") if hasattr(state, "get") else None
    if not sel:
        return None
    rows = sel.get("rows") or []
    if rows:
        n = rows[0]
        return ids[n] if isinstance(n, int) and 0 <= n < len(ids) else None
    for point in sel.get("points") or []:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)):
            data = data[0] if data else None
        if isinstance(data, str) and data:
            return data
    return None


class MetricDelta(TypedDict):
    delta: str
    delta_color: Literal["normal", "off"]
    delta_arrow: Literal["auto", "off"]


def metric_delta(new: float, old: float, digits: int = 3, against: str = "A") -> MetricDelta:
    """`st.metric`'s delta arguments for `new` against `old`, shown at `digits`: a change that rounds to 0 there is
    no change (neutral, no arrow; "+0.000" would read as a gain and "-0.000" as a loss), any other goes up or down."""
    if round(new - old, digits) == 0:
        return {"delta": f"no change vs {against}", "delta_color": "off", "delta_arrow": "off"}
    return {"delta": f"{new - old:+.{digits}f} vs {against}", "delta_color": "normal", "delta_arrow": "auto"}
