"""Getting traces in: file loaders that report bad lines and keep good ones (`loaders`), the record
parser they share (`parse`), and the bundled demo corpus (`demo`).
"""
from retrieval.ingest.loaders import (LineError, LoadReport, csv_headers, jsonl_fields, load_beir_dir, load_beir_zip,
                                      load_csv, load_file, load_jsonl, load_path, load_text)
from retrieval.ingest.parse import FieldMap, auto_id, trace_from_record

__all__ = ["FieldMap", "LineError", "LoadReport", "auto_id", "csv_headers", "jsonl_fields", "load_beir_dir",
           "load_beir_zip", "load_csv", "load_file", "load_jsonl", "load_path", "load_text", "trace_from_record"]
