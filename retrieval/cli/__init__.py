"""The command line, `python -m retrieval …`: `main` (ingest, query, status, build-demo, eval),
`store` (re-embed, analyser, external tables), `cases` (cases and snapshots, SPEC §14), `eval`."""
from retrieval.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
