"""Writers of one store are serialised: a re-entrant lock per store inside the process and, for a
local store, an advisory `fcntl` lock on a file beside the data across processes."""
from __future__ import annotations

import fcntl
import logging
import threading
from typing import BinaryIO
from pathlib import Path

from retrieval.cache import ProcessCache

log = logging.getLogger(__name__)


class FileLock:
    """A re-entrant thread lock plus, when `path` is given, an fcntl lock on that file."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0
        self._fh: BinaryIO | None = None

    def __enter__(self):
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1 and self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "a+b")
                fcntl.flock(self._fh, fcntl.LOCK_EX)
            except OSError as exc:  # read-only store: nothing can be written, so nothing to serialise
                log.debug("no file lock at %s: %s", self.path, exc)
                self._fh = None
        return self

    def __exit__(self, *exc):
        self._depth -= 1
        if self._depth == 0 and self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
        self._lock.release()


LOCKS: ProcessCache[tuple[str, str], FileLock] = ProcessCache("each store's one lock by (backend, location)")


def lock_for(key: tuple[str, str], path: Path | None) -> FileLock:
    """The one lock of a store (`key`), shared by every MemoryStore on it in this process."""
    return LOCKS.get_or_build(key, lambda: FileLock(path))
