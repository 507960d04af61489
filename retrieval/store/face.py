"""`AppStore`: what the app (`app.py`, `pages/`, `ui/`) may ask of a store — the one face they read it through.

Pages and `ui/` never open a LanceDB table themselves nor reach into the store's parts (`reads`, `writes`,
`row_copy`, `columns`, …): they read traces, counts, versions and tags through these members, which
`MemoryStore` and a store checked out as of a version (`store/asof.py`) both implement (mypy checks below).
`tests/test_layout.py` fails when a page or `ui/` module uses a store member not declared here. The search phase's
face is `retrieval.pipeline.ports.DenseStore`.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from retrieval.types import MemoryTrace, Scope

if TYPE_CHECKING:
    from retrieval.store.asof import AsOfStore
    from retrieval.store.memory import MemoryStore


class AppStore(Protocol):
    """The members of a store the app uses."""

    @property
    def embedder(self) -> Any:
        """The embedder the store was built with (the app's models share it)."""
        ...

    read_only: bool  # nothing may be written through this store (a foreign table, a version read as of)

    def get(self, ids: Sequence[str]) -> list[MemoryTrace]:
        """The stored traces of `ids` (any scope, active or not; unknown ids left out)."""
        ...

    def count(self, scope: Scope | None = None, active_only: bool = False) -> int: ...

    def scope_counts(self) -> dict[Scope, int]:
        """Traces per scope."""
        ...

    def browse(self, scope: Scope | None = None, contains: str | None = None, limit: int = 200,
               offset: int = 0) -> list[MemoryTrace]:
        """The Corpus page's rows: a scope's traces, optionally those containing a substring."""
        ...

    def version(self) -> int:
        """The newest committed table version (0 without a table)."""
        ...

    def stored_versions(self) -> list[tuple[int, datetime]]:
        """(version, commit time) of every version still stored, oldest first (the As-of picker)."""
        ...

    def tags(self) -> dict[str, int]:
        """Tag name → version."""
        ...


MEMBERS = ("embedder", "read_only", "get", "count", "scope_counts", "browse", "version", "stored_versions", "tags")


def _conforms(store: MemoryStore, then: AsOfStore) -> None:
    """Never called: mypy checks here that a live store and a store as of a version both implement `AppStore`."""
    live: AppStore = store
    live = then
    del live
