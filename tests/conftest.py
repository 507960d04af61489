"""Shared fixtures: a tiny hand-written corpus, a deterministic embedder, LanceDB under tmp_path."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, UTC
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from retrieval import BM25Index, HybridRetriever, MemoryStore, MemoryTrace, Scope  # noqa: E402
from retrieval.models import HashingEmbedder  # noqa: E402

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
U1 = Scope("user", "u1")
U2 = Scope("user", "u2")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"

# (id, content, scope_id, days ago)
CORPUS = [
    ("inv", "Refund for invoice INV-8842 was approved by the billing team.", "u1", 3),
    ("billing", "Billing help: how to ask for a refund on any order or payment.", "u1", 10),
    ("hike", "We hiked the ridge trail with the dog on Sunday; the views were great.", "u1", 1),
    ("lisbon", "I live in Lisbon now, near the river, after moving from Porto.", "u1", 40),
    ("flight", "Flight TP1351 to Madrid leaves at 07:40 from terminal 1.", "u1", 5),
    ("recipe", "The lentil soup recipe needs cumin, lemon and a lot of patience.", "u1", 20),
    ("other", "Invoice INV-8842 is also mentioned in another user's notes.", "u2", 2),
    ("old", "An inactive note about invoice INV-8842 that should never show.", "u1", 30),
]


def make_trace(tid: str, content: str, scope_id: str = "u1", days: float = 0, **kw) -> MemoryTrace:
    ts = NOW - timedelta(days=days)
    return MemoryTrace(id=tid, content=content, scope="user", scope_id=scope_id, created_at=ts, **kw)


@pytest.fixture
def traces() -> list[MemoryTrace]:
    out = [make_trace(*row) for row in CORPUS]
    return [t if t.id != "old" else make_trace(t.id, t.content, "u1", 30, is_active=False) for t in out]


@pytest.fixture
def store(tmp_path) -> MemoryStore:
    return MemoryStore(str(tmp_path / "db"), embedder=HashingEmbedder(64), clock=lambda: NOW)


@pytest.fixture
def retriever(store, traces) -> HybridRetriever:
    r = HybridRetriever(store, bm25=BM25Index())
    r.index(traces)
    return r


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's Chromium; a browser test may skip without it, except under CI=true."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI") == "true":
        pytest.fail(f"{CHROMIUM} is missing under CI=true; `make test` installs it with apt-get")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")


@pytest.fixture(scope="session")
def _chromium_browser(chromium):
    """Headless Debian Chromium driven by Playwright, launched once per test process (never `playwright install`)."""
    from playwright.sync_api import sync_playwright

    from ui.serve import LAUNCH_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def browser(_chromium_browser):
    """The process's Chromium for one test module; every page (and its context) the module left open is closed
    after it, so a module starts with no other module's pages, cookies or storage."""
    yield _chromium_browser
    for context in _chromium_browser.contexts:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


class MapEmbedder:
    """Exact text → vector, for tests that need a chosen geometry; other texts get `default`."""

    name = "map"

    def __init__(self, vectors: dict[str, list[float]], dim: int = 4, default: list[float] | None = None):
        import numpy as np

        self.dim = dim
        self.calls = 0
        self._np = np
        self._vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self._default = np.asarray(default or [0.0] * (dim - 1) + [1.0], dtype=np.float32)

    def embed(self, texts):
        self.calls += 1
        rows = [self._vectors.get(t, self._default) for t in texts]
        m = self._np.stack(rows) if rows else self._np.zeros((0, self.dim), self._np.float32)
        n = self._np.linalg.norm(m, axis=1, keepdims=True)
        return m / self._np.where(n == 0, 1, n)


class StubReranker:
    """Scores from a function of the text; counts calls; can be told to fail."""

    name = "stub"

    def __init__(self, fn=None, fail: Exception | None = None, fail_on_call: int | None = None):
        self.fn = fn or (lambda q, t: 0.5)
        self.fail = fail
        self.fail_on_call = fail_on_call
        self.calls = []

    def score(self, query, texts):
        self.calls.append((query, list(texts)))
        if self.fail and (self.fail_on_call is None or len(self.calls) == self.fail_on_call):
            raise self.fail
        return [self.fn(query, t) for t in texts]


# ---------------------------------------------------------------- the suite leaves the work tree as it found it
def _git_status() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def pytest_configure(config):
    """The xdist controller names the run (its workers share demo templates under that name, tests/demostore.py)."""
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None) and \
            not getattr(config.option, "testrunuid", None):
        import uuid

        config.option.testrunuid = uuid.uuid4().hex


def pytest_sessionstart(session):
    session.config._git_status_before = _git_status()


def pytest_sessionfinish(session, exitstatus):
    """A test that writes into the repository (a store opened at a relative path, an artefact outside
    tests/artifacts) fails the run, naming what changed: `make test` must leave `git status` clean."""
    run = getattr(session.config.option, "testrunuid", None)
    if run and not hasattr(session.config, "workerinput"):  # every worker has finished: their shared templates go
        import shutil

        from demostore import shared_dir

        shutil.rmtree(shared_dir(run), ignore_errors=True)
    before = getattr(session.config, "_git_status_before", None)
    after = _git_status()
    if before is None or after is None or before == after or hasattr(session.config, "workerinput"):
        return
    changed = sorted(set(after.splitlines()) - set(before.splitlines()))
    if changed:
        print("\nerror: the tests changed the work tree (git status): " + "; ".join(changed[:10]))
        session.exitstatus = 1


# ---------------------------------------------------------------- the longest files first
def longest_files_first(items: list, seconds: dict[str, float]) -> None:
    """Sort `items` (in place) by their file's `seconds`, longest first; a file `seconds` does not name counts as
    its median. Only whole files move: each file's tests keep their order and stay together."""
    median = sorted(seconds.values())[len(seconds) // 2] if seconds else 0.0
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)
    key = {f: (-float(seconds.get(f, median)), i) for f, i in first.items()}
    items.sort(key=lambda item: key[item.nodeid.split("::")[0]])


def pytest_collection_modifyitems(config, items):
    """Test files in the order of their measured time (`tests/durations.json`, written by `scripts/test_durations.py`).
    `make test` hands the files to the workers in this order (`--dist loadfile --no-loadscope-reorder`), so the long
    files start early and short ones fill the end of the run."""
    import json

    try:
        seconds = json.loads((ROOT / "tests" / "durations.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    longest_files_first(items, seconds)
