"""The one write gate: every write the CLI runs passes `write_gate` before it starts, and `audit_command`
records who ran it afterwards (`retrieval.cli.gate` calls both from `main()` for every command its table
marks as a write, so a new write command cannot forget them).

`write_gate` checks, in this order, and refuses with `ReadOnlyError` / `AccessDenied` (nothing written):
1. demo mode: `RETRIEVAL_MODE=demo` (or any mode but `normal`: a typo reads as demo) refuses every write;
2. the visitor's access: denied (not signed in, not in the policy), read-only, or no write grant;
3. identity: a signed-in writer is one plain e-mail address (`retrieval.access.canonical_user`);
4. reach: a write that rewrites every scope (re-embed, analyser, tags, calibration …) needs a writer
   allowed every scope; a scoped write (an upload, grades) passes the access down and is checked per
   scope by the Workspace / judgments store it reaches.
`access=None` is the local operator (no sign-in configured): allowed outside demo mode, audited as `local`.
"""
from __future__ import annotations

from collections.abc import Mapping

from retrieval.access import LOCAL_USER, Access, AccessDenied, ReadOnlyError, canonical_user, demo_mode_from_env

DEMO_REFUSAL = ("the store runs read-only (demo mode: RETRIEVAL_MODE is set, not normal); unset RETRIEVAL_MODE "
                "to {action}")


def write_gate(action: str, access: Access | None, *, store_wide: bool = False,
               env: Mapping[str, str] | None = None) -> str:
    """The actor the audit names for `action`, or `ReadOnlyError` / `AccessDenied` saying why not."""
    if demo_mode_from_env(env) or (access is not None and access.read_only):
        raise ReadOnlyError(f"nothing was written: {DEMO_REFUSAL.format(action=action)}")
    if access is None:
        return LOCAL_USER
    if access.denied:
        raise AccessDenied(f"nothing was written: {access.denied}")
    if not access.write:
        raise ReadOnlyError(f"nothing was written: {access.user} may read but not change this store "
                            f"({action}); ask the operator for a write grant")
    user = access.user if access.user == LOCAL_USER else canonical_user(access.user)
    if store_wide and access.scopes is not None:
        raise AccessDenied(f"nothing was written: {action} changes every scope of the store, and {user} may "
                           "write only some of them; ask a writer with every scope")
    return user


def audit_command(uri: str, actor: str, command: str, detail: str = "", storage_options=None) -> None:
    """One audit row naming who ran a write command (the rows a Workspace or judgments write records stay as
    they are; this one says which command, by whom). Never raises (`AuditLog.record`)."""
    from retrieval.workspace.audit import AuditLog

    AuditLog(uri, storage_options=storage_options).record(actor, "command", 0, detail=f"{command} {detail}".strip())
