"""File loaders: JSONL, CSV, plain text and BEIR (folder or .zip) → `MemoryTrace`s.

Loaders are lenient (SPEC §2): a bad line (not UTF-8, a NUL, bad JSON, an unclosed quote) is reported
with its number and reason, good lines are kept — every loader reads through the one line reader,
`retrieval.lines` — and the only exception a loader raises is a `ValueError` about the file as a whole
(wrong type, UTF-16, binary, too large, a broken or encrypted zip). Every trace returned already passed
`MemoryTrace.validate()`, so the store accepts the batch.

Ids: an id given by the record (`id`, `_id`, `trace_id`, `doc_id`, or the mapped field) is kept
exactly. A line without one gets an id that names its scope, so the same file name uploaded for
two scopes never collides (an upsert would move one user's trace to another):
`<scope>:<scope_id>/<file stem>-<n>` for the n-th paragraph of a text file (`user:u1/notes-1`) and
`<scope>:<scope_id>/<file stem>-<12 hex of blake2b(content)>` for JSONL/CSV lines.
"""
from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from collections.abc import Iterator

from retrieval.lines import MAX_FILE_BYTES, Line, csv_records, json_value, read_lines, text_lines
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


def _rejected(line: Line) -> LineError:
    return LineError(line.n, line.error)


def load_jsonl(data: bytes | str, *, source: str = "input.jsonl", **kw) -> LoadReport:
    rep = LoadReport(source=source)
    stem = Path(source).stem
    for line in read_lines(data, source):
        if line.text is None:
            rep.errors.append(_rejected(line))
            continue
        if not line.text.strip():
            continue
        try:
            rec = json_value(line.text)
            rep.traces.append(trace_from_record(rec, id_prefix=stem, **kw))
        except LINE_ERRORS as exc:
            rep.errors.append(LineError(line.n, str(exc)))
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} is empty"))
    return rep


def csv_headers(data: bytes | str, limit: int = 20_000) -> list[str]:
    """Column names of a CSV's header row (stripped, empty ones dropped); [] when there is none.

    For the field-mapping picker: reads at most `limit` bytes and never raises.
    """
    text = data[:limit] if isinstance(data, str) else data[:limit].decode("utf-8-sig", errors="replace")
    for _, row, _ in csv_records(text_lines(text)):
        return list(dict.fromkeys(c.strip() for c in row or () if c.strip()))
    return []


def jsonl_fields(data: bytes | str, limit: int = 20_000, lines: int = 20) -> list[str]:
    """Keys of the first JSON object among the first `lines` lines; [] when there is none. Never raises."""
    text = data[:limit] if isinstance(data, str) else data[:limit].decode("utf-8-sig", errors="replace")
    for line in text_lines(text)[:lines]:
        try:
            rec = json_value(line.text or "")
        except ValueError:
            continue
        if isinstance(rec, dict):
            return [k for k in rec if k.strip()]
    return []


def load_csv(data: bytes | str, *, source: str = "input.csv", **kw) -> LoadReport:
    lines = read_lines(data, source)
    rep = LoadReport(source=source)
    if all(x.text is not None and not x.text.strip() for x in lines):
        rep.errors.append(LineError(0, f"{source} is empty"))
        return rep
    stem = Path(source).stem
    header: list[str] | None = None
    for line, row, err in csv_records(lines):
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
    rep = LoadReport(source=source)
    stem = Path(source).stem or "text"
    n = 0
    for first, para in _paragraphs(read_lines(data, source), rep.errors):
        if para.strip():
            n += 1
            try:
                t = MemoryTrace(id=auto_id(scope, scope_id, stem, str(n)), content=para.strip(),
                                scope=scope, scope_id=scope_id)
                t.validate()
                rep.traces.append(t)
            except LINE_ERRORS as exc:
                rep.errors.append(LineError(first, str(exc)))
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} has no text"))
    return rep


def _paragraphs(lines: list[Line], errors: list[LineError]) -> Iterator[tuple[int, str]]:
    """(first line, text) per paragraph: runs of lines between empty lines. A line that is not text is
    reported in `errors` and left out of its paragraph (which keeps its other lines)."""
    first, run = 0, []
    for line in lines + [Line(len(lines) + 1, "")]:
        text = None if line.text is None else line.text.removesuffix("\r")
        if text is None:
            errors.append(_rejected(line))
        elif text:
            first = first or line.n
            run.append(text)
        elif run:
            yield first, "\n".join(run)
            first, run = 0, []


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
