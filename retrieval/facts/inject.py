"""The fact graph's two pipeline steps: extraction at ingest, injection at query time (SPEC §7).

Injection is step 0 of retrieval: the facts a query asks for become synthetic traces placed first.
A fact is only as visible as the traces it came from (SPEC §12): one drawn from a trace that is
inactive, deleted or in another scope is never injected.
"""
from __future__ import annotations

from dataclasses import replace
from collections.abc import Callable, Iterable, Sequence

from retrieval.types import MemoryTrace, Scope, ScoredMemoryTrace
from retrieval.facts.classifiers import KeywordFactClassifier
from retrieval.facts.model import Fact, fact_to_trace, fact_trace_id

TEMPORAL_MODES = ("subject", "predicates")
# `visible(ids) -> set of ids` that are active and in the query's scope.
Visible = Callable[[list[str]], set[str]]


def extract_for_traces(fact_store, extractor, traces: Iterable[MemoryTrace],
                       replace_ids: Iterable[str] = ()) -> tuple[int, list[str]]:
    """Run an extractor over traces and upsert per scope. Returns (new facts, warnings).

    `replace_ids`: traces whose stored facts this write replaces (a re-ingested trace's old text, a
    deleted one's); their facts that the new extraction does not give again are removed first, so
    an unchanged re-ingest changes nothing and a changed one leaves no stale fact beside the new."""
    by_scope, warnings = extract(extractor, traces)
    return store_extracted(fact_store, by_scope, replace_ids), warnings


def extract(extractor, traces: Iterable[MemoryTrace]) -> tuple[dict[Scope, list[Fact]], list[str]]:
    """The facts of the active `traces` per scope, and a warning per trace whose extraction failed."""
    by_scope: dict[Scope, list[Fact]] = {}
    warnings: list[str] = []
    for t in traces:
        if not t.is_active:
            continue
        try:
            facts = extractor.extract(t.content, trace_id=t.id, timestamp=t.created_at)
        except Exception as exc:
            warnings.append(f"{t.id}: extraction failed ({type(exc).__name__}: {exc})")
            continue
        by_scope.setdefault(t.scope_key, []).extend(facts)
    return by_scope, warnings + list(getattr(extractor, "warnings", []))


def store_extracted(fact_store, by_scope: dict[Scope, list[Fact]], replace_ids: Iterable[str] = ()) -> int:
    """Upsert extracted facts; the facts of `replace_ids` that the extraction does not give again go first."""
    replace_ids = list(replace_ids)
    if replace_ids:
        keep = {(s.scope, s.scope_id, f.key) for s, facts in by_scope.items() for f in facts}
        fact_store.delete_for_traces(replace_ids, keep=keep)
    return sum(fact_store.upsert(scope, facts) for scope, facts in by_scope.items())


def visible_in(memory_store, scope: Scope) -> Visible:
    """A `visible` function over a MemoryStore: the ids that exist, are active and are in `scope`."""
    def visible(ids: list[str]) -> set[str]:
        return {t.id for t in memory_store.get(ids) if t.is_active and t.scope_key == scope}

    return visible


def _visible_filter(facts: Sequence[Fact], visible: Visible | None) -> Callable[[Fact], bool]:
    if visible is None:
        return lambda _fact: True
    ids = sorted({i for f in facts for i in f.source_trace_ids})
    shown = set(visible(ids)) if ids else set()
    # A fact with no source (added by hand) has no trace to hide with, so it stays.
    return lambda f: not f.source_trace_ids or not shown.isdisjoint(f.source_trace_ids)


def fact_traces_for_query(fact_store, classifier, query: str, scope: Scope | None,
                          temporal_mode: str = "subject", *,
                          visible: Visible | None = None) -> tuple[list[Fact], list[ScoredMemoryTrace]]:
    """Step 0 of the pipeline: the facts a query asks for, as synthetic traces (scope-checked).

    A temporal query gets history: every fact of the subject (`temporal_mode="subject"`, AgentOS)
    or every fact of the asked predicates (`"predicates"`, the hybrid preset; falls back to the
    subject's facts when those predicates have none). Otherwise the latest fact per asked pair.
    `visible`, when given, is asked once for the source ids of every candidate fact; facts with no
    visible source are dropped *before* the latest is chosen, so an older visible fact can answer.
    """
    if temporal_mode not in TEMPORAL_MODES:
        raise ValueError(f"temporal_mode {temporal_mode!r} is not one of {', '.join(TEMPORAL_MODES)}")
    if scope is None:
        return [], []
    classifier = classifier or KeywordFactClassifier()
    pairs, temporal = classifier.classify(query)
    subjects = list(dict.fromkeys(s for s, _ in pairs))
    # One read per subject, oldest first in (timestamp, write order); filtered by visibility at once.
    history = {s: fact_store.all_time_ordered(scope, s) for s in subjects}
    keep = _visible_filter([f for h in history.values() for f in h], visible)
    history = {s: [f for f in h if keep(f)] for s, h in history.items()}
    facts: list[Fact] = []
    if temporal:
        for subject in subjects:
            h = history[subject]
            if temporal_mode == "predicates":
                asked = {p for s, p in pairs if s == subject}
                h = [f for f in h if f.predicate in asked] or h
            facts += h
    else:
        for subject, predicate in dict.fromkeys(pairs):
            same = [f for f in history[subject] if f.predicate == predicate]
            if same:
                facts.append(same[-1])
    return _as_traces(facts, scope)


def _as_traces(facts: list[Fact], scope: Scope) -> tuple[list[Fact], list[ScoredMemoryTrace]]:
    """Trace ids are subject:predicate:time, so two facts of one instant ("I live in Paris. I moved
    to Amsterdam." in one note) would collide: the later ones get `#2`, `#3`, … and both stay. The
    same statement from two traces is shown once. The two lists stay aligned, index for index."""
    kept: list[Fact] = []
    out: list[ScoredMemoryTrace] = []
    seen: set[tuple[str, str]] = set()
    n: dict[str, int] = {}
    for f in facts:
        base = fact_trace_id(f)
        if (base, f.object) in seen:
            continue
        seen.add((base, f.object))
        n[base] = n.get(base, 0) + 1
        t = fact_to_trace(f, scope)
        if n[base] > 1:
            t = replace(t, trace=replace(t.trace, id=f"{base}#{n[base]}"))
        kept.append(f)
        out.append(t)
    return kept, out
