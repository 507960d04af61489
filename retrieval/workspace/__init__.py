"""The one write path (SPEC §12): a `Workspace` opens a store as a whole (traces, BM25, facts) and
is the only thing that writes them together (`core`); BM25, facts and audit follow the traces table's versions
whoever wrote them (`follow`, `derived`, `facts_sync`), with an audit entry for every committed version (`audit`).
"""
from retrieval.workspace.core import IngestReport, Workspace, is_local_uri

__all__ = ["IngestReport", "Workspace", "is_local_uri"]
