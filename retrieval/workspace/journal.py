"""The facts journal: before a write, the ids whose facts must follow the store are written (fsynced)
to a small file beside the data; once the facts are in step the file goes. A crash in between
leaves the file, and the next open replays it, so facts always catch up with committed traces.
"""
from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

JOURNAL_DIR = ".facts-pending"


def journal_files(root: Path | None) -> list[Path]:
    return sorted((root / JOURNAL_DIR).glob("*.json")) if root is not None and (root / JOURNAL_DIR).is_dir() else []


def write_journal(root: Path | None, ids: list[str]) -> Path | None:
    """Record, before writing, the ids whose facts must follow the store (fsynced)."""
    if root is None or not ids:
        return None
    d = root / JOURNAL_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{uuid.uuid4().hex}.json"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"ids": ids}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    return path


def sync_facts(store: Any, facts: Any, extractor: Any, ids: list[str], journal: Path | None) -> tuple[int, list[str]]:
    """Bring the facts of `ids` in step with the store; the journal goes once that succeeded."""
    try:
        present = {t.id: t for t in store.get(ids)}
        n, warnings = 0, list[str]()
        # A replaced trace's facts follow its new text, a deleted or inactive one's go: one pass over
        # the facts for every id, keeping those the new extraction gives again (idempotent re-ingest).
        replace = ids if facts.count() else []
        if extractor is not None:
            from retrieval.facts import extract_for_traces

            active = [t for t in present.values() if t.is_active]
            n, warnings = extract_for_traces(facts, extractor, active, replace_ids=replace)
        elif replace:
            facts.delete_for_traces(replace)
    except Exception as exc:  # a broken facts table must not undo, or hide, the trace writes
        msg = (f"facts for {len(ids)} trace(s) were not updated ({type(exc).__name__}: {exc}); "
               "the traces are stored and searchable; the facts are retried on the next open")
        log.warning(msg)
        return 0, [msg]
    if journal is not None:
        try:
            journal.unlink(missing_ok=True)
        except OSError as exc:  # read-only store: it is replayed (harmlessly) again next time
            log.warning("cannot remove the facts journal %s: %s", journal, exc)
    return n, list(warnings)


def replay_journals(root: Path | None, store: Any, sync: Callable[[list[str], Path], Any]) -> bool:
    """Replay every journal a crashed writer left; True when there was one."""
    files = journal_files(root)
    for path in files:
        try:
            ids = [str(i) for i in json.loads(path.read_text(encoding="utf-8"))["ids"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable facts journal %s (%s); re-extracting facts for every trace", path, exc)
            ids = [t.id for t in store.all_traces()]
        log.warning("replaying a facts journal left by an interrupted write: %d trace(s)", len(ids))
        sync(ids, path)
    return bool(files)
