"""The row copy's float32 vectors on local disk (store/row_copy.py): exact re-scoring without LanceDB's
random reads, and without holding 1.5 GB of vectors (1M × 384) in the process's memory."""
from __future__ import annotations

import logging
import os
import tempfile
from typing import BinaryIO
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)


class Spill:
    """The copy's float32 vectors in an unlinked temporary file, one fixed-size row per position:
    read back with pread (thread-safe, no shared offset) from the OS page cache, which is not this
    process's memory. The file disappears with the last copy using it, or with the process (also
    on kill -9: it has no name). A write error (a full disk) turns it off: reads go to LanceDB."""

    def __init__(self):
        self.ok, self.row_bytes, self.dim = True, 0, 0
        self._file: BinaryIO | None = None
        try:
            # kept open for the copy's life and closed in close(), so no context manager
            self._file = tempfile.TemporaryFile(  # noqa: SIM115
                prefix="retrieval-rowcopy-", dir=os.environ.get("RETRIEVAL_SPILL_DIR"))
        except OSError as exc:
            self._off(exc)

    def _off(self, exc: BaseException) -> None:
        log.warning("row copy: no spill file for vectors (%s); reading them from LanceDB instead", exc)
        self.ok = False
        if self._file is not None:
            self._file.close()
            self._file = None

    def _fileno(self) -> int:
        if self._file is None:  # turned off (`ok` False): callers check `ok` first
            raise OSError("the spill file is off")
        return self._file.fileno()

    def write(self, pos: np.ndarray, m: np.ndarray) -> None:
        """Rows `m` (float32) at positions `pos`, written as runs of consecutive positions."""
        if not self.ok:
            return
        m = np.ascontiguousarray(m, np.float32)
        self.dim, self.row_bytes = m.shape[1], 4 * m.shape[1]
        order = np.argsort(pos, kind="stable")
        ps, ms = pos[order], m[order]
        cuts = np.flatnonzero(np.diff(ps) != 1) + 1
        try:
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(ps)]):
                data, at = memoryview(ms[a:b].tobytes()), int(ps[a]) * self.row_bytes
                while data:  # pwrite may write less than asked
                    done = os.pwrite(self._fileno(), data, at)
                    if done <= 0:
                        raise OSError(f"pwrite wrote {done} bytes")
                    data, at = data[done:], at + done
        except OSError as exc:
            self._off(exc)

    def read(self, positions: Sequence[int]) -> list[np.ndarray]:
        fd, rb = self._fileno(), self.row_bytes
        out = [os.pread(fd, rb, int(p) * rb) for p in positions]
        if any(len(b) != rb for b in out):  # a regular local file reads whole rows; anything else is a bug
            raise OSError(f"spill file: short read ({[len(b) for b in out if len(b) != rb][0]} of {rb} bytes)")
        return [np.frombuffer(b, np.float32) for b in out]
