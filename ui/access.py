"""The page guard: who the visitor is and what they may see or change.

Every page calls `page_guard()` right after `nav()`. Sign-in, chosen by config (`retrieval.access.load_config`):
- `none` (default without `[auth]` in secrets.toml): no sign-in; today's local behaviour;
- `oidc`: Streamlit's built-in `st.login` (the `[auth]` table of `.streamlit/secrets.toml`; needs Authlib);
  the provider must say `email_verified` unless `allow_unverified_email = true`;
- `proxy`: an identity header set by an authenticating proxy in front of the app (oauth2-proxy's
  `X-Forwarded-Email`). Only safe when the app is reachable through that proxy alone. Exactly one such
  header holding one ASCII address; anything else is refused.
The policy check itself lives in `retrieval.access`; this module only reads the request and renders.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from retrieval.access import (NOT_SIGNED_IN, Access, AccessConfig, AccessDenied, PolicyError, load_config, load_policy,
                              may_write, oidc_user, resolve)
from retrieval.judgments.store import may_grade
from retrieval.workspace.audit import AuditEntry

from .text import plain


def _secrets() -> tuple[dict, bool]:
    """The `[access]` table of secrets.toml and whether `[auth]` (OIDC) is configured."""
    try:
        return (dict(st.secrets["access"]) if "access" in st.secrets else {}), "auth" in st.secrets
    except FileNotFoundError:  # no secrets.toml: the usual local case
        return {}, False
    except Exception as exc:  # an unreadable secrets file must not mean "no sign-in configured"
        raise PolicyError(f"cannot read .streamlit/secrets.toml: {exc}") from None


def access_config() -> AccessConfig:
    """Mode, sign-in and policy path: environment over the `[access]` table of secrets.toml."""
    section, oidc = _secrets()
    return load_config(os.environ, {**section, "oidc_configured": oidc})


@st.cache_resource(max_entries=4, show_spinner=False)
def _policy(path: str, mtime_ns: int):  # noqa: ARG001 (a cache key: a changed file is re-read)
    return load_policy(path)


def request_headers() -> Mapping[str, str]:
    """The HTTP headers of this session's request (the proxy's identity header among them): Streamlit's
    own object, whose `get_all` shows a header sent more than once."""
    try:
        return st.context.headers
    except Exception:
        return {}


def header_values(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of header `name` (case-insensitive): `get_all` where the object has it (Streamlit's
    headers), else each key that matches."""
    get_all = getattr(headers, "get_all", None)
    if callable(get_all):
        return [str(v) for v in get_all(name)]
    return [str(v) for k, v in headers.items() if str(k).lower() == name.lower()]


def header_user(headers: Mapping[str, str], name: str) -> str | None:
    """The identity the proxy's header `name` carries; None when it is absent or empty (not signed in).
    `AccessDenied` for the header sent twice: which copy the proxy set cannot be told. The value itself is
    checked by `retrieval.access.canonical_user` (one ASCII address, no list)."""
    values = [v.strip() for v in header_values(headers, name)]
    if len(values) > 1:
        raise AccessDenied(f"the request carries the {name} header {len(values)} times; exactly one is accepted")
    return (values[0] if values else "") or None


def _identity(cfg: AccessConfig) -> str | None:
    if cfg.auth == "oidc":
        return oidc_user(st.user, cfg.allow_unverified_email) if st.user.is_logged_in else None
    if cfg.auth == "proxy":
        return header_user(request_headers(), cfg.header)
    return None


def session_access() -> Access:
    """Who this visitor is and what they may see or do; renders nothing. Any configuration or policy
    problem is an `Access` with `denied` set — no access, never full access."""
    try:
        cfg = access_config()
        user = _identity(cfg)
        policy = None
        if cfg.auth != "none" and cfg.policy:
            p = Path(cfg.policy)
            policy = _policy(str(p), p.stat().st_mtime_ns if p.is_file() else 0)
    except AccessDenied as exc:  # an untrustworthy identity: no access (caught before OSError, its base class)
        return Access(user="", scopes=frozenset(), read_only=cfg.read_only, denied=str(exc))
    except (PolicyError, OSError) as exc:
        return Access(user="", scopes=frozenset(), denied=f"the access configuration is unusable: {exc}")
    return resolve(cfg, user, policy)


def _sign_in(cfg: AccessConfig) -> None:
    st.title("Sign in")
    if cfg.auth == "oidc":
        from streamlit.user_info import is_authlib_installed

        if not is_authlib_installed():
            st.error("Sign-in is configured but Authlib is not installed: `pip install Authlib`.")
            return
        st.caption("This inspector is shared: sign in to see the scopes you have access to.")
        st.button("Sign in", key="access_login", type="primary", on_click=st.login)
    else:
        st.error(f"Not signed in: this app expects an authenticating proxy in front of it to set the "
                 f"`{cfg.header}` header. Open it through the proxy's address.")


def page_guard(home: bool = False) -> Access:
    """Sign-in or a clear refusal (then `st.stop()`), else the visitor's `Access`; says so in the
    sidebar when the app is read-only, and on Home (`home=True`) in the page."""
    acc = session_access()
    try:
        cfg = access_config()
    except PolicyError:
        cfg = AccessConfig(auth="proxy")
    if acc.denied:
        if acc.denied == NOT_SIGNED_IN:
            _sign_in(cfg)
        else:
            st.error(f"No access: {plain(acc.denied)}.")  # quotes what the visitor sent
            if cfg.auth == "oidc" and st.user.is_logged_in:
                st.button("Sign out", key="access_logout", on_click=st.logout)
        st.stop()
    if acc.read_only:
        from .cache import workspace

        workspace().demo_mode = True  # mode from secrets.toml rather than the env: the write paths refuse too
    with st.sidebar:
        if cfg.auth != "none":
            seen = "every scope" if acc.scopes is None else ", ".join(sorted(acc.scopes)) or "no scope"
            st.caption(f"Signed in as **{plain(acc.user)}** · sees {plain(seen)}"
                       + ("" if may_write(acc) else " · read-only"))
            if cfg.auth == "oidc":
                st.button("Sign out", key="access_logout", on_click=st.logout)
        if acc.read_only:
            st.caption(":material/lock: Read-only demo: loading and deleting are off.")
    if home and acc.read_only:
        grading = ("grading, query notes and cases stay on (the operator allows grading)" if may_grade(acc) else
                   "so are grades, query notes and cases")
        st.info("This app is **read-only** (demo mode): query, explain, compare and tune as usual; uploading, "
                f"deleting traces and running snapshots are off; {grading}.")
    return acc


def audit_rows(entries: list[AuditEntry]) -> list[dict]:
    """Audit entries as table rows ("—" for nothing recorded)."""
    return [{"when (UTC)": e.at.strftime("%Y-%m-%d %H:%M:%S"), "who": e.actor, "what": e.action,
             "traces": e.traces, "scopes": ", ".join(e.scopes) or "—",
             "ids": ", ".join(e.ids) + (" …" if e.traces > len(e.ids) else "") if e.ids else "—"} for e in entries]
