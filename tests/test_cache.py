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


# A module-level container a module fills as it runs (a dict, OrderedDict, list or set bound at import time), or a
# functools cache not marked as holding a constant: a cache with no owner and no bound.
_HAND_ROLLED = re.compile(r"^_?[A-Za-z]\w*\s*(:[^=]+)?=\s*"
                          r"(\{\}|dict\(\)|OrderedDict\(|\[\]|set\(\)|defaultdict\()", re.M)
_FUNC_CACHE = re.compile(r"^@(functools\.)?(lru_cache|cache)\b(?!.*a constant)", re.M)


def hand_rolled_caches(text: str) -> list[str]:
    return [m.group(0) for m in (*_HAND_ROLLED.finditer(text), *_FUNC_CACHE.finditer(text))]


def test_the_rule_finds_the_module_caches_the_code_had():
    """The four process-wide dicts the models, the Gemma servers, the store locks and the Ray workers kept."""
    old = ("_MODEL_CACHE: dict[tuple[str, str], object] = {}\n", "_GEMMA_SERVERS: dict[str, object] = {}\n",
           "_LOCKS: dict[tuple[str, str], FileLock] = {}\n", "_EMBEDDERS: dict[tuple[str | None, int], Any] = {}\n",
           "@functools.cache\ndef _table_events():\n", "_SEEN = OrderedDict()\n")
    assert all(hand_rolled_caches(t) for t in old)
    assert not hand_rolled_caches("@functools.cache  # built once (a constant, not a cache of data)\n")
    assert not hand_rolled_caches("    seen = {}\n")  # a local inside a function


def test_no_module_keeps_a_hand_rolled_cache():
    """Every module of the library and the shared UI: caches are `BoundedCache`s owned by an object, or a named
    `ProcessCache` for what lives as long as the process (a model, a model server, a store's lock)."""
    found = {str(p.relative_to(ROOT)): hand_rolled_caches(p.read_text())
             for d in ("retrieval", "ui") for p in sorted((ROOT / d).rglob("*.py"))}
    assert len(found) > 100  # the scan read the tree
    assert {p: f for p, f in found.items() if f} == {}


def test_a_process_cache_builds_once_and_never_drops():
    from retrieval.cache import ProcessCache
    from retrieval.store.lock import LOCKS, lock_for

    cache: ProcessCache[str, object] = ProcessCache("test values")
    made = [cache.get_or_build("a", object) for _ in range(3)]
    assert made[0] is made[1] is made[2] and "1 held" in repr(cache)
    with pytest.raises(TypeError, match="nothing is dropped"):
        cache.invalidate()
    assert lock_for(("local", "/nowhere/x"), None) is lock_for(("local", "/nowhere/x"), None)
    assert ("local", "/nowhere/x") in LOCKS
