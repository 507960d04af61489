"""One factory: a `PipelineConfig` → the keyword arguments of a `HybridRetriever` (app, CLI and evaluation alike).

The factory is given what it needs (a model provider, the fact store, the learned adaptive strengths, the
visitor's access) and calls nothing above the pipeline: the workspace builds the retriever from these
arguments (`retrieval.workspace.retrievers.build_retriever`). Model objects are expensive, so the caller may
pass its own provider (the app passes its `st.cache_resource` loaders); `RegistryModels` builds each backend
once for its lifetime.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.records import RetrievalResult
from retrieval.types import Scope

if TYPE_CHECKING:
    from retrieval.models.embedders import Embedder


class Models(Protocol):
    def reranker(self, spec: str) -> Any: ...

    def generator(self, spec: str) -> Any: ...


class RegistryModels:
    """Backends from `retrieval.models.registry`, built once per spec for this provider's lifetime."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self._built: dict[tuple[str, str], Any] = {}

    def reranker(self, spec: str):
        from retrieval.models.registry import make_reranker
        from retrieval.models.rerankers import EmbeddingReranker

        if ("reranker", spec) not in self._built:
            share = spec == "embedding" and self.embedder is not None  # the store's embedder, loaded once
            self._built["reranker", spec] = EmbeddingReranker(self.embedder) if share else make_reranker(spec)
        return self._built["reranker", spec]

    def generator(self, spec: str):
        from retrieval.models.registry import make_generator

        if ("generator", spec) not in self._built:
            self._built["generator", spec] = make_generator(spec)
        return self._built["generator", spec]


def reranker_spec(cfg: PipelineConfig) -> str | None:
    if cfg.reranker == "none":
        return None
    if cfg.reranker == "cross-encoder":
        if not cfg.cross_encoder_path.strip():
            raise ValueError("the cross-encoder reranker needs a local model folder: give its path")
        return f"cross-encoder:{cfg.cross_encoder_path.strip()}"
    return cfg.reranker


def generator_spec(cfg: PipelineConfig) -> str | None:
    if not (cfg.hyde or cfg.multi_query_n):
        return None
    if cfg.generator == "openai":
        return f"openai:{cfg.openai_base_url}#{cfg.openai_model}"
    return cfg.generator


def retriever_kwargs(cfg: PipelineConfig, models: Models, *, facts: Any = None,
                     strengths: tuple[float, ...] | None = None, access: Any = None) -> dict[str, Any]:
    """The `HybridRetriever` keyword arguments for `cfg`: models from `models`, the fact graph `facts` (used when
    `cfg.facts`), the adaptive rules' learned `strengths` (used only when `adaptive` is on, now or after a
    re-fusion); for a visitor limited to some scopes (`access`), BM25 is always scored with the queried scope's
    own statistics (nothing of other scopes shows).

    Raises ValueError/ImportError with a message fit for a user (e.g. a missing API key).
    """
    from retrieval.facts import AgentOSFactClassifier, KeywordFactClassifier
    from retrieval.models.generators import HydeGenerator

    cfg.validate()
    rspec, gspec = reranker_spec(cfg), generator_spec(cfg)
    reranker = models.reranker(rspec) if rspec else None
    gen = models.generator(gspec) if gspec else None
    classifier = AgentOSFactClassifier() if cfg.classifier == "agentos" else KeywordFactClassifier()
    return dict(
        settings=cfg.settings, reranker=reranker, hyde=HydeGenerator(gen) if cfg.hyde and gen else None,
        fact_store=facts if cfg.facts else None, fact_classifier=classifier,
        multi_query_llm=gen if cfg.multi_query_n else None, multi_query_n=cfg.multi_query_n,
        adaptive_strengths=strengths, bm25_statistics=visitor_statistics(access),
    )


def visitor_statistics(access=None) -> str | None:
    """The BM25 statistics a visitor's reads use: `scope` for a visitor limited to some scopes (nothing of other
    scopes may show in a score, an idf or an explanation), else None (the store's setting). The one rule: every
    retriever made for a visitor — a search, the Changes view's two versions — takes it from here."""
    return "scope" if access is not None and access.limited else None


def learned_strengths(store: Any) -> tuple[float, ...] | None:
    """The adaptive rules' strengths the store records as learned from a case (`adapt --case`), else None."""
    from retrieval.store.adaptive import read_adaptive

    record = read_adaptive(store)  # None when none is recorded (or the store keeps no table)
    return record.values() if record is not None else None


def cache_key(query: str, scope: Scope | None, cfg: PipelineConfig) -> tuple:
    """What decides a search: when only fusion knobs differ, a cached result can be re-fused."""
    return (query, str(scope), cfg.search_key())


def can_reweight(result: RetrievalResult, cfg: PipelineConfig) -> bool:
    """Whether `result`'s search fetched enough candidates to be re-fused for `cfg`'s recall_top_k.

    The rule `reweight` enforces (`retrieval.pipeline.assemble.deep_enough`); the over-fetch multiplier
    is part of the search key, so a cached result with the same key was searched with `cfg`'s.
    """
    from retrieval.pipeline.assemble import deep_enough

    return deep_enough(result.diagnostics.record, cfg.settings.recall_top_k)
