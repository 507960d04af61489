"""Machine grading: a configured text generator grades the ungraded results of a snapshot.

The prompt is UMBRELA's (Upadhyay et al. 2024, "UMBRELA: UMbrela is the (Bing) Relevance
Assessor", after Thomas et al. 2023), shortened to ask for the digit only. Machine grades are
stored with grader and rater "machine", the generator's name as source and the prompt's version
(`prompt_version`: a name plus a digest of the prompt's text, so any edit of it is a new version)
with each grade: apart from human grades, never used by metrics until a case turns them on after
their agreement with each human rater was shown (`agreement.calibration`).

Failures: a reply without a grade on the scale is recorded for that trace and grading goes on;
a backend error (429, 500, timeout, missing key) stops the run, keeping the grades written so far.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable, Mapping, Sequence

from retrieval.judgments import agreement as stats
from retrieval.judgments.model import SCALES, Judgment, Snapshot, content_hash, query_key, scope_text
from retrieval.judgments.store import JudgmentStore, check_grading

if TYPE_CHECKING:
    from retrieval.access import Access
    from retrieval.types import Scope

GRADE_SYSTEM = "You are a search quality rater evaluating the relevance of passages. Reply with one digit only."
SCALE_TEXT = {
    "graded": ("0 = the passage has nothing to do with the query;\n"
               "1 = the passage seems related to the query but does not answer it;\n"
               "2 = the passage has some answer for the query, but it may be unclear or hidden among other "
               "information;\n"
               "3 = the passage is dedicated to the query and contains the exact answer."),
    "binary": "0 = the passage does not answer the query;\n1 = the passage answers or directly bears on the query.",
}
WEAK_NOTE = "weak: Gemma 3 270M is a small base model; its grades check the plumbing, they are not judgments"
PASSAGE_CHARS = 2000


def prompt_version(scale: str = "graded") -> str:
    """The version stored with each machine grade: a name and a digest of the prompt's fixed text."""
    text = GRADE_SYSTEM + SCALE_TEXT[scale] + grade_prompt("{query}", "{passage}", scale)
    return "umbrela-digit-v1+" + hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def grade_prompt(query: str, passage: str, scale: str = "graded") -> str:
    allowed = SCALES[scale]
    return (f"Given a query and a passage, give a score on an integer scale of {allowed[0]} to {allowed[-1]}:\n"
            f"{SCALE_TEXT[scale]}\n\nQuery: {query.strip()}\nPassage: {passage.strip()[:PASSAGE_CHARS]}\n\n"
            f"Score ({'/'.join(map(str, allowed))}):")


def parse_grade(reply: str, scale: str = "graded") -> int:
    """The first integer in the reply, if it is on the scale; ValueError otherwise."""
    m = re.search(r"-?\d+", reply or "")
    allowed = SCALES[scale]
    if m is None or int(m.group()) not in allowed:
        raise ValueError(f"reply {reply[:80]!r} holds no grade on the {scale} scale "
                         f"({', '.join(map(str, allowed))})")
    return int(m.group())


def grader_label(generator) -> str:
    """The generator's name, with the weak-model warning for the local Gemma."""
    name = getattr(generator, "name", type(generator).__name__)
    return f"{name} ({WEAK_NOTE})" if type(generator).__name__ == "LocalGemmaGenerator" else name


@dataclass(frozen=True)
class MachineReport:
    grader: str
    graded: int
    skipped: int  # already graded (by a human, or by a machine when regrade is off)
    failures: tuple[tuple[str, str, str], ...] = ()  # (qid, trace id, reason)
    stopped: str | None = None  # the backend error that ended the run

    def to_dict(self) -> dict:
        return {"grader": self.grader, "graded": self.graded, "skipped": self.skipped,
                "failures": [list(f) for f in self.failures], "stopped": self.stopped}


def check_machine_grading(access: Access | None, scopes: Iterable[Scope | None]) -> None:
    """A machine-grading run calls a text generator for every ungraded trace and stores its grades, so it is a write
    (`access.may_write`, the CLI's `snapshot grade` and the Snapshots page's button ask the same) in the snapshot's
    scopes: `ReadOnlyError` / `AccessDenied` otherwise."""
    from retrieval.access import require_write

    require_write(access, "graded")
    check_grading(access, scopes)


def machine_grade(js: JudgmentStore, snap: Snapshot, generator, texts: Callable[[list[str]], Mapping[str, str]],
                  k: int = 10, scale: str | None = None, regrade: bool = False,
                  progress: Callable[[int, int], object] | None = None, *,
                  access: Access | None = None) -> MachineReport:
    """Grade the top `k` (credited final list) of every query in `snap` that no human has graded.

    `texts(ids)` returns {id: content} (e.g. from the trace store). Each grade is saved at once.
    """
    check_machine_grading(access, [q.scope for q in snap.queries])  # before any call to the generator
    scale = scale or js.case(snap.case).scale
    todo, skipped = [], 0
    for q in snap.queries:
        have = js.ratings(q.scope, q.query)
        done = {j.trace_id for j in have if j.grader == "human" or (j.who == "machine" and not regrade)}
        for tid in q.credited("final")[:k]:
            if tid in done:
                skipped += 1
            else:
                todo.append((q, tid))
    content = dict(texts(sorted({t for _, t in todo}))) if todo else {}
    label = getattr(generator, "name", type(generator).__name__)
    graded, failures, version = 0, [], prompt_version(scale)
    per_scope: list[str] = []  # the scope of each grade saved (the audit entry's part in each scope)
    stopped: str | None = None
    for n, (q, tid) in enumerate(todo, 1):
        if tid not in content:
            failures.append((q.qid, tid, "trace not in the store"))
            continue
        try:
            reply = generator.generate(GRADE_SYSTEM, grade_prompt(q.query, content[tid], scale))
        except Exception as exc:  # any backend failure ends the run; what was graded stays (and is audited)
            stopped = f"{exc}"
            break
        try:
            grade = parse_grade(reply, scale)
        except ValueError as exc:
            failures.append((q.qid, tid, str(exc)))
        else:
            js.add_judgments([Judgment(q.scope, q.query, tid, grade, "machine", label, rater="machine",
                                       content_hash=content_hash(content[tid]), prompt_version=version)],
                             scale, audit=False)
            graded += 1
            per_scope.append(scope_text(q.scope))
        if progress:
            progress(n, len(todo))
    if graded:  # one audit row for the run, not one per grade — a run that stopped included: its grades are kept
        from retrieval.workspace.audit import parts_counted

        actor = access.user if access is not None else "local"
        js.audit.record(actor, "grade", graded, sorted({scope_text(q.scope) for q, _ in todo}), [],
                        detail=f"machine: {label}" + (" (stopped)" if stopped is not None else ""),
                        parts=parts_counted(per_scope))
    return MachineReport(grader_label(generator), graded, skipped, tuple(failures), stopped)


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Unweighted Cohen's kappa (`agreement.cohen_kappa` has the weighted ones)."""
    return stats.cohen_kappa(a, b)


def agreement(judgments: Iterable[Judgment]) -> dict:
    """Human vs machine on the traces both graded: {"n", "kappa", "agree"} (kappa None when n = 0)."""
    human: dict[tuple[str, str, str], int] = {}
    machine: dict[tuple[str, str, str], int] = {}
    for j in judgments:
        key = (scope_text(j.scope), query_key(j.query), j.trace_id)
        (human if j.grader == "human" else machine)[key] = j.grade
    both = sorted(k for k in human if k in machine)
    a, b = [human[k] for k in both], [machine[k] for k in both]
    return {"n": len(both), "kappa": cohen_kappa(a, b), "agree": sum(x == y for x, y in zip(a, b))}
