"""`BoundedCache`: the one cache class — at most `maxsize` values, least recently used out first, thread-safe, each
value built once per key even when many threads ask for it at once (a build holds only its own key's lock, so
hits and other keys go on meanwhile). No module keeps a global cache: whoever creates one owns it (a `Workspace`
its as-of versions, a bare `HybridRetriever` its own, a BM25 version its scoped views) and it lives as long as
its owner. `cachetools` is not in the environment; this is the small class in one place.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most `maxsize` values by key, the least recently used dropped first."""

    def __init__(self, maxsize: int) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
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
            while len(self._values) > self.maxsize:
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
