"""The app's view of pipeline configuration: `PipelineConfig` and the factory, with cached models.

The definitions live in `retrieval.pipeline.config` and `retrieval.workspace.retrievers`
(shared with the CLI and evaluation); this module only adapts the app's cached model loaders.
"""
from __future__ import annotations

from retrieval.workspace import retrievers
from retrieval.pipeline.config import (CLASSIFIER_CHOICES, FUSION_FIELDS, GENERATOR_CHOICES, RERANKER_CHOICES,  # noqa: F401
                              PipelineConfig)
from retrieval.pipeline.factory import cache_key  # noqa: F401 (re-exported for pages)


class CachedModels:
    """A `retrieval.pipeline.factory.Models` provider over the app's `st.cache_resource` loaders."""

    def __init__(self, get_reranker, get_generator):
        self._get_reranker, self._get_generator = get_reranker, get_generator

    def reranker(self, spec: str):
        return self._get_reranker(spec)

    def generator(self, spec: str):
        return self._get_generator(spec)


def _visitor():
    """This session's access (a visitor limited to some scopes gets per-scope BM25 statistics)."""
    from ui.access import session_access

    return session_access()


def build_retriever(ws, cfg: PipelineConfig, get_reranker, get_generator, access=None):
    return retrievers.build_retriever(ws, cfg, CachedModels(get_reranker, get_generator), access or _visitor())


def run_config(ws, cfg: PipelineConfig, query: str, scope, get_reranker, get_generator, cached=None, access=None):
    """Retrieve, or re-fuse `cached` when only fusion knobs changed. Returns (result, refusion)."""
    return retrievers.run_config(ws, cfg, query, scope, CachedModels(get_reranker, get_generator), cached,
                              access or _visitor())


INJECTED = "last_injected_facts"  # Inspect's last query and the facts it injected, read by the Facts page


def remember_injected_facts(scope, query: str, facts) -> None:
    """Inspect: the facts its last query injected (`diagnostics.facts`), for the Facts page to mark."""
    import streamlit as st

    st.session_state[INJECTED] = {"scope": str(scope), "query": query, "facts": [f.__dict__ for f in facts]}


def last_injected_facts() -> dict | None:
    """{"scope", "query", "facts": [fact fields]} of Inspect's last query in this session, or None."""
    import streamlit as st

    return st.session_state.get(INJECTED)


def side(ws, cfg: PipelineConfig, name: str, get_reranker, get_generator):
    """One configuration as `retrieval.eval.sessions` runs it: its retriever and its retrieve arguments."""
    from retrieval.eval.sessions import Side

    return Side(build_retriever(ws, cfg, get_reranker, get_generator), name,
                {"recall_top_k": cfg.settings.recall_top_k,
                 "over_fetch_multiplier": cfg.settings.over_fetch_multiplier})
