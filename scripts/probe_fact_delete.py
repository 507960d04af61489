"""Deleting 100,000 trace ids from a facts table of 20,000 facts takes one pass (target: under 5 s).

Run: .venv/bin/python scripts/probe_fact_delete.py   (prints one JSON line; the number is in docs/RELIABILITY.md)
"""
import json
import tempfile
import time
from datetime import datetime, UTC, timedelta
from retrieval.facts.store import FactStore
from retrieval.facts.model import Fact, PREDICATES
from retrieval.types import Scope
d = tempfile.mkdtemp()
fs = FactStore(d)
n_traces, n_facts = 100_000, 20_000
pred = sorted(PREDICATES)[0]
t0 = datetime(2025, 1, 1, tzinfo=UTC)
for scope_i in range(4):
    facts = [Fact(f"s{i}", pred, f"obj {i}", t0 + timedelta(minutes=i), (f"t{(i * 5) % n_traces}",))
             for i in range(scope_i * 5000, (scope_i + 1) * 5000)]
    fs.upsert(Scope("user", f"u{scope_i}"), facts)
ids = [f"t{i}" for i in range(n_traces)]
t = time.perf_counter()
n = fs.delete_for_traces(ids)
print(json.dumps({"facts": n_facts, "ids": n_traces, "removed": n, "seconds": round(time.perf_counter() - t, 2)}))
