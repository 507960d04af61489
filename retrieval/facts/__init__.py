"""Fact graph (SPEC §7): literal (subject, predicate, object) facts, persisted per scope.

Facts keep the literal value a summary or an embedding blurs (a city, a pet's name, a drug),
and keep history, so "where did I live first?" can be answered with every fact in time order.

One concern per module:
  model.py        `Fact`, the predicates, subjects, and a fact's synthetic trace
  store.py        `FactStore` on LanceDB
  rules.py        `RuleFactExtractor` (offline regex patterns)
  llm.py          `LLMFactExtractor` and its prompt
  classifiers.py  which facts a query asks for, and whether it asks about time
  inject.py       the pipeline steps: `extract_for_traces` at ingest, `fact_traces_for_query` at query
Importing this package loads no database: LanceDB is imported on first use of a `FactStore`.
"""
from retrieval.facts.classifiers import TEMPORAL_RE, AgentOSFactClassifier, KeywordFactClassifier, is_temporal
from retrieval.facts.inject import TEMPORAL_MODES, Visible, extract_for_traces, fact_traces_for_query, visible_in
from retrieval.facts.llm import LLM_FACT_SYSTEM, LLMFactExtractor, llm_fact_prompt
from retrieval.facts.model import (FIRST_PERSON, NOT_NAMES, PREDICATES, Fact, canonical_subject, fact_to_trace,
                                   fact_trace_id)
from retrieval.facts.rules import RuleFactExtractor
from retrieval.facts.store import FactStore, FactStoreError

__all__ = [
    "AgentOSFactClassifier", "FIRST_PERSON", "Fact", "FactStore", "FactStoreError", "KeywordFactClassifier",
    "LLMFactExtractor", "LLM_FACT_SYSTEM", "NOT_NAMES", "PREDICATES", "RuleFactExtractor", "TEMPORAL_MODES",
    "TEMPORAL_RE", "Visible", "canonical_subject", "extract_for_traces", "fact_to_trace", "fact_trace_id",
    "fact_traces_for_query", "is_temporal", "llm_fact_prompt", "visible_in",
]
