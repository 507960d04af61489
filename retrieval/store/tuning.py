"""Process-level settings for serving a large store: LanceDB's scan read-ahead, BLAS threads, and
handing freed memory back to the OS (store/row_copy.py builds its row copy with them)."""
from __future__ import annotations

import os

import pyarrow as pa


def bound_scan_read_ahead() -> None:
    """LanceDB's scans read ahead up to LANCE_DEFAULT_IO_BUFFER_SIZE bytes (its default: 2 GiB). Scanning the 1M
    benchmark store's vectors peaked ~680 MB above the process's baseline with the default and ~420 MB with
    64 MB, for ~15 % longer scans (the row copy's build, BM25 builds). Read by LanceDB at each scan; an
    operator's own setting wins. Called when a connection is made (`remote.open_db`), never at import."""
    os.environ.setdefault("LANCE_DEFAULT_IO_BUFFER_SIZE", str(64 * 2**20))


def release_freed_memory() -> None:
    """Hand memory freed by a (re)build back to the OS: Arrow's pool and glibc keep it otherwise."""
    pa.default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def single_threaded_blas() -> None:
    """One BLAS thread for this process. retrieve() already runs dense search beside BM25 and
    hydration, and LanceDB has its own threads; OpenBLAS's extra threads only contend with them
    (1M rows, 2 cores: scoped retrieve() p50 63 -> 54 ms). Torch (the embedder) is not affected."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # an optimisation only
        return
    threadpool_limits(limits=1, user_api="blas")
