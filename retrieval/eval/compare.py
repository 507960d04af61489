"""Comparing two ranked lists, and finding a query's judgments: pure functions the Compare page shows.

`compare_rankings(a, b)` returns the overlap, Jaccard similarity, what entered and left the top k,
and for every id in B its rank delta against A — the numbers a reviewer reads off two columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence


@dataclass(frozen=True)
class RankDelta:
    """One id of list B against list A: `delta` > 0 means it moved up in B (None: not in A)."""

    id: str
    rank_b: int
    rank_a: int | None

    @property
    def delta(self) -> int | None:
        return None if self.rank_a is None else self.rank_a - self.rank_b

    @property
    def label(self) -> str:
        d = self.delta
        if d is None:
            return "entered"
        return "=" if d == 0 else (f"▲{d}" if d > 0 else f"▼{-d}")


@dataclass(frozen=True)
class RankingComparison:
    a: tuple[str, ...]
    b: tuple[str, ...]
    overlap: int
    jaccard: float
    entered: tuple[str, ...]  # in B, not in A (B's order)
    left: tuple[str, ...]  # in A, not in B (A's order)
    deltas: tuple[RankDelta, ...]  # one per id of B, in B's order

    @property
    def k(self) -> int:
        return max(len(self.a), len(self.b))


def compare_rankings(a: Sequence[str], b: Sequence[str]) -> RankingComparison:
    """Compare ranked id lists A (baseline) and B. Duplicate ids keep their first rank."""
    a, b = tuple(dict.fromkeys(a)), tuple(dict.fromkeys(b))
    rank_a = {i: r for r, i in enumerate(a, 1)}
    sa, sb = set(a), set(b)
    union = sa | sb
    return RankingComparison(
        a=a, b=b, overlap=len(sa & sb), jaccard=len(sa & sb) / len(union) if union else 1.0,
        entered=tuple(i for i in b if i not in sa), left=tuple(i for i in a if i not in sb),
        deltas=tuple(RankDelta(i, r, rank_a.get(i)) for r, i in enumerate(b, 1)))
