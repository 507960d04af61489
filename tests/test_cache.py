"""Caches are explicit objects with owners and a bound: `retrieval.cache.BoundedCache`, no module-level cache."""
import re
import threading
import time

import pytest

from retrieval.cache import BoundedCache
from retrieval.models import HashingEmbedder
from retrieval.workspace import Workspace

from conftest import ROOT, U1, make_trace


def test_a_bounded_cache_drops_the_least_recently_used_and_builds_once():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1), cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"] and len(cache) == 2 and cache.get("b") is None
    builds: list[str] = []

    def slow() -> int:
        builds.append("d")
        time.sleep(0.05)  # sleep-ok: the subject: it holds the build open while the other threads ask for the same key
        return 4

    threads = [threading.Thread(target=cache.get_or_build, args=("d", slow)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["d"] and cache.keys() == ["c", "d"]
    assert cache.invalidate(lambda k: k == "c") == 1 and cache.keys() == ["d"]
    assert cache.invalidate() == 1 and len(cache) == 0
    with pytest.raises(ValueError, match="at least one value"):
        BoundedCache(0)


def test_the_workspace_owns_its_as_of_versions_bounded_and_forgotten_on_request(tmp_path):
    ws = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), fact_extractor=None)
    versions = []
    for i in range(6):
        ws.ingest([make_trace(f"t{i}", f"note number {i} about the invoice")])
        versions.append(ws.store.version())
    first = ws.retriever(as_of=versions[0]).memory_store
    assert ws.retriever(as_of=versions[0]).memory_store is first  # kept: a committed version never changes
    for v in versions[1:]:
        assert ws.retriever(as_of=v).retrieve("invoice", scope=U1).ids
    assert len(ws.as_of_cache.views) == ws.as_of_cache.views.maxsize == 4  # the bound
    assert ws.retriever(as_of=versions[0]).memory_store is not first  # dropped as the least recently used
    other = Workspace(str(tmp_path / "db"), embedder=HashingEmbedder(32), fact_extractor=None)
    assert len(other.as_of_cache.views) == 0  # each owner its own: nothing global
    kept = ws.retriever(as_of=versions[-1]).memory_store
    assert ws.as_of_cache.forget(str(tmp_path / "nowhere")) == 0
    assert ws.as_of_cache.forget(ws.store.uri) >= 4 and len(ws.as_of_cache.views) == 0
    assert ws.retriever(as_of=versions[-1]).memory_store is not kept  # invalidated: read afresh


def test_no_module_keeps_a_hand_rolled_cache():
    """The as-of versions and a BM25 version's scoped views are `BoundedCache`s owned by an object."""
    for path in ("retrieval/history/view.py", "retrieval/bm25/snapshot.py"):
        text = (ROOT / path).read_text()
        assert "OrderedDict" not in text, path
        assert not re.search(r"^_\w+\s*(:[^=]+)?=\s*(\{\}|dict\(\))", text, re.M), path
