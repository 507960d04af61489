"""The one glossary: every abbreviation or measure name a page shows, explained in plain words, the same way on
every page. A page shows a term with its explanation where it first appears: as the `help=` tooltip of the
widget, metric or grid column that names it (`helps`, `column_help`), or in a caption (`caption_text`).
`tests/test_page_words.py` opens every page and fails when a term it shows has no explanation reachable.
"""
from __future__ import annotations

import re
from typing import Any

import streamlit as st

from retrieval.fusion import NORMALIZATIONS
from retrieval.pipeline.presets import PRESETS, get_preset

from .links import FIELDS

MOOD = ("valence", "arousal", "dominance")  # the settings panel's Mood sliders, in order, over their `FIELDS` ranges


def _num(x: float) -> str:
    """A number as a page writes it: the minus sign, not a hyphen."""
    return f"{x:g}".replace("-", "−")


def _rrf_k(preset: str) -> str:
    """The preset's k, and whether it fuses by RRF at all (hybrid's default is convex: k waits for a switch to RRF)."""
    p = get_preset(preset)
    own_k = any(q.name == "rrf_k" for q in p.strategies[0].params)  # its own fusion takes k: RRF
    return f"{p.rrf_k:g} in {preset}" if own_k else f"{p.rrf_k:g} when the {preset} preset fuses by RRF"


GLOSSARY: dict[str, str] = {
    "RBO": "RBO (rank-biased overlap): how alike two rankings are, weighted towards the top — 1 is the same order, "
           "0 nothing in common; p = 0.9 puts most of the weight on the first 10 places.",
    "err@10": "err@10 (expected reciprocal rank): a reader goes down the top 10 (the number after @) and stops at "
              "a result as likely as its grade is high; the mean of 1 / the stopping rank — 0 to 1, higher is "
              "better.",
    "nDCG@10": "nDCG@10 (normalised discounted cumulative gain): the grades of the top 10 (the number after @), each "
               "divided by log2 of its rank + 1, as a share of the best possible order's — 0 to 1, higher is better.",
    "recall@10": "recall@10: the share of the relevant traces (grade 1 or more) found in the top 10.",
    "MRR": "MRR (mean reciprocal rank): 1 / the rank of the first relevant result, averaged over the queries.",
    "judged@10": "judged@10: the share of the top 10 that has a grade (0 included) — when low, the other numbers "
                 "rest on few grades.",
    "p@10": "p@10 (precision): the share of the top 10 that is relevant (grade 1 or more).",
    "PAD": "PAD (pleasure or valence, arousal, dominance): three numbers describing the emotional tone of a query or "
           "a trace — " + ", ".join(f"{n} from {_num(FIELDS[n].lo)} to {_num(FIELDS[n].hi)}"
                                    for n in MOOD) + ".",
    "kappa": "kappa (Cohen's): how far two raters agree beyond what chance would give — 1 identical grades, 0 no "
             "better than chance, below 0 worse; on the 0–3 scale it is weighted, so 2 vs 3 counts as a near "
             "agreement and 0 vs 3 as a wide miss.",
    "Krippendorff's alpha": "Krippendorff's alpha: the agreement of all raters at once over the items several "
                            "graded, beyond chance — 1 full agreement, 0 chance; ordinal counts 2 vs 3 as closer "
                            "than 0 vs 3.",
    "Jaccard": "Jaccard: the traces both lists share, divided by all the traces in either (1 = the same set; the "
               "order is ignored).",
    "UMBRELA": "UMBRELA: a published prompt (Upadhyay et al., 2024) asking a text generator for the 0–3 relevance "
               "grade a TREC assessor would give.",
    "ANN": "ANN (approximate nearest neighbour): a vector index that compares the query with part of the vectors "
           "only — much faster, and nearly always the same answer as comparing with all of them.",
    "drift": "drift: how far what the agent got then is from what the same query returns now — 1 − RBO of the two "
             "lists: 0 the same order, 1 nothing in common.",
    "BM25": "BM25: the keyword ranking function — a text scores for each query word it contains, more for a word "
            "rare among the traces (of the store, or of the searched scope when the store keeps per-scope "
            "statistics) and repeated in the text, less for a long text; a text with none of the words is not "
            "returned.",
    "RRF": "RRF (reciprocal rank fusion): the merged score of a trace is Σ w / (k + rank) over the lists it is in — "
           "its rank in each list, the list's weight w and the constant k ("
           + "; ".join(_rrf_k(p) for p in PRESETS) + "); the scores themselves are ignored.",
    "convex": "convex (fusion): the merged score of a trace is the dense weight × its dense score (similarity with "
              "the trace's strength, recency, mood and importance) + the sparse weight × its BM25 score — one such "
              "term per list (HyDE and multi-query add a dense and a BM25 list per query variant) — each list's "
              "scores first scaled onto 0–1 by the normalisation (" + ", ".join(NORMALIZATIONS) + "); a list the "
              "trace is not in adds 0. Convex: a weighted average when "
              "the weights add up to 1.",
    "theoretical": "theoretical (normalisation; Bruch, Gai & Ingber 2023): a list's scores are scaled onto 0–1 from "
                   "the lowest score the scoring function can give (0 for both the dense side's score and BM25) to the "
                   "list's best — so a list whose scores are all weak stays low, where minmax would stretch it to "
                   "fill 0–1.",
    "DBSF": "DBSF (distribution-based score fusion, as Qdrant's hybrid queries do it): each list's scores "
            "are scaled onto 0–1 by their mean ± 3 standard deviations (clipped to 0–1), then added with the "
            "weights; a list the trace is not in adds 0.",
    "qrels": "qrels (query relevance labels): the labels of a labelled set — for each query, the traces judged and "
             "how well each answers it (0 not relevant to 3 perfect; 0 or 1 in a binary case).",
    "BEIR": "BEIR: a public benchmark of retrieval test sets in one folder layout — corpus.jsonl (the texts), "
            "queries.jsonl and a folder of tab-separated relevance labels.",
    "TREC": "TREC (the Text REtrieval Conference, NIST): its file layouts are the common ones for relevance labels "
            "(query, 0, document id, grade on each line).",
    "IVF": "IVF (inverted file): the vectors are grouped in clusters and a search looks only in the clusters nearest "
           "the query; the rest of the name (FLAT, PQ, SQ, HNSW_SQ, …) is how the vectors in a cluster are "
           "stored and searched.",
}
# Matched with their case: "pad" and "Ann" are words too; "rrf" and "dbsf" are the setting's values (a link's
# `fusion=rrf`, the live panel's data), while a page writes the words RRF and DBSF.
EXACT = frozenset({"PAD", "ANN", "RRF", "DBSF"})
# "convex" and "theoretical" are setting values too, which the live panel's data carries quoted (`"fusion": "convex"`,
# read by its script, never shown as such); a page writes them as words.
VALUES = frozenset({"convex", "theoretical"})


def _pattern(term: str) -> re.Pattern[str]:
    """`nDCG@10` matches `ndcg@10` and `nDCG@5` (a case's own k); `PAD` only `PAD`."""
    body = re.escape(term).replace("@10", r"@\d+")
    quoted = ('(?<!")', '(?!")') if term in VALUES else ("", "")
    return re.compile(rf"(?<![\w@]){quoted[0]}{body}(?![\w@]){quoted[1]}", 0 if term in EXACT else re.IGNORECASE)


PATTERNS = {term: _pattern(term) for term in GLOSSARY}


def terms_in(text: str) -> list[str]:
    """The glossary terms `text` shows, in glossary order."""
    return [t for t, p in PATTERNS.items() if p.search(text)]


def explain(term: str) -> str:
    """The term's explanation (KeyError for a term not in the glossary: add it there)."""
    return GLOSSARY[term]


def helps(*terms: str) -> str:
    """A tooltip explaining each term, one per line."""
    return "\n\n".join(explain(t) for t in terms)


def explained(text: str) -> str:
    """`text` followed by the explanation of each glossary term it shows (a tooltip built from words that name
    terms: a preset's, a fusion's or a parameter's)."""
    terms = [t for t in terms_in(text) if explain(t) not in text]
    return "\n\n".join([text, *map(explain, terms)]) if terms else text


def caption_text(*terms: str) -> str:
    """The explanations as one caption line."""
    return " · ".join(explain(t) for t in terms)


def column_help(names: list[str], config: dict[str, Any] | None = None) -> dict[str, Any]:
    """A grid's column_config with a header tooltip on each column whose name shows a glossary term (`err@10`,
    `A ndcg@10`, `RBO`): `config`'s own columns keep their type and width."""
    out: dict[str, Any] = dict(config or {})
    for name in names:
        terms = terms_in(name)
        if terms:
            base = out.get(name)  # a column config is a dict: copied, so the caller's stays as it was
            out[name] = st.column_config.Column(help=helps(*terms)) if base is None else {**base, "help": helps(*terms)}
    return out
