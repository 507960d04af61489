"""Split-on-ambiguous helpers (SPEC §8). Pure functions."""
from __future__ import annotations

import math
from collections.abc import Sequence

MIN_SPLIT_CHARS = 50
_SENTENCE_END = ".!?"


def split_point(text: str) -> int | None:
    """Index where the second half starts, or None when the text is not split.

    Search outward from `mid = len//2` up to `int(len*0.4)` characters, trying `mid-o` before
    `mid+o`, for `.`, `!` or `?` followed by whitespace (never the first or last character);
    split after it. Otherwise split at the first space at or after `mid`. Under 50 characters,
    or with neither, there is no split.
    """
    n = len(text)
    if n < MIN_SPLIT_CHARS:
        return None
    mid = n // 2
    reach = int(n * 0.4)
    for o in range(reach + 1):
        for i in ((mid - o, mid + o) if o else (mid,)):
            if 0 < i < n - 1 and text[i] in _SENTENCE_END and text[i + 1].isspace():
                return i + 1
    space = text.find(" ", mid)
    return space if space != -1 else None


def split_halves(text: str) -> tuple[str, str] | None:
    """`(a, b)` stripped halves, or None when the text is not split (or a half would be empty)."""
    at = split_point(text)
    if at is None:
        return None
    a, b = text[:at].strip(), text[at:].strip()
    if not a or not b:
        return None
    return a, b


def split_candidates(ids: Sequence[str], rerank_scores: dict[str, float], threshold: float) -> list[str]:
    """The lowest `ceil(len(ids)*threshold)` ids by first-pass rerank score (no score = 0), ties id asc."""
    if not ids:
        return []
    order = sorted(ids, key=lambda i: (rerank_scores.get(i, 0.0), i))
    return order[: math.ceil(len(ids) * threshold)]


def validate_threshold(threshold: float | None) -> float | None:
    """The constructor's `split_ambiguous_threshold`: None (off) or a number the rule table's
    `split_threshold` knob allows, (0, 1]."""
    from retrieval.pipeline.settings import check_knob

    if threshold is None:
        return None
    try:
        return float(check_knob("split_threshold", threshold))
    except ValueError:
        raise ValueError(f"split_ambiguous_threshold must be in (0, 1], got {threshold!r}; use None to disable") \
            from None
