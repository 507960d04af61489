"""Who is writing: the one place that decides the name a grade, a note, a rating or an imported row is stored under,
and the name the audit gives the write (issue 32, "Identity"). The store, the pages and the CLI all ask it.

- Signed in: the sign-in identity, always. A name chosen in the tab, a `--rater` flag or a rater column in an
  imported file never changes it (an import says so: "rater column ignored: grades stored as maya@example.com").
- Not signed in (local use, the CLI): the rater name the tab (or the caller) chose, else the local operator,
  `local` — the name the audit has always given local writes. Only the local operator may write under the names
  an imported file gives (a restore of an export).
- `machine` and `implicit` are reserved for the machine judge and logged feedback: no person writes as them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.access import LOCAL_USER, AccessDenied
from retrieval.judgments.model import GRADERS, check_rater

if TYPE_CHECKING:
    from retrieval.access import Access

RESERVED = ("machine", "implicit")  # the raters no person may write as
LOCAL = LOCAL_USER  # the local operator (no sign-in, no chosen name)


def signed_in(access: Access | None) -> bool:
    """A visitor with a sign-in identity (not local use)."""
    return access is not None and bool(access.user) and access.user != LOCAL_USER


def person(name: str) -> str:
    """A rater name a person may write under, or ValueError (the naming rule, or a reserved name)."""
    check_rater(name)
    if name in RESERVED:
        what = "the machine judge" if name == "machine" else "grades from logged feedback"
        raise ValueError(f"rater name {name!r} is reserved for {what}; a person cannot write as it (pick another "
                         "name)")
    return name


def writer(access: Access | None, chosen: str = "") -> str:
    """Who writes: the sign-in; else `chosen` (the tab's rater name, checked by `person`); else `local`."""
    if access is not None and signed_in(access):
        return access.user
    return person(chosen) if chosen else LOCAL


def check_author(access: Access | None, name: str) -> str:
    """A person's write stored under `name`: refused (`AccessDenied`) when a signed-in visitor writes as anyone but
    themselves, ValueError for a reserved or malformed name. Returns the name."""
    if access is not None and signed_in(access) and name != access.user:
        raise AccessDenied(f"nothing was saved: {access.user} may write grades and notes only as {access.user}, "
                           f"not as {name!r}")
    return person(name)


def honours_rater_column(access: Access | None) -> bool:
    """May an import keep the rater names its file gives? Only for the local operator (no sign-in)."""
    return not signed_in(access)


def audit_actor(access: Access | None, name: str = "") -> str:
    """The name the audit gives a write: the sign-in, else the rater name written under, else `local`."""
    if access is not None and signed_in(access):
        return access.user
    return name if name and name not in RESERVED else LOCAL


def check_kind(grader: str, name: str) -> None:
    """A machine-made grade (`machine`, `implicit`) is stored under its kind's name and nothing else."""
    if grader in GRADERS and grader != "human" and name != grader:
        raise ValueError(f"a {grader} grade is stored under rater {grader!r}, not {name!r}")
