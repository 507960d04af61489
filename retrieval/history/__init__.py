"""The flight recorder's reading side (SPEC §16): a store as of a version, tag or time, and what changed.

`view` opens traces, BM25 and facts as they stood at one version (read-only, kept per version in the owner's
`AsOfCache`);
`diff` compares one query's stage lists at two versions and says why each trace that left the final
list was displaced. Versions, tags and clean-up are the table's own (retrieval.store.versions).
"""
from retrieval.history.diff import diff_results, diff_versions, fact_changes, idf_moves
from retrieval.history.view import AsOf, AsOfCache, AsOfView, WorkspaceAsOf, open_as_of, pin
from retrieval.store.versions import moment

__all__ = ["AsOf", "AsOfCache", "AsOfView", "WorkspaceAsOf", "diff_results", "diff_versions", "fact_changes",
           "idf_moves", "moment", "open_as_of", "pin"]
