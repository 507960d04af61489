"""The one write path (SPEC §12): a `Workspace` opens a store as a whole (traces, BM25, facts) and
is the only thing that writes them together, under one lock, with a facts journal for crashes
(`core`) and an audit row for every write (`audit`).
"""
from retrieval.workspace.core import IngestReport, Workspace, is_local_uri
from retrieval.workspace.journal import JOURNAL_DIR

__all__ = ["IngestReport", "JOURNAL_DIR", "Workspace", "is_local_uri"]
