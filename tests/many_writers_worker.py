"""One process of tests/test_many_writers.py: a writer, a crashing writer, an agent's plain LanceDB code, a reader or
the final checker. Run as `python tests/many_writers_worker.py ROLE URI` with its own cwd, HOME and TMPDIR; a racer
prints `ready` once its store is open and reads the agreed start (a Unix time) from stdin; every role ends by
printing one JSON line. Times are absolute (start + offsets), so the writers' commits race."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from retrieval.models import HashingEmbedder
from retrieval.types import MemoryTrace

NOW = datetime(2026, 11, 1, tzinfo=UTC)
CITIES = ("Lisbon", "Porto", "Oslo", "Quito", "Lima", "Perth", "Riga")
SHARED, ROUNDS, GAP = 60, 2, 2.0


def trace(tid: str, text: str, scope_id: str = "u1", minutes: float = 0) -> MemoryTrace:
    ts = NOW + timedelta(minutes=minutes)
    return MemoryTrace(id=tid, content=text, scope="user", scope_id=scope_id, created_at=ts, last_accessed_at=ts)


def workspace(uri: str, **kw):
    from retrieval.workspace import Workspace

    return Workspace(uri, embedder=HashingEmbedder(32), **kw)


def wait(start: float, offset: float) -> None:
    while time.time() < start + offset:
        time.sleep(0.005)  # sleep-ok: spin to the agreed instant; the writers' race is the subject


def ready() -> float:
    """Tell the test this process is open and wait for the start every racer was given (no fixed head start)."""
    print("ready", flush=True)
    return float(sys.stdin.readline())


def writer(uri: str, k: int) -> dict:
    """Three writers upsert the same ids in each round, each with its own text. In round 1 writer 1 deletes ids that
    writer 3 upserts at the same instant, writer 2 is killed (-9) right after its commit (before its facts and
    audit), and writer 3 then starts a large batch and is killed in the middle of it (nothing committed)."""
    from retrieval.workspace.follow import Follower

    ws = workspace(uri)
    ws.bm25  # noqa: B018 - open before the race
    start = ready()
    for r in range(ROUNDS):
        batch = [trace(f"s{r}-{i}", f"w{k} round {r} note {i}: I live in {CITIES[(i + k) % 7]}.",
                       "u1" if i % 3 else "u2", minutes=r) for i in range(SHARED)]
        wait(start, r * GAP)
        if r == 1 and k == 2:
            Follower.after_commit = lambda *a, **kw: os.kill(os.getpid(), signal.SIGKILL)  # type: ignore
        ws.ingest(batch, actor=f"w{k}")
        if r == 1 and k == 1:
            ws.delete([f"s0-{i}" for i in range(20)], actor="w1")
        if r == 1 and k == 3:
            ws.ingest([trace(f"s0-{i}", f"w3 revives note {i}: I live in Riga.", minutes=5) for i in range(20)],
                      actor="w3")
            die_mid_batch(ws)
    ws.refresh_if_stale()
    return {"role": f"w{k}", "in_step": in_step(ws)}


def die_mid_batch(ws) -> None:
    embed, calls = ws.store.embedder.embed, [0]

    def dying(texts):
        calls[0] += 1
        if calls[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return embed(texts)

    ws.store.embedder.embed = dying
    ws.ingest([trace(f"m{i}", f"half written note {i}: I live in Lima.") for i in range(600)], actor="midbatch")


def in_step(ws) -> bool | str:
    """This process's BM25, after refresh_if_stale(), reflects at least the table version read before the refresh
    and equals a rebuild from the table at the version it reflects. True, or why not.

    The version is read before the refresh, not after: another process may commit at any instant (the agent's
    plain writes race this check), and a commit after the refresh is not one this refresh could have followed."""
    from retrieval.sparse.build import new_bm25
    from retrieval.workspace.derived import read_version
    from retrieval.workspace.doctor import fingerprint

    seen = ws.store.version()
    ws.refresh_if_stale()
    if ws.bm25_version < seen:
        return f"BM25 at table version {ws.bm25_version} after a refresh that began at version {seen}"
    fresh = new_bm25(ws.store)
    read_version(ws.store, ws.bm25_version, wanted=lambda _i, _h: True, sink=fresh.update)
    if fingerprint(ws.bm25) != fingerprint(fresh):
        return f"BM25 at table version {ws.bm25_version} differs from a rebuild from the table at that version"
    return True


def agent(uri: str, start: float) -> dict:
    """An agent's own code: plain LanceDB calls, no Workspace, no lock (run by the test process itself)."""
    import lancedb
    import numpy as np
    import pyarrow as pa

    from retrieval.store.remote import storage_options_from_env
    from retrieval.store.rows import to_row

    wait(start, GAP * 1.7)
    db = lancedb.connect(uri, storage_options=storage_options_from_env(uri))
    tbl = db.open_table("traces")
    emb = HashingEmbedder(32)
    new = [trace(f"g{i}", f"agent memory {i}: I live in Quito.", minutes=9) for i in range(30)]
    for batch in (new, [trace("g5", "agent rewrote memory 5: I live in Oslo.", minutes=30)]):  # plain adds: g5 twice
        vecs = np.asarray(emb.embed([t.content for t in batch]), np.float32)
        tbl.add(pa.Table.from_pylist([to_row(t, v) for t, v in zip(batch, vecs)], schema=tbl.schema))
    tbl.delete("id = 'seed'")  # the setup's trace, which every writer's BM25 and facts hold
    return {"role": "agent"}


def reader(uri: str) -> dict:
    from retrieval.types import Scope

    ws = workspace(uri)
    ws.demo_mode = True  # a read-only server
    ws.bm25  # noqa: B018 - open before the race
    start = ready()
    n = failures = 0
    errors: list[str] = []
    while time.time() < start + GAP * ROUNDS + 2:
        ws.refresh_if_stale()
        for q in ("where do I live", "note round"):
            for sid in ("u1", "u2"):
                try:
                    ws.retriever().retrieve(q, scope=Scope("user", sid), recall_top_k=20)
                    n += 1
                except Exception as exc:
                    failures += 1
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
    return {"role": "reader", "queries": n, "failures": failures, "errors": errors[:3]}


def check(uri: str) -> dict:
    """A fresh process: opens the store (catching up), queries every scope, reports duplicates as it resolves them,
    the audit per version and doctor's report."""
    from retrieval.store.duplicates import duplicate_ids
    from retrieval.types import Scope
    from retrieval.workspace.audit import audited_versions
    from retrieval.workspace.doctor import check as doctor_check

    ws = workspace(uri)
    ws.bm25  # noqa: B018 - open: BM25, facts and audit caught up
    dups = duplicate_ids(ws.store.table())
    resolved = {t.id: t.content for t in ws.store.get(sorted(dups))}
    failures = []
    for q in ("where do I live", "agent memory", "w3 revives", "rewrote memory 5"):
        for sid in ("u1", "u2"):
            try:
                ws.retriever().retrieve(q, scope=Scope("user", sid), recall_top_k=50)
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
    entries = [e for e in ws.audit.entries(limit=10_000, maintenance=True) if e.version is not None]
    changed = audited_versions(ws.store)
    rep = doctor_check(ws)
    return {"role": "check", "dups": dups, "resolved": resolved, "failures": failures,
            "audit_versions": sorted(e.version for e in entries), "changed_versions": changed,
            "actors": sorted({e.actor for e in entries}), "problems": rep.problems, "rows": rep.rows,
            "traces": sorted(t.id for t in ws.store.all_traces())}


def main() -> None:
    role, uri = sys.argv[1], sys.argv[2]
    if role.startswith("w"):
        out = writer(uri, int(role[1:]))
    else:
        out = {"reader": reader, "check": check}[role](uri)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
