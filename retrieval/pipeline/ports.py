"""What the search phase needs from the outside world, as `typing.Protocol`s: a dense store, a sparse
index and the reader a query holds (one immutable version of it for a whole query) and a fact source.
`MemoryStore`, `BM25Index`/`BM25Snapshot` (and `LanceFtsSparse`) and `FactStore` implement them; a test double
only has to. Search calls nothing else on them (no `hasattr` probing for undeclared methods).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from retrieval.facts.model import Fact
from retrieval.types import MemoryTrace, Mood, Scope, ScoredMemoryTrace

if TYPE_CHECKING:
    from retrieval.bm25.index import BM25Index
    from retrieval.bm25.snapshot import BM25Snapshot
    from retrieval.facts.store import FactStore
    from retrieval.sparse.fts import LanceFtsSparse
    from retrieval.store.memory import MemoryStore


@runtime_checkable
class DenseStore(Protocol):
    """Vector search with cognitive scoring, and look-ups by id (the dense side, SPEC §2)."""

    @property
    def embedder(self) -> Any: ...

    def query_vector(self, vector: np.ndarray, mood: Mood | None = None, top_k: int = 20,
                     scopes: Sequence[Scope] | None = None, neutral_mood: bool = False,
                     scoring_weights: Mapping[str, float] | None = None) -> list[ScoredMemoryTrace]: ...

    def get_with_vectors(self, ids: Sequence[str], scopes: Sequence[Scope] | None = None,
                         active_only: bool = True) -> dict[str, tuple[MemoryTrace, np.ndarray]]: ...

    def score_hits(self, hits: Mapping[str, tuple[MemoryTrace, np.ndarray]], vector: np.ndarray,
                   mood: Mood | None = None, neutral_mood: bool = False,
                   scoring_weights: Mapping[str, float] | None = None) -> dict[str, ScoredMemoryTrace]: ...


@runtime_checkable
class SparseReader(Protocol):
    """One version of a sparse index, read for a whole query (SPEC §3)."""

    def search(self, query: str, top_k: int = 10,
               scopes: Sequence[Scope] | None = None) -> list[tuple[str, float]]: ...

    def scores_for(self, query: str, ids: Iterable[str]) -> dict[str, float]: ...

    def explain_terms(self, query: str, id: str) -> list[dict[str, Any]]: ...

    def explain_terms_for(self, query: str, ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """`explain_terms` of every id of `ids` the version holds (the others left out), in one read."""
        ...

    def query_idf(self, query: str) -> tuple[dict[str, float], int]:
        """Each query term's idf in this version (terms no document holds left out) and its document count;
        `({}, 0)` for a backend that keeps no idf."""
        ...

    @property
    def tokenizer(self) -> Callable[[str], list[str]]: ...

    def __contains__(self, doc_id: object) -> bool: ...

    def __len__(self) -> int: ...


@runtime_checkable
class SparseIndex(Protocol):
    """A sparse index a retriever holds: each query reads one version of it (`reader`)."""

    def reader(self, scopes: Sequence[Scope] | None = None, statistics: str | None = None) -> SparseReader: ...


@runtime_checkable
class FactSource(Protocol):
    """Facts as they stand, per scope (SPEC §7)."""

    def latest(self, scope: Scope, subject: str, predicate: str) -> Fact | None: ...

    def all_time_ordered(self, scope: Scope, subject: str) -> list[Fact]: ...


def _conforms(store: MemoryStore, index: BM25Index, snapshot: BM25Snapshot, fts: LanceFtsSparse,
              facts: FactStore) -> None:
    """Never called: mypy checks here that the real parts implement the protocols."""
    dense: DenseStore = store
    sparse: SparseReader = snapshot
    sparse = fts
    sparse_index: SparseIndex = index
    sparse_index = fts
    sparse_index = snapshot
    source: FactSource = facts
    del dense, sparse, sparse_index, source
