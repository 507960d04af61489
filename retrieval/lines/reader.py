"""The one line reader every import uses: ingest (.jsonl/.csv/.txt), case import, judge import, import-log.

The promise it keeps: an import is line by line. A file is split on "\\n" only (U+2028, U+0085 or a form
feed inside a JSON string is not a line break) and each line is decoded on its own, so a line that is not
UTF-8 text, or holds a NUL, is that line's error (`Line.error`) and the lines around it still import. The only
file-level refusals are the ones no line could survive: too large, UTF-16/32 (a byte-order mark says so), or
binary (a NUL in the first 4 KiB and not one clean text line there). `json_value` and `csv_records` turn the
other ways one line can break a parser (nesting past the recursion limit, a 5,000-digit number, an unclosed
quote) into that line's reason. An importer gets all of this by reading through `read_lines`.
"""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_FILE_BYTES", "Line", "csv_records", "decode_line", "json_value", "read_lines", "text_lines"]

MAX_FILE_BYTES = 200 * 1024 * 1024
_SNIFF = 4096
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Line:
    """Line `n` (from 1) of a file: its text without the line break, or None and why it is not text."""

    n: int
    text: str | None
    error: str = ""


def decode_line(raw: bytes | str) -> tuple[str | None, str]:
    """(text, "") or (None, why): one line's bytes as UTF-8 text without NUL."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, (f"not UTF-8 text (byte {exc.start + 1} of the line is 0x{raw[exc.start]:02x}); "
                          "re-save the file as UTF-8")
    else:
        text = raw
    if "\x00" in text:
        return None, (f"holds a NUL character (position {text.index(chr(0)) + 1}), which is not text; "
                      "remove it or re-save the file as UTF-8")
    return text, ""


def _refuse_file(data: bytes, source: str) -> None:
    """ValueError for a file no line of which could import: too large, UTF-16/32, or binary."""
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{source} is {len(data) // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB. "
                         "Split it into smaller files.")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            raise ValueError(f"{source} is not UTF-8 text: it starts with a {codec} byte-order mark; "
                             "re-save it as UTF-8")
    sample = data[:_SNIFF]
    if b"\x00" in sample and not any(_clean(part) for part in sample.split(b"\n")[:-1] or [sample]):
        raise ValueError(f"{source} looks binary, not text; upload .jsonl, .csv, .txt or a BEIR .zip")


def _clean(raw: bytes) -> bool:
    text, _ = decode_line(raw.removeprefix(b"\xef\xbb\xbf"))
    return bool(text and text.strip() and not _CONTROL.search(text))


def read_lines(data: bytes | str, source: str = "input") -> list[Line]:
    """Every line of a file, numbered from 1, without its "\\n" and the file's BOM. A CRLF line keeps its "\\r":
    JSON and qrels read it as whitespace, and the CSV reader needs it (a quoted field may hold "\\r\\n")."""
    if isinstance(data, str):
        return text_lines(data)
    _refuse_file(data, source)
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:  # the fast path: a clean file decodes at once
        return text_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    out = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        text, why = decode_line(raw)
        out.append(Line(n, text, why))
    return out


def text_lines(text: str) -> list[Line]:
    """`read_lines` for text already decoded."""
    text = text.removeprefix("\ufeff")
    if "\x00" not in text:
        return [Line(n, t) for n, t in enumerate(text.split("\n"), 1)]
    return [Line(n, *decode_line(t)) for n, t in enumerate(text.split("\n"), 1)]


def json_value(text: str) -> Any:
    """One JSON line's value; ValueError with the reason for any way the line can break the parser."""
    try:
        return json.loads(text, strict=False)  # a raw tab or form feed inside a string is harmless
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer over Python's 4,300-digit conversion limit
        raise ValueError(f"invalid JSON ({str(exc)[:200]})") from None


def csv_records(lines: Sequence[Line]) -> Iterator[tuple[int, list[str] | None, str]]:
    """(first line number, fields or None, error) per CSV record, in file order; empty records are skipped.

    Strict parsing turns an unclosed quote into an error ("unexpected end of data" or "',' expected after '\"'")
    instead of a field that silently swallows the following rows; parsing restarts on the line after the bad
    record's first line, so only that line is lost. A line that is not text is its own error and ends any
    record open across it.
    """
    if csv.field_size_limit() < MAX_FILE_BYTES:  # one field can be as large as a file we accept
        csv.field_size_limit(MAX_FILE_BYTES)
    run: list[Line] = []
    for line in lines:
        if line.text is None:
            yield from _csv_run(run)
            run = []
            yield line.n, None, line.error
        else:
            run.append(line)
    yield from _csv_run(run)


def _csv_run(run: Sequence[Line]) -> Iterator[tuple[int, list[str] | None, str]]:
    """`csv_records` over consecutive text lines."""
    texts = [f"{line.text}\n" for line in run]
    start = 0
    reader = csv.reader(iter(texts), strict=True)
    while True:
        first = start + reader.line_num  # 0-based index of the record's first line in `run`
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield run[first].n, None, f"malformed CSV ({exc}); check for an unclosed quote on this line"
            start = first + 1
            reader = csv.reader(_from(texts, start), strict=True)  # no O(n) slice
            continue
        if row:
            yield run[first].n, row, ""


def _from(items: Sequence[str], start: int) -> Iterable[str]:
    return (items[i] for i in range(start, len(items)))
