"""Our BM25 (SPEC §3): a copy-on-write index whose readers hold immutable snapshots.

`index` is the mutable `BM25Index` (add, remove, search, explain, save/load); `snapshot` is the
read version a search holds; `versions` builds them (the next after a write, a bulk build); `arena`
the append-only flat storage versions share, its postings a few runs appended a write at a time;
`topk` the exact MaxScore and per-scope top-k plans; `formula` the scoring formula, written once;
`tokenizer` the analysers (`plain`, `english-stem`); `persist` the sidecar file format.
"""
from retrieval.bm25.index import BM25Index
from retrieval.bm25.tokenizer import (ANALYZERS, STOPWORDS, StemmingTokenizer, analyzer_of, default_tokenizer,
                                      make_tokenizer, tokenizer_id)

__all__ = ["ANALYZERS", "BM25Index", "STOPWORDS", "StemmingTokenizer", "analyzer_of", "default_tokenizer",
           "make_tokenizer", "tokenizer_id"]
