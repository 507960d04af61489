"""The five stage lists side by side as plain text, what `python -m retrieval query` prints."""
from __future__ import annotations

import sys

from retrieval.hybrid import STAGES


def _cell(ids: list[str], scores: dict[str, float], i: int) -> str:
    if i >= len(ids):
        return ""
    tid = ids[i]
    return f"{tid[:28]} ({scores.get(tid, 0):.3f})"


def print_stages(result, limit: int = 15, file=None) -> None:
    file = file or sys.stdout
    d = result.diagnostics
    width = 36
    print("rank  " + "".join(s.ljust(width) for s in STAGES), file=file)
    rows = min(limit, max((len(d.stage_ids[s]) for s in STAGES), default=0))
    for i in range(rows):
        print(f"{i + 1:>4}  " + "".join(_cell(d.stage_ids[s], d.stage_scores[s], i).ljust(width) for s in STAGES),
              file=file)
