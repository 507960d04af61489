"""What built a store (SPEC §15): its embedder's name and dimension, its BM25 analyzer and statistics.

Recorded as metadata on the `vector` field of the LanceDB table (lancedb 0.40 has no table-level
metadata update, but `update_field_metadata` changes a field's map in place, as a new table version).
A new table gets it in its schema at creation (no extra version). A store written before identity
was recorded has none; it is recorded on its next write.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping

from retrieval.bm25.scoped import STATISTICS
from retrieval.bm25.tokenizer import ANALYZERS

KEY_EMBEDDER = "retrieval.embedder"
KEY_DIM = "retrieval.dim"
KEY_ANALYZER = "retrieval.analyzer"
KEY_STATISTICS = "retrieval.bm25_statistics"
DEFAULT_ANALYZER = "plain"  # what a store that records no analyser was built with (stores keep theirs)
# What a new store records: Snowball English stemming, chosen on development data (LoCoMo dev at the
# `end` clock and SciFact, paired intervals in docs/BENCHMARKS.md "Choosing the hybrid defaults").
NEW_STORE_ANALYZER = "english-stem"
# BM25's N/df/avgdl for a scoped query: `store` (every document, the seed's; what a store recording none
# was built with) or `scope` (the queried scope's own; what a new store records — see docs/BENCHMARKS.md
# "Per-scope BM25 statistics"). A visitor limited by an access policy gets `scope` whatever is recorded.
DEFAULT_STATISTICS = "store"
NEW_STORE_STATISTICS = "scope"


@dataclass(frozen=True)
class StoreIdentity:
    """`embedder` is the recorded spec (None for a store that records none); `dim` its vector size."""

    embedder: str | None
    dim: int
    analyzer: str = DEFAULT_ANALYZER
    statistics: str = DEFAULT_STATISTICS

    def metadata(self) -> dict[str, str]:
        out = {KEY_DIM: str(self.dim), KEY_ANALYZER: self.analyzer, KEY_STATISTICS: self.statistics}
        if self.embedder:
            out[KEY_EMBEDDER] = self.embedder
        return out

    def describe(self) -> str:
        return (f"{self.embedder or 'unrecorded embedder'} ({self.dim}-d), BM25 analyzer {self.analyzer}, "
                f"{self.statistics}-wide BM25 statistics")


def check_analyzer(name: str) -> str:
    if name not in ANALYZERS:
        raise ValueError(f"analyzer {name!r} is not one of {', '.join(ANALYZERS)}")
    return name


def read_identity(tbl, vector_column: str = "vector") -> StoreIdentity:
    """The identity a table records (its vector column's metadata); dim always from the schema."""
    field = tbl.schema.field(vector_column)
    meta = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
            for k, v in (field.metadata or {}).items()}
    dim = field.type.list_size
    analyzer = meta.get(KEY_ANALYZER, DEFAULT_ANALYZER)
    statistics = meta.get(KEY_STATISTICS, DEFAULT_STATISTICS)
    return StoreIdentity(meta.get(KEY_EMBEDDER) or None, int(dim),
                         analyzer if analyzer in ANALYZERS else DEFAULT_ANALYZER,
                         statistics if statistics in STATISTICS else DEFAULT_STATISTICS)


def write_identity(tbl, ident: StoreIdentity, vector_column: str = "vector") -> int:
    """Record `ident` on the table (one metadata-only commit: a new table version, no data rewritten); returns the
    version it committed."""
    tbl.update_field_metadata({"path": vector_column, "metadata": ident.metadata()})
    return int(tbl.version)


def embedder_identity(embedder) -> tuple[str | None, int | None]:
    return getattr(embedder, "name", None), getattr(embedder, "dim", None)


def check_embedder(ident: StoreIdentity, embedder, uri: str) -> None:
    """ValueError naming both when `embedder` is not the one that built the store (same dim included)."""
    name, dim = embedder_identity(embedder)
    if dim is not None and dim != ident.dim:
        raise ValueError(
            f"store {uri!r} was built with embedder {ident.embedder or 'unrecorded'} ({ident.dim}-d) but is "
            f"opened with {name} ({dim}-d): it holds {ident.dim}-d vectors but the embedder makes {dim}-d ones; "
            "open it without naming an embedder (it uses the recorded one), re-embed it "
            "(`python -m retrieval reembed --embedder SPEC --db URI`), or use a new store URI")
    if ident.embedder and name and name != ident.embedder:
        raise ValueError(
            f"store {uri!r} was built with embedder {ident.embedder} ({ident.dim}-d) but is opened with "
            f"{name} ({dim}-d): the vectors would not be comparable; open it without naming an embedder, "
            "or re-embed it (`python -m retrieval reembed --embedder SPEC --db URI`)")


def embedder_for(ident: StoreIdentity, secrets: Mapping[str, str] | None = None):
    """Rebuild the recorded embedder (`hashing` at its recorded dim); minilm for a store recording none."""
    from retrieval.models.embedders import HashingEmbedder
    from retrieval.models.registry import make_embedder

    if ident.embedder == "hashing":
        return HashingEmbedder(ident.dim)
    return make_embedder(ident.embedder or "minilm", secrets=secrets)
