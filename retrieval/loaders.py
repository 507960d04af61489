"""File loaders: JSONL, CSV, plain text and BEIR (folder or .zip) → `MemoryTrace`s.

Loaders are lenient (SPEC §2): a bad line is reported with its number and reason, good lines are
kept. The store itself is strict; everything a loader returns already passed `validate()`.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from .types import SCOPES, MemoryTrace

MAX_FILE_BYTES = 200 * 1024 * 1024
TEXT_FIELDS = ("content", "text", "body", "message", "note")
ID_FIELDS = ("id", "_id", "trace_id", "doc_id")


@dataclass
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


@dataclass(frozen=True)
class FieldMap:
    """Which input field feeds which trace field (`None` = look for the usual names)."""

    id: str | None = None
    content: str | None = None
    title: str | None = None
    created_at: str | None = None
    scope_id: str | None = None
    tags: str | None = None


def parse_datetime(value: Any) -> datetime:
    """ISO 8601 (`2025-03-01`, `2025-03-01T10:00:00+01:00`, trailing `Z`) or epoch seconds/ms.

    A value without a timezone is read as UTC.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        secs = value / 1000.0 if value > 1e11 else float(value)
        dt = datetime.fromtimestamp(secs, tz=timezone.utc)
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00") if value.strip().endswith("Z") else value.strip()
        dt = datetime.fromisoformat(text)
    else:
        raise ValueError(f"date {value!r} is not ISO 8601 (e.g. 2025-03-01T10:00:00Z) or epoch seconds")
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _auto_id(prefix: str, content: str) -> str:
    return f"{prefix}-{hashlib.blake2b(content.encode(), digest_size=6).hexdigest()}"


def trace_from_record(rec: Mapping[str, Any], *, scope: str = "user", scope_id: str = "default",
                      fields: FieldMap = FieldMap(), id_prefix: str = "trace") -> MemoryTrace:
    """Build and validate one trace from a dict; raises ValueError naming the problem."""
    if not isinstance(rec, Mapping):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    content = rec.get(fields.content) if fields.content else next(
        (rec[f] for f in TEXT_FIELDS if isinstance(rec.get(f), str)), None)
    title = rec.get(fields.title) if fields.title else rec.get("title")
    if not isinstance(content, str) or not content.strip():
        wanted = fields.content or "/".join(TEXT_FIELDS)
        raise ValueError(f"no text: field '{wanted}' is missing or empty")
    if isinstance(title, str) and title.strip():
        content = f"{title.strip()}\n{content.strip()}"
    raw_id = rec.get(fields.id) if fields.id else next((rec[f] for f in ID_FIELDS if rec.get(f) not in (None, "")), None)
    tid = str(raw_id).strip() if raw_id not in (None, "") else _auto_id(id_prefix, content)
    kw: dict[str, Any] = {"id": tid, "content": content.strip()}
    kw["scope"] = str(rec.get("scope") or scope)
    kw["scope_id"] = str(rec.get(fields.scope_id or "scope_id") or scope_id)
    for name in ("type", "source_type"):
        if rec.get(name):
            kw[name] = str(rec[name])
    for name in ("tags", "entities"):
        key = (fields.tags if name == "tags" and fields.tags else name)
        val = rec.get(key)
        if isinstance(val, str):
            val = [v.strip() for v in val.replace(";", ",").split(",") if v.strip()]
        if val:
            if not isinstance(val, (list, tuple)):
                raise ValueError(f"field '{key}' must be a list of strings")
            kw[name] = tuple(str(v) for v in val)
    for name in ("confidence", "encoding_strength", "stability_ms", "valence", "arousal", "dominance"):
        if rec.get(name) not in (None, ""):
            try:
                kw[name] = float(rec[name])
            except (TypeError, ValueError):
                raise ValueError(f"field '{name}' is {rec[name]!r}, not a number") from None
    if rec.get("retrieval_count") not in (None, ""):
        kw["retrieval_count"] = int(rec["retrieval_count"])
    if rec.get("is_active") not in (None, ""):
        v = rec["is_active"]
        kw["is_active"] = v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes")
    created_key = fields.created_at or next((k for k in ("created_at", "timestamp", "date") if rec.get(k)), None)
    for name, key in (("created_at", created_key), ("last_accessed_at", "last_accessed_at")):
        if key and rec.get(key) not in (None, ""):
            try:
                kw[name] = parse_datetime(rec[key])
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"field '{key}': {exc}") from None
    trace = MemoryTrace(**kw)
    trace.validate()
    return trace


def _decode(data: bytes, source: str) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{source} is {len(data) // 2**20} MB; the limit is {MAX_FILE_BYTES // 2**20} MB. "
                         "Split it, or ingest it with `python -m retrieval ingest`.")
    if b"\x00" in data[:4096]:
        raise ValueError(f"{source} looks binary, not text; upload .jsonl, .csv, .txt or a BEIR .zip")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source} is not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from None


def load_jsonl(data: bytes | str, *, source: str = "input.jsonl", **kw) -> LoadReport:
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            rep.errors.append(LineError(n, f"invalid JSON ({exc.msg} at column {exc.colno})"))
            continue
        try:
            rep.traces.append(trace_from_record(rec, id_prefix=Path(source).stem, **kw))
        except (ValueError, TypeError) as exc:
            rep.errors.append(LineError(n, str(exc)))
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} is empty"))
    return rep


def load_csv(data: bytes | str, *, source: str = "input.csv", **kw) -> LoadReport:
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    if not text.strip():
        rep.errors.append(LineError(0, f"{source} is empty"))
        return rep
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        rep.errors.append(LineError(1, "no header row; the first line must name the columns (e.g. id,content)"))
        return rep
    for rec in reader:
        try:
            rep.traces.append(trace_from_record({k: v for k, v in rec.items() if k is not None},
                                                id_prefix=Path(source).stem, **kw))
        except (ValueError, TypeError) as exc:
            rep.errors.append(LineError(reader.line_num, str(exc)))
    return rep


def load_text(data: bytes | str, *, source: str = "input.txt", scope: str = "user", scope_id: str = "default",
              **_: Any) -> LoadReport:
    """One trace per paragraph (blank-line separated); ids `<file stem>-<n>`."""
    text = data if isinstance(data, str) else _decode(data, source)
    rep = LoadReport(source=source)
    stem = Path(source).stem or "text"
    line = 1
    n = 0
    for para in text.replace("\r\n", "\n").split("\n\n"):
        if para.strip():
            n += 1
            try:
                t = MemoryTrace(id=f"{stem}-{n}", content=para.strip(), scope=scope, scope_id=scope_id)
                t.validate()
                rep.traces.append(t)
            except ValueError as exc:
                rep.errors.append(LineError(line, str(exc)))
        line += para.count("\n") + 2
    if not rep.traces and not rep.errors:
        rep.errors.append(LineError(0, f"{source} has no text"))
    return rep


def load_beir_zip(data: bytes, *, source: str = "corpus.zip", **kw) -> LoadReport:
    """A BEIR folder zipped: uses its `corpus.jsonl` (title + text → content)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ValueError(f"{source} is not a valid .zip archive") from None
    names = [n for n in zf.namelist() if n.endswith("corpus.jsonl")]
    if not names:
        raise ValueError(f"{source} has no corpus.jsonl; zip a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    rep = load_jsonl(zf.read(min(names, key=len)), source=f"{source}:{min(names, key=len)}", **kw)
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
