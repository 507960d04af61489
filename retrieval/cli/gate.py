"""The CLI's command table and its one gate: which commands write, who runs them, and how a failure is told.

`COMMANDS` classifies every command (`case import`, `tag` …) as a read or a write; `main()` refuses to run a
command missing from it, and `tests/test_cli_gate.py` walks `build_parser()` so a new command fails a test until
it is classified. For a write, `admit` calls the one write gate (`retrieval.workspace.gate.write_gate`) before the
command runs: demo mode, the visitor's access and identity. `failure_line` turns an expected failure into the
one `error: …` line (credentials scrubbed).

Who runs the CLI: with no sign-in configured (`RETRIEVAL_AUTH` unset or `none`) the local operator, unrestricted.
With sign-in configured (`RETRIEVAL_AUTH=proxy|oidc` and `RETRIEVAL_POLICY`), the CLI is a visitor like any
other: `RETRIEVAL_USER` names them (the e-mail address the policy knows) and the policy decides — a read-only
grant or an unknown user is refused every write, a writer limited to some scopes may run only the writes that
check each scope (`scoped`).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from retrieval.access import ENV, Access, AccessDenied, load_config, load_policy, resolve
from retrieval.judgments.store import JudgmentStore
from retrieval.judgments.visible import lens
from retrieval.store.remote import redact_text
from retrieval.workspace.gate import audit_command, write_gate

USER_ENV = "RETRIEVAL_USER"  # the CLI's sign-in when RETRIEVAL_AUTH is configured
TRACEBACK_ENV = "RETRIEVAL_TRACEBACK"  # =1: an unexpected exception is raised (tests; debugging), not one line


@dataclass(frozen=True)
class Kind:
    """What a command does to the store. `writes`: True, or a test of its arguments (`tag --list` reads);
    `scoped`: it passes the visitor's access down, so a writer limited to some scopes may run it;
    `whole`: a read that reports on the whole store (every scope's rows), refused a visitor limited to some scopes."""
    writes: bool | Callable[[argparse.Namespace], bool]
    scoped: bool = False
    whole: bool = False

    def write(self, args: argparse.Namespace) -> bool:
        return bool(self.writes(args) if callable(self.writes) else self.writes)


READ = Kind(False)
WRITE = Kind(True)
SCOPED_WRITE = Kind(True, scoped=True)

COMMANDS: dict[str, Kind] = {
    "ingest": SCOPED_WRITE, "query": READ, "build-demo": WRITE, "status": READ,
    "eval": READ,  # writes only its own dataset cache under --cache-dir, never a store
    "case import": SCOPED_WRITE, "case list": READ, "case export": READ,  # export: files under --out
    "snapshot run": SCOPED_WRITE, "snapshot list": READ, "snapshot diff": READ, "snapshot grade": SCOPED_WRITE,
    "judge export": READ, "judge import": SCOPED_WRITE, "judge agreement": READ, "judge policy": SCOPED_WRITE,
    "calibrate": Kind(lambda a: a.undo or not a.dry_run, whole=True),  # pseudo-queries from every scope
    "adapt": Kind(lambda a: a.undo or (bool(a.case) and not a.dry_run)),  # --dataset: a report
    "reembed": WRITE, "analyzer": WRITE, "statistics": WRITE, "context": WRITE,
    "tag": Kind(lambda a: bool(a.name) and not a.list),
    "diff-versions": READ, "import-log": SCOPED_WRITE,
    # doctor: a report; --repair rewrites derived state and removes duplicate rows
    "doctor": Kind(lambda a: a.repair, whole=True),
}


class GateParser(argparse.ArgumentParser):
    """A usage error is one `error:` line on stderr and exit code 2 (argparse prints the usage first)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {redact_text(message)} (see `{self.prog} --help`)\n")


def leaves(parser: argparse.ArgumentParser,
           prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """("case import", its parser) for every command and sub-command, walked from the parser itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sp in action.choices.items():
                yield from leaves(sp, (*prefix, name))
            return
    if prefix:
        yield " ".join(prefix), parser


def stamp(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Every command's parser records its own name (`args.command`), for the gate."""
    for name, sp in leaves(parser):
        sp.set_defaults(command=name)
    return parser


def visitor(env: Mapping[str, str] | None = None) -> Access | None:
    """Who runs this command: None for the local operator (no sign-in configured), else the `Access` the policy
    gives `RETRIEVAL_USER` (denied when unset or unknown). A bad setting raises `PolicyError`."""
    env = os.environ if env is None else env
    cfg = load_config(env)
    if cfg.auth == "none":
        return None
    user = env.get(USER_ENV, "").strip() or None
    access = resolve(cfg, user, load_policy(cfg.policy) if cfg.policy else None)
    if access.denied and not user:
        return Access("", frozenset(), denied=f"sign-in is configured (RETRIEVAL_AUTH={cfg.auth}): set {USER_ENV} "
                                               "to the e-mail address the access policy knows you by")
    return access


def admit(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Access | None:
    """The gate every command passes before it runs: a write goes through `write_gate`; a read by a visitor the
    policy denies is refused too, and a whole-store read (`Kind.whole`) by a visitor limited to some scopes. What a
    limited visitor's read shows is theirs only: cases, snapshots and grades through `judgments(args)`.
    Returns the visitor's access (None: the local operator)."""
    kind = COMMANDS.get(getattr(args, "command", ""))
    if kind is None:
        raise ValueError(f"command {getattr(args, 'command', '?')!r} is not classified as a read or a write in "
                         "retrieval/cli/gate.py COMMANDS; nothing was run")
    if not kind.write(args):  # a read consults the access settings only when sign-in is configured
        signed = (os.environ if env is None else env).get(ENV["auth"], "").strip().lower() not in ("", "none")
        access = visitor(env) if signed else None
        if access is not None and access.denied:
            raise AccessDenied(access.denied)
        if access is not None and access.limited and kind.whole:
            raise AccessDenied(f"`{args.command}` reports on the whole store (every scope's rows); {access.user} may "
                               f"read only {', '.join(sorted(access.scopes or ())) or 'no scope'}: ask the operator "
                               "to run it")
        args.actor = None
        return access
    from retrieval.access import demo_mode_from_env

    if demo_mode_from_env(env):  # before the policy is read: demo mode refuses whatever it says
        write_gate(args.command, None, env=env)
    access = visitor(env)
    args.actor = write_gate(args.command, access, store_wide=not kind.scoped, env=env)
    return access


def judgments(args: argparse.Namespace) -> JudgmentStore:
    """The one way a command opens `--db`'s cases, snapshots and grades. A command run by a visitor limited to some
    scopes, read or write, sees them through `retrieval.judgments.visible` (the rule the app's pages use): a case
    not wholly in their scopes, a snapshot that ran a query outside them, and their grades do not exist — the
    unknown-name error, no count, no metric over them (`judge policy` on such a case answers as on an unknown one).
    The store's own checks still refuse a write outside the visitor's scopes."""
    return lens(args.db, getattr(args, "access", None))


def audited(args: argparse.Namespace) -> None:
    """After a write command succeeded: one audit row naming who ran it."""
    db = getattr(args, "db", None)
    if getattr(args, "actor", None) and db:
        audit_command(str(db), args.actor, args.command)


def failure_line(exc: BaseException, args: argparse.Namespace | None = None) -> str:
    """The one `error: …` line for an expected failure: one line, credentials in any URI replaced by ***."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.errno == 28:  # ENOSPC
        text = f"the disk is full ({text}); free space and run the command again (what was committed stays)"
    db = getattr(args, "db", None) if args is not None else None
    return f"error: {redact_text(text, *([str(db)] if db else []))}"


def writer(args: argparse.Namespace) -> dict:
    """`access=` and `actor=` for a Workspace write: who the gate admitted (nothing for the local operator)."""
    access = getattr(args, "access", None)
    return {} if access is None else {"access": access, "actor": access.user}


class Scrubbed:
    """A text stream that writes everything through `redact_text`: no command can print a URI's credentials,
    whether it names the store (`--db`), a file, or echoes what was typed."""

    def __init__(self, stream, uris: tuple[str, ...]):
        self._stream, self._uris = stream, uris

    def write(self, text: str) -> int:
        self._stream.write(redact_text(text, *self._uris))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def scrubbed_output(args: argparse.Namespace):
    """stdout and stderr scrubbed of credentials while a command runs (and reports its failure)."""
    db = getattr(args, "db", None)
    uris = (str(db),) if db else ()
    with contextlib.redirect_stdout(Scrubbed(sys.stdout, uris)), contextlib.redirect_stderr(Scrubbed(sys.stderr, uris)):
        yield
