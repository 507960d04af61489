"""File loaders: JSONL, CSV, plain text and BEIR (folder or .zip) → `MemoryTrace`s.

Loaders are lenient (SPEC §2): a bad line is reported with its number and reason, good lines are
kept, and the only exception a loader raises is a `ValueError` about the file as a whole (wrong
type, not UTF-8, too large, a broken or encrypted zip). Every trace returned already passed
`MemoryTrace.validate()`, so the store accepts the batch.

Ids: an id given by the record (`id`, `_id`, `trace_id`, `doc_id`, or the mapped field) is kept
exactly. A line without one gets an id that names its scope, so the same file name uploaded for
two scopes never collides (an upsert would move one user's trace to another):
`<scope>:<scope_id>/<file stem>-<n>` for the n-th paragraph of a text file (`user:u1/notes-1`) and
`<scope>:<scope_id>/<file stem>-<12 hex of blake2b(content)>` for JSONL/CSV lines.
"""
from __future__ import annotations

import csv
import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from collections.abc import Iterator

from retrieval.ingest.parse import LINE_ERRORS, FieldMap, auto_id, parse_datetime, trace_from_record
from retrieval.types import SCOPES, MemoryTrace

__all__ = ["FieldMap", "LineError", "LoadReport", "auto_id", "csv_headers", "jsonl_fields", "load_beir_dir",
           "load_beir_zip",
           "load_csv", "load_file", "load_jsonl", "load_path", "load_text", "parse_datetime", "trace_from_record"]

try:  # zipfile imports lzma lazily too: a Python built without liblzma still loads JSONL
    from lzma import LZMAError as _LZMAError
    _CODEC_ERRORS: tuple[type[Exception], ...] = (_LZMAError,)
except ImportError:  # pragma: no cover
    _CODEC_ERRORS = ()

MAX_FILE_BYTES = 200 * 1024 * 1024
# A zip member inflating this much more than it weighs is refused even under the size cap:
# text corpora compress 3–10×, a deflate bomb ~1000×.
MAX_ZIP_RATIO = 100
ZIP_RATIO_FLOOR = 16 * 1024 * 1024


@dataclass(frozen=True)
class LineError:
    line: int
    reason: str


@dataclass
class LoadReport:
    traces: list[MemoryTrace] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    source: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.traces)

    def summary(self) -> str:
        return f"{len(self.traces)} trace(s) read from {self.source or 'input'}, {len(self.errors)} line(s) rejected"


def _decode(data: bytes, source: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{source} is {len(data) // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB. "
                         "Split it into smaller files.")
    if b"\x00" in data[:4096]:
        raise ValueError(f"{source} looks binary, not text; upload .jsonl, .csv, .txt or a BEIR .zip")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source} is not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None


def _lines(text: str) -> list[str]:
    """Split on \\n only: U+2028, U+0085 or a form feed inside a JSON string is not a line break."""
    return text.split("\n")


def load_jsonl(data: bytes | str, *, source: str = "input.jsonl", **kw) -> LoadReport:
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    stem = Path(source).stem
    for n, line in enumerate(_lines(text), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            rec = json.loads(line, strict=False)  # a raw tab or form feed inside a string is harmless
        except json.JSONDecodeError as exc:
            rep.errors.append(LineError(n, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except RecursionError:
            rep.errors.append(LineError(n, "invalid JSON (nested too deeply)"))
            continue
        except ValueError as exc:  # e.g. an integer over Python's 4,300-digit conversion limit
            rep.errors.append(LineError(n, f"invalid JSON ({exc})"))
            continue
        try:
            rep.traces.append(trace_from_record(rec, id_prefix=stem, **kw))
        except LINE_ERRORS as exc:
            rep.errors.append(LineError(n, str(exc)))
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} is empty"))
    return rep


def _csv_rows(lines: list[str]) -> Iterator[tuple[int, list[str] | None, str]]:
    """(first line number, fields or None, error) per CSV record, resynchronising after an error.

    Strict parsing turns an unclosed quote into an error ("unexpected end of data" or "',' expected
    after '\"'") instead of a field that silently swallows the following rows; parsing restarts on
    the line after the bad record's first line, so only that line is lost.
    """
    if csv.field_size_limit() < MAX_FILE_BYTES:  # one field can be as large as a file we accept
        csv.field_size_limit(MAX_FILE_BYTES)
    start = 0
    reader = csv.reader(iter(lines), strict=True)
    while True:
        first = start + reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield first, None, f"malformed CSV ({exc}); check for an unclosed quote on this line"
            start = first  # 1-based `first` is the 0-based index of the line after it
            reader = csv.reader((lines[i] for i in range(start, len(lines))), strict=True)  # no O(n) slice
            continue
        if row:
            yield first, row, ""


def _csv_lines(text: str) -> list[str]:
    parts = _lines(text)
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def csv_headers(data: bytes | str, limit: int = 20_000) -> list[str]:
    """Column names of a CSV's header row (stripped, empty ones dropped); [] when there is none.

    For the field-mapping picker: reads at most `limit` bytes and never raises.
    """
    text = data[:limit] if isinstance(data, str) else data[:limit].decode("utf-8-sig", errors="replace")
    for _, row, _ in _csv_rows(_csv_lines(text)):
        return list(dict.fromkeys(c.strip() for c in row or () if c.strip()))
    return []


def jsonl_fields(data: bytes | str, limit: int = 20_000, lines: int = 20) -> list[str]:
    """Keys of the first JSON object among the first `lines` lines; [] when there is none. Never raises."""
    text = data[:limit] if isinstance(data, str) else data[:limit].decode("utf-8-sig", errors="replace")
    for line in _lines(text)[:lines]:
        try:
            rec = json.loads(line, strict=False)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            return [k for k in rec if k.strip()]
    return []


def load_csv(data: bytes | str, *, source: str = "input.csv", **kw) -> LoadReport:
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    if not text.strip():
        rep.errors.append(LineError(0, f"{source} is empty"))
        return rep
    stem = Path(source).stem
    header: list[str] | None = None
    for line, row, err in _csv_rows(_csv_lines(text)):
        if header is None:
            if row is None or not any(c.strip() for c in row):
                rep.errors.append(LineError(line, f"no usable header row ({err or 'empty'}); the first line "
                                                  "must name the columns (e.g. id,content)"))
                return rep
            header = [c.strip() for c in row]
            continue
        if row is None:
            rep.errors.append(LineError(line, err))
            continue
        if len(row) > len(header) and any(c.strip() for c in row[len(header):]):
            rep.errors.append(LineError(line, f"row has {len(row)} fields but the header names {len(header)}; "
                                              "quote fields that contain commas"))
            continue
        rec = {k: v for k, v in zip(header, row) if k}
        try:
            rep.traces.append(trace_from_record(rec, id_prefix=stem, **kw))
        except LINE_ERRORS as exc:
            rep.errors.append(LineError(line, str(exc)))
    if header is None:
        rep.errors.append(LineError(1, "no header row; the first line must name the columns (e.g. id,content)"))
    return rep


def load_text(data: bytes | str, *, source: str = "input.txt", scope: str = "user", scope_id: str = "default",
              **_: Any) -> LoadReport:
    """One trace per paragraph (blank-line separated); ids `<scope>:<scope_id>/<file stem>-<n>`."""
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    stem = Path(source).stem or "text"
    line = 1
    n = 0
    for para in text.replace("\r\n", "\n").split("\n\n"):
        if para.strip():
            n += 1
            try:
                t = MemoryTrace(id=auto_id(scope, scope_id, stem, str(n)), content=para.strip(),
                                scope=scope, scope_id=scope_id)
                t.validate()
                rep.traces.append(t)
            except LINE_ERRORS as exc:
                rep.errors.append(LineError(line, str(exc)))
        line += para.count("\n") + 2
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} has no text"))
    return rep


def _corpus_member(zf: zipfile.ZipFile, source: str) -> zipfile.ZipInfo:
    found = [i for i in zf.infolist() if PurePosixPath(i.filename).name == "corpus.jsonl"
             and not i.filename.startswith("__MACOSX/") and not i.is_dir()]
    if not found:
        raise ValueError(f"{source} has no corpus.jsonl; zip a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    return min(found, key=lambda i: len(i.filename))


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: str, max_bytes: int) -> bytes:
    """The member's bytes, refused from its declared sizes first, then streamed under a byte cap."""
    name = f"{source}:{info.filename}"
    fix = "unzip it and upload corpus.jsonl in parts, or zip it again without a password"
    if info.flag_bits & 0x1:
        raise ValueError(f"{name} is encrypted; zip it again without a password")
    if info.file_size > max_bytes:
        raise ValueError(f"{name} inflates to {info.file_size // 2**20} MB; the limit is "
                         f"{max_bytes // 2**20} MB. Split the corpus, or {fix}")
    if info.file_size > ZIP_RATIO_FLOOR and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
        raise ValueError(f"{name} inflates {info.file_size // max(info.compress_size, 1)}× (limit "
                         f"{MAX_ZIP_RATIO}×); this looks like a zip bomb, not a text corpus")
    chunks, total = [], 0
    try:
        with zf.open(info) as f:
            # Declared sizes can lie: never hold more than the cap, whatever the stream says.
            while chunk := f.read(min(1 << 20, max_bytes + 1 - total)):
                total += len(chunk)
                if total > max_bytes:
                    break
                chunks.append(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError,
            ValueError) as exc:
        raise ValueError(f"{name} cannot be read ({exc}); the zip is damaged or uses an unsupported "
                         f"feature: {fix}") from None
    except _CODEC_ERRORS as exc:
        raise ValueError(f"{name} cannot be read ({type(exc).__name__}: {exc}); re-create the zip") from None
    if total > max_bytes:
        raise ValueError(f"{name} inflates past {max_bytes // 2**20} MB; the limit. Split the corpus, or {fix}")
    return b"".join(chunks)


def load_beir_zip(data: bytes, *, source: str = "corpus.zip", max_bytes: int = MAX_FILE_BYTES, **kw) -> LoadReport:
    """A BEIR folder zipped: uses its `corpus.jsonl` (title + text → content), read under `max_bytes`."""
    if len(data) > max_bytes:
        raise ValueError(f"{source} is {len(data) // 2**20} MB; the limit is {max_bytes // 2**20} MB")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        info = _corpus_member(zf, source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as exc:
        raise ValueError(f"{source} is not a valid .zip archive ({exc}); re-create it") from None
    rep = load_jsonl(_read_member(zf, info, source, max_bytes), source=f"{source}:{info.filename}", **kw)
    rep.source = source
    return rep


def load_beir_dir(path: str | Path, **kw) -> LoadReport:
    path = Path(path)
    corpus = path / "corpus.jsonl"
    if not corpus.is_file():
        raise ValueError(f"{path} has no corpus.jsonl; point at a BEIR dataset folder")
    return load_jsonl(corpus.read_bytes(), source=str(corpus), **kw)


LOADERS = {".jsonl": load_jsonl, ".ndjson": load_jsonl, ".csv": load_csv, ".txt": load_text,
           ".md": load_text, ".zip": load_beir_zip}


def load_file(name: str, data: bytes, **kw) -> LoadReport:
    """Pick a loader from the file name; a wrong type is a ValueError naming the allowed ones."""
    suffix = Path(name).suffix.lower()
    loader = LOADERS.get(suffix)
    if loader is None:
        raise ValueError(f"{name}: unsupported file type {suffix or '(none)'}; use one of "
                         f"{', '.join(sorted(LOADERS))}")
    if not data:
        raise ValueError(f"{name} is empty; nothing to load")
    if "scope" in kw and kw["scope"] not in SCOPES:
        raise ValueError(f"scope {kw['scope']!r} is not one of {', '.join(SCOPES)}")
    return loader(data, source=name, **kw)


def load_path(path: str | Path, **kw) -> LoadReport:
    path = Path(path)
    if path.is_dir():
        return load_beir_dir(path, **kw)
    if not path.is_file():
        raise ValueError(f"{path} does not exist")
    return load_file(path.name, path.read_bytes(), **kw)
