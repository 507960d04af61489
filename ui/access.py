"""The page guard (issue #17): who the visitor is and what they may see or change.

Every page calls `page_guard()` right after `nav()`. Sign-in, chosen by config (`retrieval.access.load_config`):
- `none` (default without `[auth]` in secrets.toml): no sign-in; today's local behaviour;
- `oidc`: Streamlit's built-in `st.login` (the `[auth]` table of `.streamlit/secrets.toml`; needs Authlib);
- `proxy`: an identity header set by an authenticating proxy in front of the app (oauth2-proxy's
  `X-Forwarded-Email`). Only safe when the app is reachable through that proxy alone.
The policy check itself lives in `retrieval.access`; this module only reads the request and renders.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from retrieval.access import NOT_SIGNED_IN, Access, AccessConfig, PolicyError, load_config, load_policy, resolve
from retrieval.workspace.audit import AuditEntry


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


def request_headers() -> dict[str, str]:
    """The HTTP headers of this session's request (the proxy's identity header among them)."""
    try:
        return dict(st.context.headers)
    except Exception:
        return {}


def _identity(cfg: AccessConfig) -> str | None:
    if cfg.auth == "oidc":
        return (st.user.get("email") or None) if st.user.is_logged_in else None
    if cfg.auth == "proxy":
        headers = {k.lower(): v for k, v in request_headers().items()}
        return (headers.get(cfg.header.lower()) or "").strip() or None
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
            st.error(f"No access: {acc.denied}.")
            if cfg.auth == "oidc" and st.user.is_logged_in:
                st.button("Sign out", key="access_logout", on_click=st.logout)
        st.stop()
    if acc.read_only:
        from .cache import workspace

        workspace().demo_mode = True  # mode from secrets.toml rather than the env: the write paths refuse too
    with st.sidebar:
        if cfg.auth != "none":
            seen = "every scope" if acc.scopes is None else ", ".join(sorted(acc.scopes)) or "no scope"
            st.caption(f"Signed in as **{acc.user}** · sees {seen}" + ("" if acc.write else " · read-only"))
            if cfg.auth == "oidc":
                st.button("Sign out", key="access_logout", on_click=st.logout)
        if acc.read_only:
            st.caption("🔒 Read-only demo: loading, deleting and editing are off.")
    if home and acc.read_only:
        st.info("This app is **read-only** (demo mode): query, explain, compare and tune as usual; uploading, "
                "deleting, deactivating, re-embedding and fact edits are off.")
    return acc


def audit_rows(entries: list[AuditEntry]) -> list[dict]:
    """Audit entries as table rows ("—" for nothing recorded)."""
    return [{"when (UTC)": e.at.strftime("%Y-%m-%d %H:%M:%S"), "who": e.actor, "what": e.action,
             "traces": e.traces, "scopes": ", ".join(e.scopes) or "—",
             "ids": ", ".join(e.ids) + (" …" if e.traces > len(e.ids) else "") if e.ids else "—"} for e in entries]
