"""The demo store built with the hashing embedder, once per test run, and copied where a test wants its own.

`build_demo_index(db, embedder=HashingEmbedder(384))` takes ~5 s idle (15+ s loaded), the MiniLM one ~15 s, and ~35
fixtures and tests each built their own; a copy of the 1.3 MB folder takes ~0.1 s. Each copy is a separate store
(its own LanceDB tables, BM25 file, judgments and audit), as a fresh build is: nothing a test writes reaches the
template. Under xdist the workers of one run share each template (`PYTEST_XDIST_TESTRUNUID`): the first to need it
builds it under a file lock, the others wait and copy; the controller removes them at the end (tests/conftest.py)."""
from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
_TEMPLATES: dict[str, Path] = {}


def _build(embedder: str, db: Path) -> None:
    from retrieval.ingest.demo import build_demo_index
    from retrieval.models import HashingEmbedder
    from retrieval.models.registry import make_embedder

    emb = HashingEmbedder(384) if embedder == "hashing" else make_embedder(embedder)
    build_demo_index(str(db), log=lambda m: None, embedder=emb)


def _template(embedder: str) -> Path:
    if embedder in _TEMPLATES:
        return _TEMPLATES[embedder]
    if not RUN:  # one process: its own template, removed when it exits
        root = Path(tempfile.mkdtemp(prefix=f"demo-template-{embedder}-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _build(embedder, root / "db")
    else:
        root = shared_dir(RUN) / embedder
        root.mkdir(parents=True, exist_ok=True)
        with open(root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; a worker that waited finds it done
            if not (root / "done").exists():
                shutil.rmtree(root / "db", ignore_errors=True)  # a builder killed half-way
                _build(embedder, root / "db")
                (root / "done").touch()
    _TEMPLATES[embedder] = root / "db"
    return _TEMPLATES[embedder]


def copy_demo(dest: str | Path, embedder: str = "hashing") -> str:
    """A fresh demo store at `dest` (its `demo` case and snapshots), embedded with `hashing` (HashingEmbedder(384))
    or a registry name such as `minilm`; returns `dest`."""
    shutil.copytree(_template(embedder), dest)
    return str(dest)


def shared_dir(run: str) -> Path:
    """Where the workers of run `run` keep their shared templates (the controller removes it at the end)."""
    return Path(tempfile.gettempdir()) / f"retrieval-demo-templates-{run}"
