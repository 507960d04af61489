"""Stable import path (SPEC §17): the file loaders live in `retrieval.ingest`."""
from retrieval.ingest import (FieldMap, LineError, LoadReport, csv_headers, jsonl_fields, load_beir_dir, load_beir_zip,
                              load_csv, load_file, load_jsonl, load_path, load_text)

__all__ = ["FieldMap", "LineError", "LoadReport", "csv_headers", "jsonl_fields", "load_beir_dir", "load_beir_zip",
           "load_csv", "load_file", "load_jsonl", "load_path", "load_text"]
