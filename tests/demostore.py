"""The demo store built with the hashing embedder, once per test process, and copied where a test wants its own.

`build_demo_index(db, embedder=HashingEmbedder(384))` takes ~5 s idle (15+ s loaded) and ~35 fixtures and tests
each built their own; a copy of the 1.3 MB folder takes ~0.1 s. Each copy is a separate store (its own LanceDB
tables, BM25 file, judgments and audit), as a fresh build is: nothing a test writes reaches the template. The
real-MiniLM demo store (Home's examples, the presenter in a browser) is shared the same way."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_TEMPLATES: dict[str, Path] = {}


def _template(embedder: str) -> Path:
    if embedder not in _TEMPLATES:
        from retrieval.ingest.demo import build_demo_index
        from retrieval.models import HashingEmbedder
        from retrieval.models.registry import make_embedder

        root = Path(tempfile.mkdtemp(prefix=f"demo-template-{embedder}-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        emb = HashingEmbedder(384) if embedder == "hashing" else make_embedder(embedder)
        build_demo_index(str(root / "db"), log=lambda m: None, embedder=emb)
        _TEMPLATES[embedder] = root / "db"
    return _TEMPLATES[embedder]


def copy_demo(dest: str | Path, embedder: str = "hashing") -> str:
    """A fresh demo store at `dest` (its `demo` case and snapshots), embedded with `hashing` (HashingEmbedder(384))
    or a registry name such as `minilm`; returns `dest`."""
    shutil.copytree(_template(embedder), dest)
    return str(dest)
