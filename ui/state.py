"""Pipeline configuration as plain data: defaults, JSON export/import, and the retriever it builds.

Pure Python (no Streamlit), so pages and tests share one definition of every knob.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from retrieval.presets import PRESET_DEFAULTS, PRESETS

RERANKER_CHOICES = ("none", "embedding", "cohere", "cross-encoder")
GENERATOR_CHOICES = ("gemma", "cohere", "openai")
CLASSIFIER_CHOICES = ("keyword", "agentos")
FUSION_FIELDS = ("dense_weight", "sparse_weight", "rrf_k", "rerank_weight")


@dataclass(frozen=True)
class PipelineConfig:
    preset: str = "hybrid"
    dense_weight: float = PRESET_DEFAULTS["hybrid"]["dense_weight"]
    sparse_weight: float = PRESET_DEFAULTS["hybrid"]["sparse_weight"]
    rrf_k: int = int(PRESET_DEFAULTS["hybrid"]["rrf_k"])
    over_fetch: int = 3
    top_k: int = 10
    hyde: bool = False
    generator: str = "gemma"
    openai_base_url: str = "http://127.0.0.1:11434"
    openai_model: str = "llama3.2"
    multi_query_n: int = 0
    facts: bool = True
    classifier: str = "keyword"
    reranker: str = "none"
    cross_encoder_path: str = ""
    rerank_weight: float = 0.3
    split_threshold: float = 0.0  # 0 = off
    valence: float = 0.0
    arousal: float = 0.0
    dominance: float = 0.0

    @classmethod
    def for_preset(cls, preset: str, **kw) -> "PipelineConfig":
        """A config with the preset's own fusion defaults (agentos: 0.7/0.3, k 60)."""
        d = PRESET_DEFAULTS[preset]
        base = dict(preset=preset, dense_weight=d["dense_weight"], sparse_weight=d["sparse_weight"],
                    rrf_k=int(d["rrf_k"]), rerank_weight=d["rerank_weight"])
        return cls(**{**base, **kw}).validate()

    def validate(self) -> "PipelineConfig":
        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"config field {name!r} is {getattr(self, name)!r}; allowed: {allowed}")

        if self.preset not in PRESETS:
            raise bad("preset", ", ".join(PRESETS))
        if self.reranker not in RERANKER_CHOICES:
            raise bad("reranker", ", ".join(RERANKER_CHOICES))
        if self.generator not in GENERATOR_CHOICES:
            raise bad("generator", ", ".join(GENERATOR_CHOICES))
        if self.classifier not in CLASSIFIER_CHOICES:
            raise bad("classifier", ", ".join(CLASSIFIER_CHOICES))
        for name in ("dense_weight", "sparse_weight"):
            if not 0 <= getattr(self, name) <= 1:
                raise bad(name, "0 to 1")
        if not 1 <= self.rrf_k <= 1000:
            raise bad("rrf_k", "1 to 1000")
        if not 1 <= self.over_fetch <= 10:
            raise bad("over_fetch", "1 to 10")
        if not 1 <= self.top_k <= 100:
            raise bad("top_k", "1 to 100")
        if not 0 <= self.rerank_weight <= 1:
            raise bad("rerank_weight", "0 to 1")
        if not 0 <= self.split_threshold <= 1:
            raise bad("split_threshold", "0 (off) to 1")
        if not 0 <= self.multi_query_n <= 5:
            raise bad("multi_query_n", "0 to 5")
        return self

    def search_key(self) -> tuple:
        """Everything except the fusion knobs: when only those change, re-fuse from cache."""
        d = asdict(self)
        return tuple((k, v) for k, v in sorted(d.items()) if k not in FUSION_FIELDS)

    def to_json(self) -> str:
        return json.dumps({"hybrid-retrieval-inspector-config": 1, **asdict(self)}, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> "PipelineConfig":
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"the config file is not valid JSON ({exc}); export one from the sidebar") from None
        if not isinstance(data, dict):
            raise ValueError("the config file must hold a JSON object")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(k for k in data if k not in known and k != "hybrid-retrieval-inspector-config")
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}")
        kw: dict[str, Any] = {}
        for name, value in data.items():
            if name not in known:
                continue
            default = getattr(cls(), name)
            try:
                kw[name] = type(default)(value) if not isinstance(default, bool) else bool(value)
            except (TypeError, ValueError):
                raise ValueError(f"config field {name!r} must be a {type(default).__name__}, got {value!r}") from None
        return replace(cls(), **kw).validate()


def build_retriever(ws, cfg: PipelineConfig, get_reranker, get_generator):
    """A HybridRetriever for `cfg`; model objects come from the caller's caches.

    Raises ValueError/ImportError with a message fit for the page (e.g. a missing API key).
    """
    from retrieval.facts import AgentOSFactClassifier, KeywordFactClassifier
    from retrieval.models.generators import HydeGenerator

    reranker = None
    if cfg.reranker == "cross-encoder":
        if not cfg.cross_encoder_path.strip():
            raise ValueError("the cross-encoder reranker needs a local model folder: type its path in the sidebar")
        reranker = get_reranker(f"cross-encoder:{cfg.cross_encoder_path.strip()}")
    elif cfg.reranker != "none":
        reranker = get_reranker(cfg.reranker)
    gen = None
    if cfg.hyde or cfg.multi_query_n:
        spec = cfg.generator
        if spec == "openai":
            spec = f"openai:{cfg.openai_base_url}#{cfg.openai_model}"
        gen = get_generator(spec)
    classifier = AgentOSFactClassifier() if cfg.classifier == "agentos" else KeywordFactClassifier()
    return ws.retriever(
        preset=cfg.preset, reranker=reranker, hyde=HydeGenerator(gen) if cfg.hyde and gen else None,
        fact_store=ws.facts if cfg.facts else None, fact_classifier=classifier,
        split_ambiguous_threshold=cfg.split_threshold or None, rerank_weight=cfg.rerank_weight,
        multi_query_llm=gen if cfg.multi_query_n else None, multi_query_n=cfg.multi_query_n,
        default_dense_weight=cfg.dense_weight, default_sparse_weight=cfg.sparse_weight, default_rrf_k=cfg.rrf_k,
    )


def run_config(ws, cfg: PipelineConfig, query: str, scope, get_reranker, get_generator, cached=None):
    """Retrieve, or re-fuse `cached` when only fusion knobs changed. Returns (result, refused)."""
    from retrieval.types import Mood

    if cached is not None and cached[0] == cache_key(query, scope, cfg):
        result = cached[1]
        retriever = result.diagnostics.retriever
        return retriever.reweight(result, dense_weight=cfg.dense_weight, sparse_weight=cfg.sparse_weight,
                                  rrf_k=cfg.rrf_k, rerank_weight=cfg.rerank_weight), True
    retriever = build_retriever(ws, cfg, get_reranker, get_generator)
    result = retriever.retrieve(query, mood=Mood(cfg.valence, cfg.arousal, cfg.dominance), scope=scope,
                                recall_top_k=cfg.top_k, over_fetch_multiplier=cfg.over_fetch)
    return result, False


def cache_key(query: str, scope, cfg: PipelineConfig) -> tuple:
    return (query, str(scope), cfg.search_key())
