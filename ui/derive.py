"""Where the numbers on Inspect come from: the Final score from the Merged (or Dense, or blended) one, and a
score-based fusion's normalised score from the list's raw scores — so every number on the page can be derived
from the page.

Pure functions of the public records (no Streamlit). They restate `retrieval.pipeline.assemble` (hydrate:
`fused ÷ top fused`; the blend); how a normalised score is made is the fusion strategy's own sentence
(`FusionStrategy.normalised`); `tests/test_stage_table.py` checks every derivation against the numbers the
pipeline produced, so the sentences cannot drift from the code.
"""
from __future__ import annotations

from collections.abc import Sequence

from retrieval.fusion import Convex
from retrieval.pipeline.assemble import complete_lists
from retrieval.pipeline.explain import list_names

from .text import plain


def g(x: float, digits: int = 5) -> str:
    return f"{x:.{digits}g}"


def fusion_lists(diag) -> list[list[tuple[str, float]]]:
    """The (id, score) lists fusion saw, as `assemble.fuse` builds them (rank completion included), each
    id's first (best) entry kept."""
    rec, s = diag.record, diag.settings
    dense = [[(t.id, t.retrieval_score) for t in lst] for lst in rec.dense_lists]
    sparse = [list(lst) for lst in rec.sparse_lists]
    if s.rules.complete_ranks and dense and sparse:
        dense[0], sparse[0], _ = complete_lists(rec, dense[0], sparse[0])
    out = []
    for lst in dense + sparse:
        first = {i: float(sc) for i, sc in reversed(lst)}  # an id's first (best) occurrence
        out.append([(i, first[i]) for i in dict.fromkeys(i for i, _ in lst)])
    return out


def normalisation_formula(scores: Sequence[float], raw: float, method: str) -> tuple[float, str]:
    """`raw`'s normalised value in its list and how it is made, with the list's own numbers (a convex fusion
    normalised by `method`; the sentence is `Convex.normalised`)."""
    return Convex(normalization=method).normalised(scores, raw)


def normalisations(diag, trace_id: str) -> dict[str, str]:
    """Per fused list: how `trace_id`'s normalised score was made, as the strategy says ({} when it does not
    normalise scores, e.g. RRF)."""
    strategy = diag.settings.strategy
    if trace_id not in diag.fused:
        return {}
    out = {}
    for name, lst in zip(list_names(diag.record), fusion_lists(diag)):
        scores = dict(lst)
        if trace_id in scores:
            how = strategy.normalised([sc for _, sc in lst], scores[trace_id])
            if how is None:
                return {}
            out[name] = how[1]
    return out


def _example(diag) -> str | None:
    """The final list's first non-fact trace below #1 (its score is not trivially 1), else its first."""
    final = [i for i in diag.stage_ids.get("final", ()) if i not in diag.fact_ids]
    return final[1] if len(final) > 1 else (final[0] if final else None)


def final_rule(diag) -> str | None:
    """One sentence saying how the Final column's scores come from the columns before it, worked on one
    trace with the numbers shown in the table (ids escaped for a Markdown-reading element)."""
    ex = _example(diag)
    if ex is None:
        return None
    s, scores = diag.settings, diag.stage_scores
    final = scores["final"][ex]
    facts = " Fact-graph traces come first with score 1." if diag.fact_ids else ""
    merged = list(diag.stage_ids.get("merged", ()))
    if not merged:
        return f"Final = the Dense score (BM25 found nothing, so nothing was fused).{facts}"
    top = scores["merged"][merged[0]]
    fused = diag.fused[ex].score if ex in diag.fused else None
    base = f"Merged ÷ the top Merged score {g(top)}" if s.rules.blend_base == "fused" else "the Dense score"
    if ex in diag.blend:
        b = diag.blend[ex]
        sp = diag.splits.get(ex)
        gain = f" + split gain {g(sp.gain, 4)}" if sp is not None and sp.replaced else ""
        return (f"Final = Reranked = (1 − {g(b.weight, 3)}) × base + {g(b.weight, 3)} × reranker score, base = "
                f"{base}; e.g. {plain(ex)}: (1 − {g(b.weight, 3)}) × {g(b.base, 4)} + {g(b.weight, 3)} × "
                f"{g(b.rerank, 4)}{gain} = {g(final, 4)}.{facts}")
    if s.rules.blend_base == "fused" and fused is not None:
        return (f"No reranker: Final = Merged ÷ the top Merged score {g(top)}, so the best is 1; e.g. "
                f"{plain(ex)}: {g(fused)} ÷ {g(top)} = {g(final, 4)}.{facts}")
    return (f"No reranker: Final keeps the Merged order and shows each trace's Dense score; e.g. {plain(ex)}: "
            f"dense {g(scores['dense'].get(ex, final), 4)} = final {g(final, 4)}.{facts}")


def final_note(diag, stage: str) -> str:
    """The small print under a stage heading of the aligned table."""
    s = diag.settings
    if stage == "merged":
        a = getattr(diag, "adaptive", None)  # this query's own weights (`adaptive` on)
        weights = f", adaptive {g(a['dense_weight'], 3)}/{g(a['sparse_weight'], 3)}" if a else ""
        return ", ".join(s.strategy.family) + weights
    if stage == "reranked" and not diag.stage_ids.get("reranked"):
        return "off"
    if stage == "final" and not diag.stage_ids.get("reranked") and diag.stage_ids.get("merged"):
        return "Merged ÷ top" if s.rules.blend_base == "fused" else "dense score"
    return ""


def final_how(diag, trace_id: str) -> str:
    """How one trace's final score was made, with its numbers ("" when it is not in the final list)."""
    scores = diag.stage_scores
    final = scores.get("final", {}).get(trace_id)
    if final is None:
        return ""
    if trace_id in diag.fact_ids:
        return "a fact-graph trace: injected first with score 1"
    if trace_id in diag.blend:
        b = diag.blend[trace_id]
        sp = diag.splits.get(trace_id)
        gain = f" + split gain {g(sp.gain, 4)}" if sp is not None and sp.replaced else ""
        return (f"= (1 − {g(b.weight, 3)}) × base {g(b.base, 4)} + {g(b.weight, 3)} × reranker {g(b.rerank, 4)}"
                f"{gain}")
    merged = list(diag.stage_ids.get("merged", ()))
    if merged and trace_id in diag.fused and diag.settings.rules.blend_base == "fused":
        return f"= Merged {g(diag.fused[trace_id].score)} ÷ top Merged {g(scores['merged'][merged[0]])}"
    return "= its Dense score (no reranker)"


def adaptive_note(diag) -> str | None:
    """One line for the rank flow: this query's adapted weights and why (None when `adaptive` is off or nothing was
    fused). Plain text: the caller escapes it for where it goes."""
    a = getattr(diag, "adaptive", None)
    return None if a is None else f"Adaptive weights: {a['summary']}"


def adaptive_sentence(adaptive) -> str | None:
    """The explanation's line on the weights fusion used for this query, Markdown-safe (the reasons quote query
    terms); None when `adaptive` was off."""
    if not adaptive:
        return None
    c = adaptive["configured"]
    weights = f"dense {g(adaptive['dense_weight'], 3)} / sparse {g(adaptive['sparse_weight'], 3)}"
    if not adaptive["reasons"]:
        return f"**Adaptive weights**: {weights}, as set — no rule moved them for this query."
    learned = " Rule strengths learned from this store's graded case." if adaptive.get("learned") else ""
    return (f"**Adaptive weights**: {weights} for this query (set: dense {g(c['dense_weight'], 3)} / sparse "
            f"{g(c['sparse_weight'], 3)}) — " + plain("; ".join(adaptive["reasons"])) + "." + learned)

