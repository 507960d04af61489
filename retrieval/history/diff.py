"""What changed for one query between two versions of a store (the Changes view, `diff-versions`).

`diff_versions(then, now, query, …)` runs the same query with the same settings on two retrievers made by
`HybridRetriever.at` (or one of them live) and returns a JSON-ready dict: the five stage lists at A and at B,
per stage what entered and left, and for each trace that left the final top k the traces that displaced it
(entered above it) with the reasons: a new trace, edited content, (re)activated, a fact added or superseded,
and the BM25 idf of a query term that moved because traces containing it were added or removed.
"""
from __future__ import annotations

import math
from typing import Any

from retrieval.pipeline.records import STAGES
from retrieval.pipeline.search import bm25_reader

FACT_PREFIX = "fact-graph:"
IDF_EPS = 1e-9
SHOWN = 10  # ids of each stage list the Changes view and `diff-versions` print; entered/left are over these


def diff_versions(then: Any, now: Any, query: str, scope: Any = None, **retrieve_kw: Any) -> dict:
    """Run `query` on `then` and `now` (retrievers) with the same settings and say what changed."""
    res_a = then.retrieve(query, scope=scope, **retrieve_kw)
    res_b = now.retrieve(query, scope=scope, **retrieve_kw)
    return diff_results(then, now, res_a, res_b, query, scope)


def diff_results(then: Any, now: Any, res_a: Any, res_b: Any, query: str, scope: Any = None) -> dict:
    """The Changes of two results of one query (JSON-ready)."""
    stages = {s: _stage(list(res_a.diagnostics.stage_ids[s]), list(res_b.diagnostics.stage_ids[s]), SHOWN)
              for s in STAGES}
    for s in STAGES:
        stages[s]["scores_a"] = _scores(res_a.diagnostics.stage_scores.get(s, {}), stages[s]["a"])
        stages[s]["scores_b"] = _scores(res_b.diagnostics.stage_scores.get(s, {}), stages[s]["b"])
    idf = idf_moves(then, now, query, scope)
    ctx = _Context(then, now, res_a, res_b, idf)
    final_a, final_b = stages["final"]["a"], stages["final"]["b"]
    displaced = []
    for x in final_a:
        if x in final_b:
            continue
        rank_a = final_a.index(x) + 1
        above = [y for y in final_b[:rank_a] if y not in final_a[:rank_a]]
        displaced.append({"id": x, "rank_a": rank_a, "rank_b": _rank(x, final_b), "why": ctx.why_left(x),
                          "displaced_by": [{"id": y, "rank_b": final_b.index(y) + 1, "rank_a": _rank(y, final_a),
                                            "reasons": ctx.why_entered(y)} for y in above]})
    return {"query": query, "scope": str(scope) if scope is not None else None,
            "from": _state(then), "to": _state(now), "k": len(final_a) or len(final_b), "shown": SHOWN,
            "stages": stages, "displaced": displaced, "idf": idf,
            "facts": fact_changes(res_a.diagnostics.facts, getattr(now, "fact_store", None), scope)}


def _stage(a: list[str], b: list[str], shown: int) -> dict:
    """A stage's lists at A and B, and what entered and left its top `shown` — the lists a reader sees printed,
    so "left" names exactly the ids visible at A that are not visible at B (dropped below, or gone)."""
    top_a, top_b = a[:shown], b[:shown]
    return {"a": a, "b": b, "entered": [i for i in top_b if i not in top_a],
            "left": [i for i in top_a if i not in top_b]}


def _scores(scores: Any, ids: list[str]) -> dict[str, float]:
    return {i: float(scores[i]) for i in ids if i in scores}


def _rank(tid: str, ids: list[str]) -> int | None:
    return ids.index(tid) + 1 if tid in ids else None


def _state(r: Any) -> dict:
    view = getattr(r, "as_of_state", None)
    if view is None:
        version = r.memory_store.version()
        return {"version": version, "label": f"version {version} (the newest, live)", "tag": None, "latest": True}
    p = view.pinned
    return {"version": p.version, "label": p.label, "tag": p.tag, "latest": p.latest,
            "committed": p.timestamp.isoformat()}


def _reader(r: Any, scope: Any) -> Any:
    return bm25_reader(r.bm25, [scope] if scope is not None else None, getattr(r, "bm25_statistics", None))


def _df(n: int, idf: float) -> int:
    """Documents containing a term, from its idf = ln(1 + (N − df + 0.5)/(df + 0.5)) (SPEC §3) and N."""
    if n <= 0:
        return 0
    e = math.exp(idf)
    return max(0, round((n + 1) / e - 0.5))


def idf_moves(then: Any, now: Any, query: str, scope: Any = None) -> list[dict]:
    """Query terms whose BM25 idf differs between the two versions (with the statistics each query used)."""
    ra, rb = _reader(then, scope), _reader(now, scope)
    if not (hasattr(ra, "idf") and hasattr(rb, "idf")):
        return []  # LanceDB FTS keeps its statistics to itself
    out = []
    for term in dict.fromkeys(rb.tokenizer(query or "")):
        x, y = float(ra.idf(term)), float(rb.idf(term))
        if abs(x - y) > IDF_EPS:
            dfa, dfb = _df(len(ra), x), _df(len(rb), y)
            out.append({"term": term, "from": round(x, 4), "to": round(y, 4), "df_from": dfa, "df_to": dfb,
                        "documents_from": len(ra), "documents_to": len(rb), "sentence": _idf_sentence(term, x, y,
                                                                                                       dfa, dfb)})
    return out


def _idf_sentence(term: str, x: float, y: float, dfa: int, dfb: int) -> str:
    n = dfb - dfa
    why = (f"{n} more trace(s) contain it" if n > 0 else f"{-n} fewer trace(s) contain it" if n < 0
           else "the number of traces searched changed")
    return f"BM25 idf of '{term}' moved from {x:.3f} to {y:.3f} because {why}"


class _Context:
    """Look-ups for the reasons: each trace as stored at A and at B, the facts each query injected."""

    def __init__(self, then: Any, now: Any, res_a: Any, res_b: Any, idf: list[dict]):
        self.then, self.now, self.idf = then, now, idf
        self.res_a, self.res_b = res_a, res_b
        self.facts_a = {i for i in res_a.diagnostics.fact_ids}
        self.facts_b = {i for i in res_b.diagnostics.fact_ids}

    def _trace(self, r: Any, tid: str) -> Any:
        if tid.startswith(FACT_PREFIX):
            return None
        found = r.memory_store.get([tid])
        return found[0] if found else None

    def _score(self, res: Any, tid: str) -> float | None:
        s = res.diagnostics.stage_scores.get("final", {})
        return float(s[tid]) if tid in s else None

    def why_entered(self, tid: str) -> list[str]:
        if tid.startswith(FACT_PREFIX):
            return ["a fact added since version A" if tid not in self.facts_a else "the same fact ranks higher now"]
        a, b = self._trace(self.then, tid), self._trace(self.now, tid)
        out = []
        if a is None:
            out.append("new trace (added after version A)")
        elif b is not None and a.content != b.content:
            out.append("edited content")
        elif b is not None and not a.is_active and b.is_active:
            out.append("activated again")
        out += self._idf_reasons(tid)
        if not out:
            sa, sb = self._score(self.res_a, tid), self._score(self.res_b, tid)
            out.append(f"its score rose from {sa:.3f} to {sb:.3f}" if sa is not None and sb is not None
                       else "it ranks higher now (another trace left)")
        return out

    def why_left(self, tid: str) -> str:
        if tid.startswith(FACT_PREFIX):
            prefix = tid.rsplit(":", 1)[0] + ":"
            newer = [f for f in self.facts_b if f.startswith(prefix)]
            return (f"fact superseded by {newer[0]}" if newer else
                    "fact no longer injected (its source trace was edited, deleted or deactivated)")
        b = self._trace(self.now, tid)
        a = self._trace(self.then, tid)
        if b is None:
            return "deleted"
        if not b.is_active:
            return "deactivated"
        if a is not None and a.content != b.content:
            return "edited content"
        return "pushed below the top k by the traces above it"

    def _idf_reasons(self, tid: str) -> list[str]:
        """The idf moves of the terms this trace matched at B."""
        if not self.idf:
            return []
        try:
            terms = self.res_b.diagnostics.explain(tid).bm25_terms or {}
        except (KeyError, ValueError):
            return []
        moved = [m["term"] for m in self.idf if terms.get(m["term"], 0.0) > 0]
        if not moved:
            return []  # each idf move is told once, in the diff's `idf` sentences; a reason names its terms
        return ["the BM25 idf of " + ", ".join(f"'{t}'" for t in moved) + " moved (why: below)"]


def fact_changes(facts: Any, live_facts: Any, scope: Any) -> list[dict]:
    """For facts a query injected at an earlier version: still current, superseded (a later fact of the same
    subject and predicate now answers), or gone (its source trace was edited, deleted or deactivated since).
    A superseded fact is shown as it stood, with what replaced it: never hidden."""
    if live_facts is None or scope is None:
        return []
    out = []
    for f in facts:
        history = live_facts.history(scope, f.subject, f.predicate)
        now = history[-1] if history else None
        keys = {h.key for h in history}
        if now is not None and now.key == f.key:
            state, sentence = "current", f"{f.subject} {f.predicate} {f.object}: still the current fact"
        elif now is not None:
            state = "superseded"
            sentence = (f"{f.subject} {f.predicate} {f.object} (as of {f.timestamp:%Y-%m-%d}) was superseded by "
                        f"{now.object} (as of {now.timestamp:%Y-%m-%d})"
                        + ("" if f.key in keys else "; the earlier fact itself is no longer stored"))
        else:
            state, sentence = "gone", (f"{f.subject} {f.predicate} {f.object}: no longer stored (its source trace "
                                       "was edited, deleted or deactivated since)")
        out.append({"subject": f.subject, "predicate": f.predicate, "object": f.object,
                    "timestamp": f.timestamp.isoformat(), "state": state,
                    "now": now.object if now is not None else None, "sentence": sentence})
    return out
