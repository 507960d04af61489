"""The access policy file: its format, parsed into `Policy` (used by `retrieval.access`).

Policy file (TOML, or the same shape as JSON), users by e-mail (case-insensitive):

    [users."alice@example.com"]
    scopes = ["user:alice"]        # "kind:id" labels, or "*" for every scope
    write = true                   # upload, delete, (de)activate, fact edits
    groups = ["viewers"]           # optional: also gets these groups' grants

    [groups.viewers]
    scopes = ["user:maya"]
    members = ["bob@example.com", "@example.com"]   # "@domain": anyone of exactly that domain; "*": anyone

A malformed file raises `PolicyError` naming what is wrong; nobody gets access then.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.types import Scope

ALL_SCOPES = "*"
MAX_POLICY_BYTES = 1 << 20
_USER_KEYS = {"scopes", "write", "groups"}
_GROUP_KEYS = {"scopes", "write", "members"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


class PolicyError(ValueError):
    """The access policy (or the access configuration) cannot be used; nobody gets access."""


@dataclass(frozen=True)
class Grant:
    scopes: frozenset[str] = frozenset()  # scope labels ("user:alice") or {"*"}
    write: bool = False


@dataclass(frozen=True)
class Policy:
    users: Mapping[str, Grant]
    groups: Mapping[str, Grant]
    user_groups: Mapping[str, tuple[str, ...]]  # user -> groups named in their entry
    members: Mapping[str, tuple[str, ...]]  # group -> members ("a@x.org", "@x.org", "*")


def parse_flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise PolicyError(f"{name} must be true or false, got {str(value)[:40]!r}")


def _scopes(where: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise PolicyError(f"{where}: scopes must be a list of strings like \"user:alice\" or \"*\"")
    out = set()
    for s in value:
        if s.strip() == ALL_SCOPES:
            out.add(ALL_SCOPES)
            continue
        try:
            out.add(str(Scope.parse(s)))
        except ValueError as exc:
            raise PolicyError(f"{where}: {exc}") from None
    return frozenset(out)


def _names(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
        raise PolicyError(f"{where} must be a list of non-empty strings")
    return tuple(s.strip().lower() for s in value)


def _entries(doc: Mapping, kind: str, keys: set[str]) -> dict[str, dict]:
    table = doc.get(kind, {})
    if not isinstance(table, Mapping):
        raise PolicyError(f"'{kind}' must be a table of entries")
    out = {}
    for name, entry in table.items():
        where = f"{kind[:-1]} {name!r}"
        if not isinstance(entry, Mapping):
            raise PolicyError(f"{where} must be a table with {', '.join(sorted(keys))}")
        extra = sorted(set(entry) - keys)
        if extra:
            raise PolicyError(f"{where}: unknown key(s) {', '.join(extra)}; allowed: {', '.join(sorted(keys))}")
        key = name.strip().lower()
        if not key or key in out:
            raise PolicyError(f"{where} is empty or listed twice")
        out[key] = dict(entry)
    return out


def parse_policy(doc: Mapping[str, Any]) -> Policy:
    """A decoded policy document → `Policy`; anything unexpected raises `PolicyError` naming it."""
    if not isinstance(doc, Mapping):
        raise PolicyError("the policy must be a table with 'users' and/or 'groups'")
    extra = sorted(set(doc) - {"users", "groups"})
    if extra:
        raise PolicyError(f"unknown top-level key(s) {', '.join(extra)}; a policy has 'users' and 'groups'")
    users, groups = _entries(doc, "users", _USER_KEYS), _entries(doc, "groups", _GROUP_KEYS)
    if not users and not groups:
        raise PolicyError("the policy names no users and no groups, so it grants nothing")

    def grant(where: str, e: dict) -> Grant:
        return Grant(_scopes(where, e.get("scopes", [])), parse_flag(f"{where}: write", e.get("write", False)))

    user_groups = {u: _names(f"user {u!r}: groups", e.get("groups", [])) for u, e in users.items()}
    for u, gs in user_groups.items():
        missing = [g for g in gs if g not in groups]
        if missing:
            raise PolicyError(f"user {u!r} names group(s) {', '.join(missing)} that the policy does not define")
    return Policy(users={u: grant(f"user {u!r}", e) for u, e in users.items()},
                  groups={g: grant(f"group {g!r}", e) for g, e in groups.items()}, user_groups=user_groups,
                  members={g: _names(f"group {g!r}: members", e.get("members", [])) for g, e in groups.items()})


def load_policy(path: str | Path) -> Policy:
    """Read a policy file: `.json` as JSON, anything else as TOML. Raises `PolicyError` (no access)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read the access policy {p.name}: {exc.strerror or exc}") from None
    if len(data) > MAX_POLICY_BYTES:
        raise PolicyError(f"the access policy {p.name} is over {MAX_POLICY_BYTES >> 20} MB")
    try:
        if p.suffix.lower() == ".json":
            doc = json.loads(data.decode("utf-8"))
        else:
            import tomllib

            doc = tomllib.loads(data.decode("utf-8"))
    except (ValueError, UnicodeError) as exc:
        raise PolicyError(f"the access policy {p.name} is not valid {'JSON' if p.suffix == '.json' else 'TOML'}: "
                          f"{exc}") from None
    return parse_policy(doc)
