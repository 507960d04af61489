"""Compare two snapshots: per-metric deltas with a paired t-test, per-query deltas, what entered and
left the top k, and for each judged trace that moved, the stage where it first moved. Pure: no I/O.

Significance: a two-sided paired t-test (as `scipy.stats.ttest_rel`) over the queries judged in both
snapshots. Smucker, Allan & Carterette (CIKM 2007) found it agrees with the randomisation test on
IR metrics; it is deterministic, which keeps the CLI's JSON reproducible. No difference at all
gives p = 1; fewer than two paired queries gives no p-value (None).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from collections.abc import Mapping

from retrieval.pipeline.records import STAGES
from retrieval.metrics import PairedInterval, metric_names, paired_bootstrap, rank_biased_overlap
from retrieval.judgments.model import Snapshot, SnapshotQuery, scope_text
from retrieval.judgments.snapshots import rescore

TEST_NAME = "paired t-test (two-sided; as scipy.stats.ttest_rel)"


@dataclass(frozen=True)
class MetricDelta:
    metric: str
    a: float
    b: float
    delta: float
    p_value: float | None
    n: int  # queries judged in both
    # paired bootstrap 95 % interval of B − A over those queries (`retrieval.metrics.paired_bootstrap`); None: none
    interval: PairedInterval | None = None


@dataclass(frozen=True)
class Move:
    """A judged trace whose final rank differs; `stage` is the first stage where its rank differs."""

    trace_id: str
    grade: int
    rank_a: int | None  # 1-based final rank; None = not in the final list
    rank_b: int | None
    stage: str
    stage_rank_a: int | None
    stage_rank_b: int | None


@dataclass(frozen=True)
class QueryDelta:
    qid: str
    query: str
    scope: str
    a: float  # the headline metric
    b: float
    delta: float
    entered: tuple[str, ...]  # in B's top k, not in A's
    left: tuple[str, ...]
    moved: tuple[Move, ...]
    judged: bool
    rbo: float | None = None  # how alike A's and B's final lists are, judged or not (RBO, p = 0.9)


@dataclass(frozen=True)
class SnapshotDiff:
    a: str
    b: str
    metric: str
    k: int
    test: str
    metrics: tuple[MetricDelta, ...]
    queries: tuple[QueryDelta, ...]  # worst delta first
    config_changes: Mapping[str, tuple]
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()

    @property
    def p_value(self) -> float | None:
        return next((m.p_value for m in self.metrics if m.metric == self.metric), None)

    @property
    def rbo(self) -> float | None:
        """Mean similarity (rank-biased overlap) of the two final lists over the queries in both (None without)."""
        vals = [q.rbo for q in self.queries if q.rbo is not None]
        return sum(vals) / len(vals) if vals else None

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "metric": self.metric, "k": self.k, "test": self.test,
                "p_value": self.p_value, "rbo": self.rbo,
                "metrics": {m.metric: {"a": m.a, "b": m.b, "delta": m.delta, "p_value": m.p_value, "n": m.n,
                                       "interval": None if m.interval is None else
                                       {**m.interval.as_dict(), "text": m.interval.describe()}}
                            for m in self.metrics},
                "config_changes": {f: list(v) for f, v in self.config_changes.items()},
                "queries": [asdict(q) for q in self.queries], "only_in_a": list(self.only_in_a),
                "only_in_b": list(self.only_in_b)}


def paired_p_value(a: list[float], b: list[float]) -> float | None:
    """Two-sided paired t-test p-value; equals `scipy.stats.ttest_rel(b, a).pvalue` (a test checks),
    computed from the t distribution directly because `scipy.stats` takes seconds to import."""
    n = len(a)
    if n < 2:
        return None
    diffs = [y - x for x, y in zip(a, b)]
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    if var <= 1e-24 * max(1.0, mean * mean):  # zero variance: t is 0/0 or infinite
        return 1.0 if abs(mean) <= 1e-12 else 0.0
    from scipy.special import stdtr

    t = mean / math.sqrt(var / n)
    return float(2 * stdtr(n - 1, -abs(t)))


def _rank(ids: list[str], tid: str) -> int | None:
    return ids.index(tid) + 1 if tid in ids else None


def moves(qa: SnapshotQuery, qb: SnapshotQuery, grades: Mapping[str, int]) -> tuple[Move, ...]:
    """Judged traces whose final rank differs, each with the first stage where its rank differs."""
    fa, fb = qa.credited("final"), qb.credited("final")
    out = []
    for tid, grade in grades.items():
        ra, rb = _rank(fa, tid), _rank(fb, tid)
        if ra == rb:
            continue
        for s in STAGES:
            la, lb = qa.credited(s), qb.credited(s)
            if not la and not lb:
                continue  # the stage ran in neither (no reranker)
            sa, sb = _rank(la, tid), _rank(lb, tid)
            if sa != sb:
                out.append(Move(tid, int(grade), ra, rb, s, sa, sb))
                break
    return tuple(sorted(out, key=lambda m: (-m.grade, m.trace_id)))


def config_changes(a: Snapshot, b: Snapshot) -> dict[str, tuple]:
    fa, fb = a.config.as_fields(), b.config.as_fields()
    return {name: (fa[name], fb[name]) for name in fa if fa[name] != fb[name]}


def diff_snapshots(a: Snapshot, b: Snapshot, qrels: Mapping[str, Mapping[str, int]] | None = None,
                   k: int = 10, metric: str | None = None) -> SnapshotDiff:
    """B minus A. `qrels` (e.g. the store's current human grades) rescores both; None uses the grades
    each snapshot was run with, B's winning where both graded a query. Each metric has its paired t-test
    p-value and its paired bootstrap 95 % interval (10,000 resamples) over the queries judged in both. Each
    query's `rbo` is the rank-biased overlap of the two final lists (p = 0.9), judged or not."""
    names = metric_names(k)
    metric = metric or names[0]
    if metric not in names:
        raise ValueError(f"metric {metric!r} is unknown; use one of {', '.join(names)}")
    if qrels is None:
        qrels = {q: {**a.qrels.get(q, {}), **b.qrels.get(q, {})} for q in {*a.qrels, *b.qrels}}
    a, b = rescore(a, qrels, k, stages=("final",)), rescore(b, qrels, k, stages=("final",))
    qa, qb = {q.qid: q for q in a.queries}, {q.qid: q for q in b.queries}
    both = [q for q in qa if q in qb]
    paired = [q for q in both if qa[q].metrics and qb[q].metrics]
    deltas = []
    for m in names:
        va, vb = [qa[q].metrics[m] for q in paired], [qb[q].metrics[m] for q in paired]
        ma, mb = (sum(va) / len(va), sum(vb) / len(vb)) if paired else (0.0, 0.0)
        deltas.append(MetricDelta(m, ma, mb, mb - ma, paired_p_value(va, vb), len(paired),
                                  paired_bootstrap(va, vb) if paired else None))
    rows = []
    for q in both:
        x, y = qa[q], qb[q]
        ta, tb = x.credited("final")[:k], y.credited("final")[:k]
        sa, sb = x.metrics.get(metric, 0.0), y.metrics.get(metric, 0.0)
        rows.append(QueryDelta(q, x.query, scope_text(x.scope), sa, sb, sb - sa,
                               tuple(i for i in tb if i not in ta), tuple(i for i in ta if i not in tb),
                               moves(x, y, qrels.get(q, {})), bool(x.metrics and y.metrics),
                               rank_biased_overlap(x.credited("final"), y.credited("final"))))
    rows.sort(key=lambda r: (round(r.delta, 9), r.qid))  # float noise must not reorder ties
    return SnapshotDiff(a.id, b.id, metric, k, TEST_NAME, tuple(deltas), tuple(rows), config_changes(a, b),
                        tuple(q for q in qa if q not in qb), tuple(q for q in qb if q not in qa))
