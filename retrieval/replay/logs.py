"""Agent retrieval logs in: JSONL lines and OpenInference / OpenTelemetry RETRIEVER spans (Phoenix exports).

Every line is untrusted: parsed into a `LoggedQuery` with limits (line size, query length, results), or
reported as a `BadLine` with its number and the reason; the good lines are kept. Formats:

- JSONL: `{"timestamp": ISO-TIME with zone, "query": str, "scope": "user:u1" | {"scope", "scope_id"} | null,
  "results": [{"id": str, "score": number}], "feedback": optional}`.
- OpenInference spans, one JSON object per line: span kind `RETRIEVER` (`span_kind` or the attribute
  `openinference.span.kind`), `input.value` (the query), `retrieval.documents.N.document.id/score/content`
  (flattened keys, or a `retrieval.documents` list of `document.*` dicts), the time from `start_time` (ISO) or
  `startTimeUnixNano`; attributes as a dict (Phoenix) or an OTLP list of `{key, value: {stringValue…}}`.
  Spans of other kinds are skipped (counted, not errors).

`feedback` is a thumbs value (`up`/`down`, true/false, a number in [-1, 1]) for the answer, or a map
trace id → grade 0..3; `implicit_grades` turns it into grades (see there).
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from retrieval.lines import decode_line
from retrieval.types import Scope

MAX_LINE = 1_000_000  # bytes of one log line
MAX_QUERY = 10_000  # characters
MAX_RESULTS = 1_000
POSITIVE, NEGATIVE = ("up", "positive", "thumbs_up", "good", "+1"), ("down", "negative", "thumbs_down", "bad", "-1")


@dataclass(frozen=True)
class LoggedQuery:
    """One query the agent ran: when, in which scope, what it got (ids and scores in rank order)."""

    key: str  # stable: the hash of the line's content (re-importing a file adds nothing new)
    timestamp: datetime
    query: str
    scope: Scope | None
    result_ids: tuple[str, ...]
    result_scores: tuple[float, ...]
    feedback: Any = None  # as logged (validated): str | bool | float | dict[str, int] | None
    source: str = "jsonl"  # jsonl | openinference

    @property
    def top_score(self) -> float | None:
        return self.result_scores[0] if self.result_scores else None


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[LoggedQuery | BadLine | None]:
    """Each line as a `LoggedQuery`, a `BadLine` (numbered from 1), or None (blank, or a span of another kind)."""
    for n, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE:
            yield BadLine(n, f"longer than {MAX_LINE} bytes")
            continue
        text, why = decode_line(raw)
        if text is None:  # not UTF-8, or a NUL: this line's error (`retrieval.lines`), never replaced silently
            yield BadLine(n, why)
            continue
        if not text.strip():
            yield None
            continue
        yield _line(n, text)


def _line(n: int, text: str) -> LoggedQuery | BadLine | None:
    """One non-blank line; whatever is wrong with it (nesting past the recursion limit, a number too large for a
    time, a lone surrogate, a 5,000-digit integer) is this line's `BadLine`, never the import's end."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return BadLine(n, f"not JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return BadLine(n, "nested too deeply to read")
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        return BadLine(n, f"not readable JSON ({str(exc)[:200]})")
    try:
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        _check_text(obj)
        return _parse(obj, text)
    except RecursionError:
        return BadLine(n, "nested too deeply to read")
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        return BadLine(n, str(exc)[:300])
    except Exception as exc:  # one line never ends an import; its reason is kept
        return BadLine(n, f"unreadable ({type(exc).__name__}: {str(exc)[:200]})")


def _check_text(obj: Any) -> None:
    """ValueError when any string of the record is not storable text (a lone UTF-16 surrogate such as \\ud800)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
        raise ValueError(f"holds a lone surrogate ({ascii(bad)}), which is not text; save the log as UTF-8") from None


def _parse(obj: dict, text: str) -> LoggedQuery | None:
    key = hashlib.blake2b(text.strip().encode(), digest_size=12).hexdigest()
    if "query" in obj or "results" in obj:
        return _jsonl(obj, key)
    attrs = _attributes(obj.get("attributes"))
    kind = str(obj.get("span_kind") or attrs.get("openinference.span.kind") or "").upper()
    if not kind and "name" not in obj:
        raise ValueError("neither a JSONL log record (query, results) nor an OpenInference span")
    if kind != "RETRIEVER":
        return None
    return _span(obj, attrs, key)


def _jsonl(obj: dict, key: str) -> LoggedQuery:
    results = obj.get("results")
    if not isinstance(results, list):
        raise ValueError("'results' must be a list of {\"id\", \"score\"}")
    ids, scores = [], []
    for i, r in enumerate(results[:MAX_RESULTS]):
        if not isinstance(r, dict) or not isinstance(r.get("id"), str) or not r["id"]:
            raise ValueError(f"results[{i}] needs a non-empty string 'id'")
        ids.append(r["id"])
        scores.append(_number(r.get("score", math.nan), f"results[{i}].score"))
    return LoggedQuery(key, parse_time(obj.get("timestamp")), _query(obj.get("query")), _scope(obj.get("scope")),
                       tuple(ids), tuple(scores), _feedback(obj.get("feedback")), "jsonl")


def _span(obj: dict, attrs: dict, key: str) -> LoggedQuery:
    docs: dict[int, dict] = {}
    listed = attrs.get("retrieval.documents")
    if isinstance(listed, list):
        docs = {i: _flat(d) for i, d in enumerate(listed) if isinstance(d, dict)}
    for k, v in attrs.items():
        if k.startswith("retrieval.documents.") and k.count(".") >= 3:
            idx, field = k[len("retrieval.documents."):].split(".", 1)
            if idx.isdigit():
                docs.setdefault(int(idx), {})[field] = v
    ids, scores = [], []
    for i in sorted(docs)[:MAX_RESULTS]:
        d = docs[i]
        did = d.get("document.id", {} if any(k.startswith("document.id.") for k in d) else None)  # an object: flattened
        ids.append(_document_id(did, f"retrieval.documents.{i}.document.id"))
        scores.append(_number(d.get("document.score", math.nan), f"retrieval.documents.{i}.document.score"))
    when = obj.get("start_time") or obj.get("startTime")
    if when is None and obj.get("startTimeUnixNano") is not None:
        when = _unix_nano(obj["startTimeUnixNano"])
    meta = attrs.get("metadata")
    meta = json.loads(meta) if isinstance(meta, str) and meta.startswith("{") else meta
    scope = (meta or {}).get("scope") if isinstance(meta, dict) else None
    return LoggedQuery(key, parse_time(when), _query(attrs.get("input.value")), _scope(scope), tuple(ids),
                       tuple(scores), _feedback((meta or {}).get("feedback") if isinstance(meta, dict) else None),
                       "openinference")


def _document_id(value: Any, what: str) -> str:
    """A document id: a non-empty string, or an integer (OpenInference allows one) as its decimal string."""
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int)):
        got = ("missing" if value is None else "an object" if isinstance(value, dict)
               else f"a {type(value).__name__} ({str(value)[:40]!r})")
        raise ValueError(f"{what} is {got}; it must be a string or an integer")
    text = str(value)
    if not text.strip():
        raise ValueError(f"{what} is empty; it must be a string or an integer")
    return text


def _unix_nano(value: Any) -> datetime:
    """`startTimeUnixNano` (an integer, or OTLP JSON's decimal string) as a time in the years 1..9999."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e25:
        value = int(value)  # 1.7e18 as some exporters write it
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text.lstrip("-").isdigit() or len(text) > 25:
        raise ValueError(f"startTimeUnixNano {str(value)[:40]!r} is not a whole number of nanoseconds")
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(text) // 1000)
    except OverflowError:
        raise ValueError(f"startTimeUnixNano {text[:40]!r} is outside the years 1..9999") from None


def _attributes(attrs: Any) -> dict:
    """Phoenix's attribute dict (flat or nested) or OTLP's `[{key, value: {stringValue|intValue|…}}]`, flattened."""
    if isinstance(attrs, list):
        out = {}
        for a in attrs:
            if isinstance(a, dict) and isinstance(a.get("key"), str) and isinstance(a.get("value"), dict):
                out[a["key"]] = next(iter(a["value"].values()), None)
        return out
    return _flat(attrs) if isinstance(attrs, dict) else {}


def _flat(d: dict, prefix: str = "") -> dict:
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and name not in ("metadata",):
            out.update(_flat(v, name + "."))
        else:
            out[name] = v
    return out


def parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and value.strip():
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"timestamp {value[:40]!r} is not an ISO time") from None
    else:
        raise ValueError("'timestamp' is missing (an ISO time with a zone, e.g. 2026-03-01T12:00:00Z)")
    if when.tzinfo is None:
        raise ValueError(f"timestamp {str(value)[:40]!r} has no time zone; add one, e.g. Z")
    try:
        return when.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"timestamp {str(value)[:40]!r} is outside the years 1..9999 in UTC") from None


def _query(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("'query' (input.value for a span) must be a non-empty string")
    if len(value) > MAX_QUERY:
        raise ValueError(f"query longer than {MAX_QUERY} characters")
    return value


def _scope(value: Any) -> Scope | None:
    if value in (None, ""):
        return None
    if isinstance(value, dict):
        return Scope(str(value.get("scope")), str(value.get("scope_id")))
    if isinstance(value, str):
        return Scope.parse(value)
    raise ValueError(f"scope {str(value)[:40]!r} is not 'kind:id' or {{scope, scope_id}}")


def _number(value: Any, what: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {str(value)[:20]!r}")
    return float(value)


def _feedback(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if not -1 <= value <= 1:
            raise ValueError(f"feedback {value!r} must be in [-1, 1] (or up/down, or a map id -> grade 0..3)")
        return float(value)
    if isinstance(value, str):
        if value.lower() not in POSITIVE + NEGATIVE:
            raise ValueError(f"feedback {value[:20]!r} is not one of {', '.join(POSITIVE + NEGATIVE)}")
        return value.lower()
    if isinstance(value, dict):
        out = {}
        for k, g in list(value.items())[:MAX_RESULTS]:
            if not isinstance(k, str) or isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= 3:
                raise ValueError(f"feedback for {str(k)[:40]!r} must be a grade 0..3")
            out[k] = g
        return out
    raise ValueError(f"feedback {str(value)[:20]!r} is not usable")


def polarity(feedback: Any) -> int:
    """+1 for a positive thumbs value, −1 for a negative one, 0 for none or a per-trace map."""
    if isinstance(feedback, bool):
        return 1 if feedback else -1
    if isinstance(feedback, float):
        return 1 if feedback > 0 else -1 if feedback < 0 else 0
    if isinstance(feedback, str):
        return 1 if feedback in POSITIVE else -1
    return 0


def implicit_grades(q: LoggedQuery) -> dict[str, int]:
    """Grades implied by feedback: a map is taken as given; a positive answer grades the logged #1 as 2 and
    #2–#3 as 1 (what the agent put first helped most); a negative one grades the logged top 3 as 0."""
    if isinstance(q.feedback, dict):
        return dict(q.feedback)
    p = polarity(q.feedback)
    top = q.result_ids[:3]
    if p > 0:
        return {i: 2 if n == 0 else 1 for n, i in enumerate(top)}
    if p < 0:
        return dict.fromkeys(top, 0)
    return {}
