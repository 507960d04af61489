"""Cached resources for every page: the workspace (store + BM25 + facts) and the models.

`st.cache_resource` objects are shared by all sessions; nothing here is mutated per user.
"""
from __future__ import annotations

import os

import streamlit as st

DEFAULT_DB = "data/lancedb"


def db_uri() -> str:
    """The store URI: env RETRIEVAL_DB (how users point the app elsewhere), else data/lancedb."""
    return os.environ.get("RETRIEVAL_DB", DEFAULT_DB)


def embedder_kind() -> str | None:
    """RETRIEVAL_EMBEDDER (any spec: minilm, hashing, st:PATH, cohere:MODEL, openai:URL#MODEL) when set;
    otherwise None: the embedder the store records (SPEC §15; minilm for a new store)."""
    return os.environ.get("RETRIEVAL_EMBEDDER") or None


@st.cache_resource(show_spinner="Loading the embedding model…")
def get_embedder(kind: str | None):
    from retrieval.models.registry import make_embedder

    emb = workspace().store.embedder if kind is None else make_embedder(kind, secrets=operator_secrets())
    if hasattr(emb, "model"):  # local weights: load now, under the spinner; a hosted one is not called
        emb.embed(["warm up"])
    return emb


@st.cache_resource(show_spinner="Opening the store…")
def get_workspace(uri: str, kind: str | None):
    """The store, BM25 (or LanceDB FTS: RETRIEVAL_SPARSE=fts) and facts; RETRIEVAL_TABLE and
    RETRIEVAL_COLUMNS inspect another table in place (read-only). The embedding model is NOT loaded
    here (Home renders in a second); `ensure_model()` loads it under a spinner before a search."""
    from retrieval.store.columns import ColumnMap
    from retrieval.models.registry import make_embedder
    from retrieval.workspace.core import Workspace

    secrets = operator_secrets()
    table, columns = os.environ.get("RETRIEVAL_TABLE") or "traces", os.environ.get("RETRIEVAL_COLUMNS")
    return Workspace(uri, embedder=make_embedder(kind, secrets=secrets) if kind else None, secrets=secrets,
                     table=table, columns=ColumnMap.parse(columns) if columns or table != "traces" else None,
                     sparse=os.environ.get("RETRIEVAL_SPARSE") or "bm25")


def ensure_model() -> None:
    """Load the embedding model once per process, with a spinner (the workspace shares it)."""
    get_embedder(embedder_kind())


def workspace():
    """The shared Workspace, caught up with writes another process (the CLI) made since the last rerun."""
    ws = get_workspace(db_uri(), embedder_kind())
    ws.refresh_if_stale()
    return ws


SECRET_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COHERE_API_KEY", "CO_API_KEY", "COHERE_BASE_URL", "CO_API_URL")


def operator_secrets() -> dict[str, str]:
    """The operator's keys and base URLs from Streamlit secrets (the backends read the environment
    themselves). A key is only ever sent to the base URL configured beside it, never to one a user typed."""
    try:
        return {n: str(st.secrets[n]) for n in SECRET_NAMES if n in st.secrets}
    except Exception:  # no secrets.toml at all is the common case, not an error
        return {}


@st.cache_resource(show_spinner="Loading the reranker…")
def get_reranker(spec: str):
    from retrieval.models.registry import make_reranker
    from retrieval.models.rerankers import EmbeddingReranker

    if spec == "embedding":
        return EmbeddingReranker(get_embedder(embedder_kind()))
    return make_reranker(spec, secrets=operator_secrets())


@st.cache_resource(show_spinner="Loading the text generator (first use of local Gemma takes a few seconds)…")
def get_generator(spec: str):
    from retrieval.models.registry import make_generator

    return make_generator(spec, secrets=operator_secrets())


@st.cache_resource(show_spinner=False)
def judgments(uri: str):
    """The store's judgments, cases and snapshots (LanceDB tables beside `traces`)."""
    from retrieval.judgments import JudgmentStore

    return JudgmentStore(uri)
