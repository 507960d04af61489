"""The frozen records passed between the pipeline's two phases (STYLE: "Two phases").

`SearchRecord` is what *search* produced — every stage input, model score and error — and is
never changed afterwards. `Diagnostics` is what *assemble* derived from it for one `RetrievalSettings`.
`Explanation` is what `explain` says about one id. All are public and typed: the app, evaluation
and explain read them without touching anything underscored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Mapping

import numpy as np

from retrieval.metrics import fact_credit
from retrieval.pipeline.explain import Explanation, explain
from retrieval.pipeline.adaptive import Adapted, Strengths
from retrieval.pipeline.settings import RetrievalSettings
from retrieval.types import Mood, Scope, ScoredMemoryTrace

STAGES = ("dense", "sparse", "merged", "reranked", "final")

ESC_SPARSE_EMPTY = "hybrid-retriever:sparse-empty"
ESC_HYDE = "hyde:fallback"
ESC_RERANK = "reranker:error"
ESC_SPLIT = "split:error"
ESC_EMPTY = "query:empty"
ESC_MULTI = "multi-query:fallback"
ESC_FACTS = "facts:error"
ESC_TRUNCATED = "query:truncated"


class FrozenDict(dict):
    """A dict that refuses mutation, so a frozen record's mappings are frozen too (and it pickles)."""

    def _refuse(self, *_args: Any, **_kwargs: Any) -> None:
        raise TypeError("this mapping belongs to a frozen record; build a new one instead")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: repr(kv[0]))))


def frozen(mapping: Mapping | None = None) -> FrozenDict:
    return mapping if isinstance(mapping, FrozenDict) else FrozenDict(mapping or {})


def as_vector(vec: np.ndarray | None) -> tuple[float, ...] | None:
    """A query vector as a tuple: immutable, comparable and picklable like the rest of the record."""
    return None if vec is None else tuple(float(x) for x in np.asarray(vec, dtype=np.float32))


@dataclass(frozen=True)
class RerankRecord:
    """The reranker's calls over the pool (one for the pool, one for split halves)."""

    pool_ids: tuple[str, ...] = ()
    scores: FrozenDict | None = None  # id -> score in [0, 1]; None when the call failed
    error: str | None = None
    split_candidate_ids: tuple[str, ...] = ()
    split_halves: FrozenDict = field(default_factory=FrozenDict)  # id -> (a, b)
    split_scores: FrozenDict | None = None  # id -> (score a, score b)
    split_error: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class SearchRecord:
    """Everything the expensive steps produced for one query; read-only input to `assemble`."""

    query: str
    search_queries: tuple[str, ...]
    scope: Scope | None
    mood: Mood | None
    qvec: tuple[float, ...] | None
    dense_lists: tuple[tuple[ScoredMemoryTrace, ...], ...]
    sparse_lists: tuple[tuple[tuple[str, float], ...], ...]
    sparse_hydrated: FrozenDict  # sparse-only ids found in the store (hybrid), scored
    dense_bm25: FrozenDict  # BM25 of dense hits past the sparse top-N (rank completion)
    fact_traces: tuple[ScoredMemoryTrace, ...]
    facts: tuple[Any, ...]
    rerank: RerankRecord | None  # None: no reranker configured (or nothing to rerank)
    escalations: tuple[str, ...]
    timings_ms: FrozenDict
    over_fetch_top_k: int  # candidates each list was searched for: recall_top_k × over_fetch_multiplier
    hypothesis: str | None = None
    over_fetch_multiplier: int = 1  # the multiplier of that search; a re-fusion's depth check uses it
    # The query's terms' idf in the BM25 version it read (scoped statistics when they apply; terms no document holds
    # left out) and that version's document count; empty / 0 for a backend without idf (LanceDB FTS).
    query_idf: FrozenDict = field(default_factory=FrozenDict)
    bm25_docs: int = 0
    # What explanations show of BM25, read at search time from the version searched (so a result holds data, never
    # a store handle): each touched id's per-term score tree for the searched query (`SparseReader.explain_terms`),
    # and the query terms BM25 matched only in a trace's indexed context, not in its content.
    bm25_terms: FrozenDict = field(default_factory=FrozenDict)  # id -> tuple of term rows
    bm25_context_terms: FrozenDict = field(default_factory=FrozenDict)  # id -> tuple of terms

    @property
    def credit(self) -> dict[str, str]:
        """{fact-graph trace id: its source trace id}: how every metric scores a fact in a list (`metrics.credited`)."""
        return fact_credit(self.fact_traces, self.facts)

    @property
    def searched_query(self) -> str:
        """The text dense and sparse searched: the HyDE hypothesis when one was used, else the query."""
        return self.search_queries[0] if self.search_queries else ""


@dataclass(frozen=True)
class Blend:
    """`blended = (1 - weight) * base + weight * rerank` (SPEC §6 step 6)."""

    base: float
    rerank: float
    weight: float
    blended: float


@dataclass(frozen=True)
class SplitOutcome:
    """One split candidate: both halves, their scores, the whole's score and what was done."""

    halves: tuple[str, str]
    half_scores: tuple[float, float]
    whole: float
    replaced: bool
    chosen: str | None = None  # "a" or "b" when replaced
    gain: float = 0.0  # rerank_weight * (half - whole) when replaced


@dataclass(frozen=True)
class Diagnostics:
    """What one assembly of a `SearchRecord` under `settings` did, stage by stage."""

    stage_ids: FrozenDict  # stage -> list of ids (all five keys; SPEC §6 promises lists)
    stage_scores: FrozenDict  # stage -> {id: score}
    escalations: list[str]
    hyde: str | None
    multi_query: list[str]
    split_on_ambiguous: FrozenDict | None
    timings_ms: FrozenDict
    candidates_scanned: int
    settings: RetrievalSettings
    fact_ids: list[str]
    record: SearchRecord
    fused: FrozenDict = field(default_factory=FrozenDict)  # id -> Fused
    blend: FrozenDict = field(default_factory=FrozenDict)  # id -> Blend
    splits: FrozenDict = field(default_factory=FrozenDict)  # id -> SplitOutcome
    dropped_at_hydrate: FrozenDict = field(default_factory=FrozenDict)  # id -> "preset" | "missing"
    cut_by_rerank: frozenset = frozenset()
    imputed: FrozenDict = field(default_factory=FrozenDict)  # id -> list whose rank was completed
    pool: FrozenDict = field(default_factory=FrozenDict)  # id -> trace as it stands after rerank/split
    # With `settings.adaptive`: the strategy fusion used (this query's weights) and why; as a mapping, plain data.
    adaptive: Adapted | None = None
    # The store's learned adaptive rule strengths this assembly used (None: the shipped rules): the store's record,
    # not a knob, so it travels beside the settings value; `reweight` keeps it.
    strengths: Strengths | None = None
    # The store look-up a live result of `HybridRetriever.retrieve` carries so that `explain(id)` answers for an id
    # the caller names but the query never touched (SPEC §6). Not data: never compared, dropped when the result is
    # pickled or copied (a copy explains such an id only with a `lookup` passed in).
    lookup: Any = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "lookup": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def facts(self) -> list[Any]:
        """The `Fact`s injected as fact-graph traces, in injection order."""
        return list(self.record.facts)

    @property
    def credit(self) -> dict[str, str]:
        """{fact-graph trace id: its source trace id}: how every metric scores a fact in a list (`metrics.credited`)."""
        return self.record.credit

    @property
    def searched_query(self) -> str:
        return self.record.searched_query

    @property
    def fusion_weights(self) -> tuple[float, float]:
        """The (dense, sparse) weights fusion used: the adapted ones under `adaptive`, else the settings'."""
        return (self.adaptive.strategy if self.adaptive is not None else self.settings.strategy).weights

    def explain(self, trace_id: str, lookup: Any = None, sees: Callable[[str], bool] | None = None) -> Explanation:
        """Why `trace_id` is where it is (or why it is not in the final list). See `retrieval.pipeline.explain`.

        An id the query touched is explained from this value alone. For an id it never touched, `lookup` (a
        `retrieval.pipeline.search.StoreLookup`, e.g. `HybridRetriever.lookup(scope)`) reads its stored row; a live
        result of `HybridRetriever.retrieve` brings its own (its pickled or copied form is plain data)."""
        return explain(self, trace_id, lookup if lookup is not None else self.lookup, sees)


@dataclass(frozen=True)
class RetrievalResult:
    traces: list[ScoredMemoryTrace]
    diagnostics: Diagnostics

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.traces]


Progress = Callable[[int, int], None]
