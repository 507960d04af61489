"""A table's history: its versions, its tags, what an `as_of` names, and clean-up that keeps tags (SPEC §16).

LanceDB commits every write as a new table version. `as_of` names one: an int version, a tag name, or an
aware datetime (the newest version committed at or before it). LanceDB reports commit times as naive
local times; they are made aware here, once.

Retention: `Table.optimize()` also prunes versions older than `cleanup_older_than` (LanceDB's default:
7 days), and a version it prunes can no longer be read as of. LanceDB keeps a tagged version but raises
when the cut-off falls after one; `optimize` below moves the cut-off before the oldest tagged version, so
the project never cleans up a tagged version and an optimize never fails because of a tag.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_KEEP = timedelta(days=7)  # LanceDB's own default for cleanup_older_than
# Tags are plain names: a tag never looks like a version number or a time, so `--as-of` reads unambiguously.
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")


@dataclass(frozen=True)
class Pinned:
    """One table version an as-of read is pinned to, and what named it."""

    version: int
    timestamp: datetime  # when that version was committed (aware, UTC)
    latest: bool  # it is the newest version now
    tag: str | None = None  # the tag named, or one that points at this version
    until: datetime | None = None  # when the next version was committed (None: still the newest)

    @property
    def label(self) -> str:
        tag = f" (tag {self.tag})" if self.tag else ""
        return f"version {self.version}{tag}, committed {self.timestamp.isoformat(timespec='seconds')}"


def aware(ts: datetime) -> datetime:
    """A LanceDB commit time (naive local time) as an aware UTC datetime."""
    return (ts if ts.tzinfo is not None else ts.astimezone()).astimezone(UTC)


def list_versions(tbl: Any) -> list[tuple[int, datetime]]:
    """(version, commit time) of every version still stored, oldest first."""
    return sorted((int(v["version"]), aware(v["timestamp"])) for v in tbl.list_versions())


def list_tags(tbl: Any) -> dict[str, int]:
    """Tag name → version."""
    return {str(k): int(v["version"]) for k, v in sorted(tbl.tags.list().items())}


RESERVED_TAGS = ("latest",)  # `--as-of latest` means the newest version: a tag of that name could never be read


def check_tag_name(name: str) -> str:
    """`name` if it may name a tag, else a ValueError saying why: the project's pattern, LanceDB's own rules
    (no '..', no '.' or '.lock' at the end) and no reserved word."""
    if not isinstance(name, str) or not _TAG.fullmatch(name):
        raise ValueError(f"tag name {ascii(str(name)[:80])} is not allowed: start with a letter or '_', then "
                         "letters, digits, '_', '-' or '.', at most 100 characters")
    if ".." in name or name.endswith(".") or name.lower().endswith(".lock"):
        raise ValueError(f"tag name {name!r} is not allowed: no '..' inside and no '.' or '.lock' at the end "
                         "(LanceDB refuses them); e.g. release-1.0")
    if name.lower() in RESERVED_TAGS:
        raise ValueError(f"tag name {name!r} is reserved: --as-of {name} means the newest version, so a tag of "
                         "that name could never be read; choose another name")
    return name


def create_tag(tbl: Any, name: str, version: int | None = None) -> int:
    """Tag `version` (default: the newest) as `name`; returns the version. An existing tag is a ValueError."""
    check_tag_name(name)
    versions = dict(list_versions(tbl))
    v = max(versions) if version is None else version
    if isinstance(v, bool) or not isinstance(v, int) or v not in versions:
        raise ValueError(f"version {version!r} does not exist; stored versions: {_span(versions)}")
    if name in list_tags(tbl):
        raise ValueError(f"tag {name!r} already exists (version {list_tags(tbl)[name]}); "
                         "choose another name or delete it first")
    tbl.tags.create(name, v)
    return v


def parse_as_of(text: str | None) -> int | str | datetime | None:
    """What a user typed (CLI, URL) as an `as_of`: '' or 'latest' → None, digits → version, an ISO time
    with a zone → datetime, else a tag name. A time without a zone is a ValueError (never guessed)."""
    text = (text or "").strip()
    if text.lower() in ("", "latest"):
        return None
    if text.isdigit():
        return int(text)
    if re.match(r"\d{4}-\d{2}-\d{2}", text):
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"as of {text[:60]!r} is not an ISO time: {exc}") from None
        if when.tzinfo is None:
            raise ValueError(f"as of {text[:60]!r} has no time zone; add one, e.g. {text[:19]}Z or +02:00")
        return when
    return check_tag_name(text)


def resolve(tbl: Any, as_of: int | str | datetime) -> Pinned:
    """The version `as_of` names in `tbl`: ValueError for an unknown version or tag, a naive datetime,
    or a time before the first stored version."""
    versions = list_versions(tbl)
    if not versions:
        raise ValueError("the table has no versions yet")
    times = dict(versions)
    tags = list_tags(tbl)
    tag = None
    if isinstance(as_of, bool):
        raise ValueError(f"as_of must be a version, a tag or an aware datetime, got {as_of!r}")
    if isinstance(as_of, int):
        if as_of not in times:
            raise ValueError(f"version {as_of} does not exist (stored versions: {_span(times)}); "
                             "older versions may have been cleaned up by optimize")
        v = as_of
    elif isinstance(as_of, str):
        if as_of not in tags:
            raise ValueError(f"no tag {as_of[:80]!r}; tags: {', '.join(tags) or 'none'}")
        v, tag = tags[as_of], as_of
        if v not in times:
            raise ValueError(f"tag {as_of!r} points at version {v}, which is no longer stored")
    elif isinstance(as_of, datetime):
        if as_of.tzinfo is None:
            raise ValueError(f"as_of {as_of.isoformat()} has no time zone; pass an aware datetime")
        older = [ver for ver, ts in versions if ts <= as_of]
        if not older:
            raise ValueError(f"{moment(as_of)} is before the first stored version "
                             f"(version {versions[0][0]}, committed {moment(versions[0][1])})")
        v = older[-1]
    else:
        raise ValueError(f"as_of must be a version (int), a tag (str) or an aware datetime, got {type(as_of).__name__}")
    later = [ts for ver, ts in versions if ver > v]
    tag = tag or next((name for name, tv in tags.items() if tv == v), None)
    return Pinned(v, times[v], v == versions[-1][0], tag, later[0] if later else None)


def optimize(tbl: Any, keep: timedelta = DEFAULT_KEEP) -> None:
    """`tbl.optimize()` (compact, prune versions older than `keep`, fold new rows into indices) that never
    prunes a tagged version: the cut-off moves to just after the oldest tagged version."""
    tagged = set(list_tags(tbl).values())
    when = [ts for v, ts in list_versions(tbl) if v in tagged]
    if when:  # prune only what is older than every tagged version
        keep = max(keep, datetime.now(UTC) - min(when) + timedelta(seconds=1))
    tbl.optimize(cleanup_older_than=keep)


def moment(when: datetime) -> str:
    """A time as every message and page writes it: "2026-11-01 10:01:00 UTC" (an aware time, shown in UTC)."""
    return f"{when.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _span(versions: Any) -> str:
    vs = sorted(versions)
    return f"{vs[0]}–{vs[-1]}" if vs else "none"

