"""Who may see which scopes and who may change anything: the one access check.

Pure functions over a parsed `Policy` and an `AccessConfig`; every page reaches them through
`ui.access`. Failure is closed: a malformed policy raises `PolicyError`, an unknown user
`AccessDenied` — never a fallback to full access.

The policy file's format and parsing live in `retrieval.policy` (re-exported here).

Grants add up: a user sees the union of their own and their groups' scopes and may write when any
grant says so. Read-only (demo) mode refuses every write whatever the policy says.
"""
from __future__ import annotations

import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from retrieval.policy import (ALL_SCOPES, Grant, Policy, PolicyError, load_policy, parse_flag,  # noqa: F401 (re-exported)
                              parse_policy)
from retrieval.types import Scope

MODES = ("normal", "demo")  # demo: read-only
AUTHS = ("none", "oidc", "proxy")  # none: no sign-in (local use); oidc: st.login; proxy: an identity header
LOCAL_USER = "local"
NOT_SIGNED_IN = "not signed in"
DEFAULT_HEADER = "X-Forwarded-Email"
ENV = {"mode": "RETRIEVAL_MODE", "allow_grading": "RETRIEVAL_ALLOW_GRADING", "auth": "RETRIEVAL_AUTH",
       "header": "RETRIEVAL_AUTH_HEADER", "policy": "RETRIEVAL_POLICY",
       "allow_unverified_email": "RETRIEVAL_ALLOW_UNVERIFIED_EMAIL"}
# One e-mail address as sign-in sends it: printable ASCII without space or list separator, one "@", a domain.
_ADDRESS = re.compile(r"[^\x00-\x20\x7f@,;<>()\[\]\\\":]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*")


class AccessDenied(PermissionError):
    """This visitor may not see that (unknown user, scope outside their grant)."""


class ReadOnlyError(PermissionError):
    """A write was attempted while the app runs read-only (demo mode) or by a user without write."""


@dataclass(frozen=True)
class AccessConfig:
    """How the app is served: mode, sign-in, policy file. Env vars win over the config section."""
    mode: str = "normal"
    allow_grading: bool = False  # in demo mode: may visitors grade (judgments)? Outside demo: write decides
    auth: str = "none"
    header: str = DEFAULT_HEADER
    policy: str | None = None  # path of the policy file
    allow_unverified_email: bool = False  # oidc: also accept an e-mail the identity provider has not verified

    @property
    def read_only(self) -> bool:
        return self.mode == "demo"


@dataclass(frozen=True)
class Access:
    """What one visitor may do. `scopes is None` means every scope; `denied` says why nothing at all."""
    user: str
    scopes: frozenset[str] | None = None
    write: bool = False
    grade: bool = False
    read_only: bool = False
    denied: str | None = None

    @property
    def limited(self) -> bool:
        """Only some scopes: the pipeline searches one scope, so "all scopes" is not offered."""
        return self.scopes is not None

    def sees(self, scope: Scope | str | None) -> bool:
        if self.denied:
            return False
        if scope is None:  # every scope
            return self.scopes is None
        return self.scopes is None or str(scope) in self.scopes


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in allowed:
        raise PolicyError(f"{name} is {str(value)[:40]!r}; use one of {', '.join(allowed)}")
    return text


def load_config(env: Mapping[str, str] | None = None, section: Mapping[str, Any] | None = None) -> AccessConfig:
    """`AccessConfig` from the environment (`RETRIEVAL_MODE`, `RETRIEVAL_ALLOW_GRADING`, `RETRIEVAL_AUTH`,
    `RETRIEVAL_AUTH_HEADER`, `RETRIEVAL_POLICY`, `RETRIEVAL_ALLOW_UNVERIFIED_EMAIL`) over a config section (keys
    `mode`, `allow_grading`, `auth`, `header`, `policy`, `allow_unverified_email`: the `[access]` table of
    `.streamlit/secrets.toml`). A bad value raises `PolicyError` naming it. `auth` defaults to "oidc" when
    `oidc_configured`, else "none"."""
    env = os.environ if env is None else env
    section = dict(section or {})
    unknown = sorted(set(section) - set(ENV) - {"oidc_configured"})
    if unknown:
        raise PolicyError(f"unknown access setting(s) {', '.join(unknown)}; known: {', '.join(ENV)}")
    raw = {k: section[k] for k in ENV if k in section}
    raw.update({k: env[v] for k, v in ENV.items() if env.get(v, "").strip()})
    auth_default = "oidc" if section.get("oidc_configured") else "none"
    header = str(raw.get("header", DEFAULT_HEADER)).strip()
    if not header or not all(c.isalnum() or c == "-" for c in header):
        raise PolicyError(f"header {header[:40]!r} is not an HTTP header name")
    cfg = AccessConfig(mode=_choice("mode", raw.get("mode", "normal"), MODES),
                       allow_grading=parse_flag("allow_grading", raw.get("allow_grading", False)),
                       auth=_choice("auth", raw.get("auth", auth_default), AUTHS), header=header,
                       policy=(str(raw["policy"]).strip() or None) if "policy" in raw else None,
                       allow_unverified_email=parse_flag("allow_unverified_email",
                                                         raw.get("allow_unverified_email", False)))
    if cfg.policy and cfg.auth == "none":  # a policy nobody is checked against would grant everyone everything
        raise PolicyError("an access policy is set but no sign-in: set auth (RETRIEVAL_AUTH) to oidc or proxy")
    return cfg


def demo_mode_from_env(env: Mapping[str, str] | None = None) -> bool:
    """True when `RETRIEVAL_MODE=demo`: the Workspace then refuses every write. An unknown mode
    counts as demo (refusing writes is the safe reading of a typo)."""
    value = (os.environ if env is None else env).get(ENV["mode"], "").strip().lower()
    return bool(value) and value != "normal"


def canonical_user(value: str | None) -> str:
    """The one e-mail address `value` holds, lower-cased, else `AccessDenied`. ASCII as sent: a value whose
    NFKC form is not pure ASCII, or is not the value itself, is refused, never folded (`str.lower` maps the
    Kelvin sign U+212A to "k"); a list (commas, semicolons, spaces) or a second "@" is refused."""
    text = (value or "").strip()
    if not text:
        raise AccessDenied("no user: sign in first")
    low = text.lower()
    if not (text.isascii() and unicodedata.normalize("NFKC", text) == text) or not _ADDRESS.fullmatch(low):
        raise AccessDenied(f"the sign-in identity {ascii(text[:80])} is not one plain e-mail address")
    return low


def _member(user: str, members: Iterable[str]) -> bool:
    domain = "@" + user.rpartition("@")[2]  # a grant "@x.org" is the whole domain after the @, not a suffix
    return any(m == "*" or m == user or (m.startswith("@") and m == domain) for m in members)


def oidc_user(claims: Mapping[str, Any], allow_unverified: bool = False) -> str | None:
    """The e-mail of an OIDC sign-in (`st.user`), None without one; `AccessDenied` unless the provider says
    `email_verified` (true, or "true" as some send it): anyone may register an unverified address at an open
    provider. `allow_unverified` (`allow_unverified_email`) is the operator's explicit opt-out."""
    email = claims.get("email") or None
    verified = claims.get("email_verified")
    if email and not allow_unverified and not (verified is True or str(verified).lower() == "true"):
        raise AccessDenied(f"the identity provider has not verified {ascii(str(email)[:80])}; sign in with a "
                           "verified e-mail address")
    return email


def _grants(policy: Policy, user: str) -> list[Grant]:
    u = canonical_user(user)
    names = set(policy.user_groups.get(u, ())) | {g for g, ms in policy.members.items() if _member(u, ms)}
    grants = ([policy.users[u]] if u in policy.users else []) + [policy.groups[g] for g in sorted(names)]
    if not grants:
        raise AccessDenied(f"{u} is not in the access policy; ask the operator to add you")
    return grants


def allowed_scopes(policy: Policy, user: str) -> frozenset[str] | None:
    """The scope labels `user` may see; None means every scope. Unknown user: `AccessDenied`."""
    scopes = frozenset().union(*(g.scopes for g in _grants(policy, user)))
    return None if ALL_SCOPES in scopes else scopes


def can_write(policy: Policy, user: str) -> bool:
    """May `user` upload, delete, (de)activate or edit facts (outside demo mode)? Unknown: `AccessDenied`."""
    return any(g.write for g in _grants(policy, user))


def check_scope(policy: Policy, user: str, scope: Scope | str | None) -> None:
    """Raise `AccessDenied` unless `user` may see `scope` (None = all scopes: only for a "*" grant)."""
    allowed = allowed_scopes(policy, user)
    if allowed is None:
        return
    if scope is None:
        raise AccessDenied(f"{user} may see only {', '.join(sorted(allowed)) or 'no scope'}, not all scopes")
    if str(scope) not in allowed:
        raise AccessDenied(f"scope {scope} is not visible to {user}")


def resolve(config: AccessConfig, user: str | None, policy: Policy | None) -> Access:
    """One visitor's `Access`. No sign-in configured: today's local behaviour (every scope; writes
    unless read-only). Signed in: the policy decides; no policy, unknown user or no user: denied."""
    def denied(why: str) -> Access:
        return Access(user=user or "", scopes=frozenset(), read_only=config.read_only, denied=why)

    if config.auth == "none":
        return Access(LOCAL_USER, None, write=not config.read_only, grade=config.allow_grading or not config.read_only,
                      read_only=config.read_only)
    if not user:
        return denied(NOT_SIGNED_IN)
    if policy is None:
        return denied("sign-in is configured but no access policy is (set RETRIEVAL_POLICY); nobody has access")
    try:
        name = canonical_user(user)
        scopes, write = allowed_scopes(policy, name), can_write(policy, name)
    except AccessDenied as exc:
        return denied(str(exc))
    grade = config.allow_grading if config.read_only else write
    return Access(name, scopes, write=write and not config.read_only, grade=grade,
                  read_only=config.read_only)


def query_scope(access: Access, scope: Scope | None) -> Scope | None:
    """The scope a query may search for this visitor: `scope` itself, or `AccessDenied`
    (a scope outside the grant, or "all scopes" for a visitor limited to some)."""
    if access.denied:
        raise AccessDenied(access.denied)
    if not access.sees(scope):
        if scope is None:
            raise AccessDenied("searching all scopes is not available to you: pick one of your scopes")
        raise AccessDenied(f"scope {scope} is not visible to {access.user}")
    return scope


def visible(access: Access, scopes: Iterable[Scope | str]) -> list:
    """The members of `scopes` this visitor may see, in order."""
    return [s for s in scopes if access.sees(s)]


def may_write(access: Access | None) -> bool:
    """The one rule for a write (a store change, a snapshot run, machine grading, a log import): not denied, write
    access, not read-only (demo mode). `None` is local use: allowed."""
    return access is None or (not access.denied and access.write and not access.read_only)


def require_write(access: Access | None, done: str = "written") -> None:
    """`ReadOnlyError` ("nothing was `done`: why") unless `may_write(access)`."""
    if access is not None and not may_write(access):
        why = access.denied or ("the app runs read-only (demo mode)" if access.read_only
                                else f"{access.user} may not change the store")
        raise ReadOnlyError(f"nothing was {done}: {why}")


def check_write(access: Access, scopes: Iterable[Scope | str]) -> None:
    """Raise `ReadOnlyError` unless this visitor may write, and `AccessDenied` if the write would
    touch a scope they may not see (an upload whose lines name another user's scope)."""
    require_write(access)
    hidden = sorted({str(s) for s in scopes if not access.sees(s)})
    if hidden:
        raise AccessDenied(f"nothing was written: scope(s) {', '.join(hidden)} are not yours to write to")


def known_ids(store: Any, access: Access | None) -> Callable[[Iterable[str]], set[str]]:
    """An import's id check as `access` may make it: which of the ids are traces of `store` in a scope the visitor
    sees. A trace in another scope is "not in the store", as an id nothing has (the skipped-ids list is no
    existence oracle). The one check every import uses: `case import`, `judge import`, Judge's and Snapshots'."""
    def known(ids: Iterable[str]) -> set[str]:
        return {t.id for t in store.get(list(ids)) if access is None or access.sees(t.scope_key)}

    return known


def for_visitor(status: dict[str, Any], access: Access | None, store: Any, facts: Any) -> dict[str, Any]:
    """`status` (`status_of`, or `status --as-of`'s) as `access` may read it: for a visitor limited to some scopes,
    only their scopes' names and counts, and every total counted over those scopes — no store-wide number (the
    Home page and `python -m retrieval status` both show this). `store` and `facts` are the state `status`
    describes (the live store, or the version read)."""
    if access is None or not access.limited:
        return status
    mine = [s for s in store.scope_counts() if access.sees(s)]
    out = dict(status)
    out["scopes"] = {str(s): store.count(s) for s in mine}
    out["traces"] = sum(out["scopes"].values())
    active = sum(store.count(s, active_only=True) for s in mine)
    out["bm25_documents"] = active  # BM25 holds the active traces
    if "active" in out:
        out["active"] = active
    out["facts"] = _facts_in(facts, mine)
    if "unindexed_rows" in out:
        out["unindexed_rows"] = 0  # a count over the whole store
    if "facts_pending" in out:
        out["facts_pending"] = None  # counted over the whole store (by content hash, not by scope): not theirs
    return out


def _facts_in(facts: Any, scopes: list) -> int:
    """Facts in these scopes (0 when there is no fact table or it cannot be read)."""
    if facts is None:
        return 0
    try:
        return sum(len(facts.all(s)) for s in scopes)
    except Exception as exc:  # like status_of: the report renders even when the fact table is unreadable
        logging.getLogger(__name__).warning("fact count failed: %s", exc)
        return 0
