"""A `PipelineConfig` made a `HybridRetriever` over a workspace (app, CLI and evaluation alike), and one run of it.

The workspace layer builds: `retrieval.pipeline.factory.retriever_kwargs` turns a config into the retriever's
keyword arguments from what it is handed here (the model provider, the workspace's fact store, the adaptive
strengths the store records, the visitor's access); the pipeline never calls back up into the workspace.
`ws` is a `Workspace` or anything that reads like one (`retrieval.history.WorkspaceAsOf`: the same as of a version).
"""
from __future__ import annotations

from typing import Any

from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.factory import (Models, RegistryModels, cache_key, can_reweight, learned_strengths,
                                        retriever_kwargs, visitor_statistics)
from retrieval.pipeline.records import RetrievalResult
from retrieval.types import Mood, Scope


def build_retriever(ws: Any, cfg: PipelineConfig, models: Models | None = None, access: Any = None) -> Any:
    """A HybridRetriever for `cfg` over workspace `ws` (`retrieval.pipeline.factory.retriever_kwargs` says what
    each part of `cfg` becomes). Raises ValueError/ImportError with a message fit for a user."""
    models = models or RegistryModels(ws.store.embedder)
    return ws.retriever(**retriever_kwargs(cfg, models, facts=ws.facts, strengths=learned_strengths(ws.store),
                                           access=access))


def store_lookup(ws: Any, scope: Scope | None, access: Any = None) -> Any:
    """What `diagnostics.explain(id, lookup)` reads for an id a query never touched: `ws`'s rows (as of its version
    for a `WorkspaceAsOf`) and the BM25 version a query of `scope` reads, with the visitor's statistics."""
    return ws.retriever(bm25_statistics=visitor_statistics(access)).lookup(scope)


def run_config(ws: Any, cfg: PipelineConfig, query: str, scope: Scope | None, models: Models | None = None,
               cached: tuple[tuple, RetrievalResult] | None = None, access: Any = None) -> tuple[RetrievalResult, bool]:
    """Retrieve, or re-fuse `cached` (a `(cache_key, result)` pair) when only fusion knobs changed.

    A cached result searched too shallow for `cfg`'s recall_top_k is searched again, never re-fused:
    a re-fusion can only rank what was searched, so its list would be shorter than `cfg` promises.
    Returns `(result, refusion)`.
    """
    from retrieval.pipeline.assemble import reweight

    if cached is not None and cached[0] == cache_key(query, scope, cfg) and can_reweight(cached[1], cfg):
        return reweight(cached[1], settings=cfg.settings), True  # the value as the panel made it
    retriever = build_retriever(ws, cfg, models, access)  # `HybridRetriever(store, settings=cfg.settings, …)`
    result = retriever.retrieve(query, mood=Mood(cfg.valence, cfg.arousal, cfg.dominance), scope=scope)
    return result, False
