"""`BoundedCache`: the one cache class — at most `maxsize` values, least recently used out first, thread-safe, each
value built once per key even when many threads ask for it at once (a build holds only its own key's lock, so
hits and other keys go on meanwhile). Whoever creates one owns it (a `Workspace` its as-of versions, a bare
`HybridRetriever` its own, a BM25 version its scoped views) and it lives as long as its owner.

`ProcessCache`: the same, never dropping a value, for what must be one per process and lives as long as it — a loaded
model, a local model server, a store's lock (dropping a lock would let two locks guard one store). Each is a named
module constant whose name says what it holds; no module keeps a bare dict as a cache (`tests/test_cache.py` reads
every module). `cachetools` is not in the environment; these are the small classes in one place.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most `maxsize` values by key, the least recently used dropped first (None: no bound; `ProcessCache`)."""

    def __init__(self, maxsize: int | None) -> None:
        if maxsize is not None and (not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1):
            raise ValueError(f"a cache holds at least one value, got maxsize={maxsize!r}")
        self.maxsize = maxsize
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[K, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def keys(self) -> list[K]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._values)

    def get(self, key: K) -> V | None:
        """The value for `key` (now the most recently used), or None."""
        with self._lock:
            if key not in self._values:
                return None
            self._values.move_to_end(key)
            return self._values[key]

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while self.maxsize is not None and len(self._values) > self.maxsize:
                self._values.popitem(last=False)
        return value

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The value for `key`, built by `build()` once when missing (concurrent askers wait for that build)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            lock = self._building.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]
            try:
                return self.put(key, build())
            finally:
                with self._lock:
                    self._building.pop(key, None)

    def invalidate(self, which: Callable[[K], bool] | None = None) -> int:
        """Drop the values whose key `which` accepts (every value when None); how many were dropped."""
        with self._lock:
            gone = [k for k in self._values if which is None or which(k)]
            for k in gone:
                del self._values[k]
        return len(gone)


class ProcessCache(BoundedCache[K, V]):
    """One value per key for the life of the process, built once (concurrent askers wait for that build), never
    dropped: `what` names what it holds, for a reader and a repr."""

    def __init__(self, what: str) -> None:
        super().__init__(None)
        self.what = what

    def __repr__(self) -> str:
        return f"ProcessCache({self.what!r}, {len(self)} held)"

    def invalidate(self, which: Callable[[K], bool] | None = None) -> int:
        del which  # whatever it names: nothing is dropped
        raise TypeError(f"{self!r} holds one value per process for its life; nothing is dropped from it")
