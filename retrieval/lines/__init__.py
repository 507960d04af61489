"""The one line reader every import reads through (ingest, case import, judge import, import-log): a file split on
\\n only and decoded line by line, JSON and CSV parsed so that whatever breaks one line (not UTF-8, a NUL, nesting
past the recursion limit, an unclosed quote) is that line's error and the others still import. Standard library
only, so every package may use it.
"""
from retrieval.lines.reader import (MAX_FILE_BYTES, Line, csv_records, decode_line, json_value, read_lines,
                                    text_lines)

__all__ = ["MAX_FILE_BYTES", "Line", "csv_records", "decode_line", "json_value", "read_lines", "text_lines"]
