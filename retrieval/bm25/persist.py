"""Saving a BM25 version to one `.npz` sidecar and reading it back, checked (SPEC §3, §12).

A sidecar is derived data: anything wrong with it (truncated, foreign, another format or
tokenizer, inconsistent arrays) is a ValueError that tells the caller to rebuild, never a crash.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from retrieval.types import Scope

FORMAT = 3  # 3: int32 term ids, float32 tfs (half the size of 2, which is still read)
READABLE = (2, 3)


def save_index(snap, path, tokenizer: str, source: dict | None) -> None:
    """Write `snap` (a BM25Snapshot) atomically: a crash leaves the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ids, lens, tids, tfs, codes, scopes = snap.live_rows()
    meta = {
        "format": FORMAT, "k1": snap.k1, "b": snap.b, "tokenizer": tokenizer, "terms": snap.terms,
        "ids": ids, "scopes": [[s.scope, s.scope_id] for s in scopes], "source": source,
    }
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")  # per process: two writers never share it
    with open(tmp, "wb") as fh:
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), lens=lens.astype(np.int64),
                 tids=tids.astype(np.int32), tfs=tfs.astype(np.float32), scope_code=codes.astype(np.int32))
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def load_index(path, tokenizer: str) -> tuple[dict, tuple]:
    """(meta, rows) of a sidecar, rows as `(ids, lengths, term ids, tfs, scope codes, scopes)` (the
    shape `build_snapshot` takes); ValueError if unusable."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("format") not in READABLE:
                raise ValueError(f"format {meta.get('format')!r}, expected one of {READABLE}")
            lens, codes = data["lens"].astype(np.int64), data["scope_code"].astype(np.int32)
            tids, tfs = data["tids"], data["tfs"]
        k1, b = meta["k1"], meta["b"]
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (k1, b)):
            raise ValueError(f"bad k1/b {k1!r}/{b!r}")
        terms, ids = [str(t) for t in meta["terms"]], [str(i) for i in meta["ids"]]
        scopes = [Scope(a, s) for a, s in meta["scopes"]]
        if len(lens) != len(ids) or len(codes) != len(ids) or int(lens.sum()) != len(tids) or len(tfs) != len(tids):
            raise ValueError("array lengths disagree")
        if (len(tids) and (tids.min() < 0 or tids.max() >= len(terms))) or (len(codes) and codes.max() >= len(scopes)):
            raise ValueError("term or scope ids out of range")
        if len(tfs) and not (np.isfinite(tfs).all() and tfs.min() > 0) or (lens < 0).any():
            raise ValueError("bad term frequencies")
        if len(set(ids)) != len(ids):
            raise ValueError("repeated document ids")
        tids, tfs = tids.astype(np.int32, copy=False), tfs.astype(np.float32, copy=False)
    except Exception as exc:  # a zip error, a missing key, bad JSON, a truncated array: all mean "rebuild"
        raise ValueError(f"{path} is not a usable BM25 index ({type(exc).__name__}: {exc}); rebuild it") from exc
    saved = meta.get("tokenizer")
    if saved != tokenizer:
        raise ValueError(f"{path} was built with tokenizer {saved!r}, not {tokenizer!r}; rebuild it")
    return ({"k1": float(k1), "b": float(b), "terms": terms, "scopes": scopes, "source": meta.get("source")},
            (ids, lens, tids, tfs, codes, scopes))
