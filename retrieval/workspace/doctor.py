"""`doctor`: is everything a store derives from its traces table in step with it (SPEC §18), and repair what is not.

Checks, all against one version of the table read pinned:
- duplicate ids (two rows of one id: readers resolve them alike, store/duplicates.py, but a repair removes them);
- BM25: the index a Workspace serves (its sidecar caught up) equals one rebuilt from the table — same documents,
  scopes and term frequencies;
- facts: the fact table equals extraction from the table's active traces, and every trace is marked as extracted at
  its content (no trace without its facts, no fact without its trace);
- audit: every version that changed rows has an entry;
- pending work: a BM25 sidecar behind the table (local stores).
`repair` removes duplicates, catches BM25, facts and audit up, and re-extracts every fact when they still differ.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.sparse.build import new_bm25
from retrieval.store.duplicates import duplicate_ids, repair_duplicates
from retrieval.workspace.derived import own_hash, pinned, read_version, rows_of


@dataclass
class Report:
    version: int = 0
    rows: int = 0
    problems: dict[str, list[str]] = field(default_factory=dict)  # check → what is wrong (examples)
    checked: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def add(self, check: str, *what: str) -> None:
        self.checked.append(check)
        if what:
            self.problems[check] = list(what)

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "rows": self.rows, "healthy": self.healthy, "checked": self.checked,
                "problems": self.problems}


def fingerprint(index: Any) -> dict[str, tuple]:
    """Every live BM25 document as (scope, sorted (term, tf) pairs): two indices are equal when these are."""
    snap = index.snapshot()
    ids, lens, tids, tfs, codes, scopes = snap.live_rows()
    terms = snap.terms
    out, at = {}, 0
    for i, n, c in zip(ids, lens.tolist(), codes.tolist()):
        pairs = sorted((terms[t], int(f)) for t, f in zip(tids[at:at + n].tolist(), tfs[at:at + n].tolist()))
        out[i] = (scopes[c] if c >= 0 else None, tuple(pairs))
        at += n
    return out


def _differ(a: dict, b: dict, limit: int = 5) -> list[str]:
    ids = sorted(set(a) ^ set(b)) + sorted(i for i in set(a) & set(b) if a[i] != b[i])
    return ids[:limit] + ([f"… {len(ids) - limit} more"] if len(ids) > limit else [])


def expected_facts(ws: Any, version: int) -> set[tuple[str, str, str]]:
    """(scope, scope_id, key) of every fact the extractor gives for the active traces at `version`."""
    from retrieval.store.rows import from_row

    extractor = ws.extractor()
    if extractor is None:
        return set()
    tbl = pinned(ws.store, version)
    cols = [f.name for f in tbl.schema if f.name != ws.store.columns.vector]
    out = set()
    for rows in rows_of(tbl, cols):
        for r in rows:
            t = from_row(r)
            if t.is_active:
                out |= {(t.scope, t.scope_id, f.key) for f in extractor.extract(t.content, trace_id=t.id,
                                                                                  timestamp=t.created_at)}
    return out


def stored_facts(ws: Any) -> set[tuple[str, str, str]]:
    tbl = ws.facts._table(create=False)
    if tbl is None:
        return set()
    data = tbl.search().select(["scope", "scope_id", "key"]).limit(None).to_arrow()
    return set(zip(*(data.column(c).to_pylist() for c in ("scope", "scope_id", "key"))))


def check(ws: Any) -> Report:
    """What is out of step in the store `ws` opened (nothing is written)."""
    from retrieval.workspace.audit import audited_versions

    store, rep = ws.store, Report()
    if store.table() is None:
        return rep
    tbl = pinned(store)
    rep.version, rep.rows = int(tbl.version), tbl.count_rows()
    dups = duplicate_ids(tbl)
    rep.add("duplicate ids", *[f"{i} ×{n}" for i, n in sorted(dups.items())[:5]])
    if ws.sparse == "bm25" and store.columns.native:
        served = ws.bm25
        if ws.bm25_version != rep.version:  # a commit landed since: compare at the newest version both see
            ws.refresh()
            rep.version = ws.bm25_version
        fresh = new_bm25(store)
        read_version(store, rep.version, wanted=lambda _i, _h: True, sink=fresh.update)
        rep.add("bm25 in step", *_differ(fingerprint(served), fingerprint(fresh)))
    if ws.extractor() is not None:
        want, have = expected_facts(ws, rep.version), stored_facts(ws)
        rep.add("facts in step", *[f"{s}:{sid} {k}" for s, sid, k in
                                   (sorted(want - have)[:3] + sorted(have - want)[:3])])
        state = read_version(store, rep.version)
        done = ws.fact_sources.read()
        behind = sorted(i for i, h in state.hashes.items() if done.get(i) != own_hash(h))
        rep.add("facts pending", *([f"{len(behind)} trace(s) not marked extracted at their content"] if behind else []))
    gaps = sorted(set(audited_versions(store)) - ws.audit.versions())
    rep.add("audit gaps", *[f"table version {v} has no entry" for v in gaps[:10]])
    sidecar = _sidecar_version(ws)
    rep.add("bm25 sidecar", *([f"saved at table version {sidecar}, the table is at {rep.version}"]
                              if sidecar is not None and sidecar < rep.version else []))
    return rep


def _sidecar_version(ws: Any) -> int | None:
    from retrieval.bm25.index import tokenizer_id
    from retrieval.bm25.persist import load_index

    path = ws.bm25_path
    if path is None or not path.is_file():
        return None
    try:
        meta, _ = load_index(path, tokenizer_id(ws.bm25.tokenizer))
    except Exception:
        return -1
    v = (meta.get("source") or {}).get("table_version")
    return int(v) if isinstance(v, int) else -1


def repair(ws: Any) -> Report:
    """Fix what `check` finds, then check again (returns the second report)."""
    store = ws.store
    if store.table() is None:
        return Report()
    with store.write_lock():
        dups = duplicate_ids(pinned(store))
        if dups:
            before = store.version()
            removed = repair_duplicates(store.table(), dups)
            for v in range(before + 1, store.version() + 1):  # the repair's own commits, named as such
                ws.audit.record("doctor", "commit", len(dups), ids=sorted(dups),
                                detail=f"duplicate ids repaired: {removed} older row(s) removed", version=v)
        ws._catch_up()
    first = check(ws)
    if "facts in step" in first.problems or "facts pending" in first.problems:
        ws.fact_sources.drop(list(ws.fact_sources.read()))  # re-extract every trace's facts from the table
        with store.write_lock():
            ws._follow.advance()
            ws.save()
    return check(ws)
