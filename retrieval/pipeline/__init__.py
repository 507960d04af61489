"""The retrieval pipeline in two phases (SPEC §6): `search` does all I/O once and returns a frozen
`SearchRecord` (`records`); `assemble` is a pure function of that record and the one
`RetrievalSettings` value (`settings`, `presets`), re-run on every slider move; `explain` says why a trace is
where it is; `split` is split-on-ambiguous; `config` describes a whole pipeline as data and `factory` builds it.
"""
from retrieval.pipeline.config import PipelineConfig
from retrieval.pipeline.explain import Explanation
from retrieval.pipeline.ports import DenseStore, FactSource, SparseReader
from retrieval.pipeline.presets import AGENTOS, HYBRID, PRESETS, Preset, get_preset
from retrieval.pipeline.records import STAGES, Diagnostics, RetrievalResult, SearchRecord
from retrieval.pipeline.settings import KNOBS, RetrievalSettings, resolve_settings

__all__ = ["AGENTOS", "DenseStore", "Diagnostics", "Explanation", "FactSource", "HYBRID", "KNOBS", "PRESETS",
           "PipelineConfig", "Preset", "RetrievalResult", "STAGES", "RetrievalSettings", "SearchRecord", "SparseReader",
           "get_preset", "resolve_settings"]
