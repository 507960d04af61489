"""Fact graph (SPEC §7): literal (subject, predicate, object) facts, persisted per scope.

Facts keep the literal value a summary or an embedding blurs (a city, a pet's name, a drug),
and keep history, so "where did I live first?" can be answered with every fact in time order.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from ..types import MemoryTrace, Scope, ScoreBreakdown, ScoredMemoryTrace, epoch_ms, utcnow

log = logging.getLogger(__name__)

PREDICATES = (
    "prefers", "dislikes", "avoids", "is", "isNamed", "identifiesAs", "livesIn", "worksAt", "studiesAt",
    "ownsPet", "drives", "marriedTo", "parentOf", "friendOf", "colleagueOf", "visited", "attended",
    "purchased", "scheduled", "allergicTo", "takesMedication", "diagnosedWith", "commitsTo", "decidedOn",
    "believes",
)
FIRST_PERSON = frozenset({"i", "my", "me", "mine", "myself"})
TEMPORAL_RE = re.compile(r"\b(first|last|when|before|after|most recent|originally|initially|latest)\b", re.I)


def canonical_subject(subject: str) -> str:
    s = subject.strip().lower()
    return "user" if s in FIRST_PERSON else s


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    object: str
    timestamp: datetime
    source_trace_ids: tuple[str, ...] = ()
    source_span: str = ""

    def __post_init__(self) -> None:
        if self.predicate not in PREDICATES:
            raise ValueError(f"predicate {self.predicate!r} is not one of the {len(PREDICATES)} known predicates")
        if not self.object or not self.object.strip():
            raise ValueError("a fact needs a non-empty object")
        if self.timestamp.tzinfo is None:
            raise ValueError("fact timestamp must be timezone-aware")
        object.__setattr__(self, "subject", canonical_subject(self.subject))
        object.__setattr__(self, "source_trace_ids", tuple(self.source_trace_ids))

    @property
    def key(self) -> str:
        raw = json.dumps([self.subject, self.predicate, self.object, epoch_ms(self.timestamp),
                          sorted(self.source_trace_ids)])
        return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


def fact_trace_id(f: Fact) -> str:
    return f"fact-graph:{f.subject}:{f.predicate}:{epoch_ms(f.timestamp)}"


def fact_to_trace(f: Fact, scope: Scope) -> ScoredMemoryTrace:
    content = f"{f.subject} {f.predicate} {f.object} (as of {f.timestamp.astimezone(timezone.utc):%Y-%m-%d})."
    trace = MemoryTrace(
        id=fact_trace_id(f), content=content, scope=scope.scope, scope_id=scope.scope_id, type="semantic",
        tags=("fact-graph", f"predicate:{f.predicate}"), source_type="fact_graph", created_at=f.timestamp,
    )
    return ScoredMemoryTrace(trace, 1.0, ScoreBreakdown())


# ---------------------------------------------------------------------- store
class FactStore:
    """Facts in a LanceDB table beside the traces, scoped by (scope, scope_id)."""

    def __init__(self, uri: str = "data/lancedb", table: str = "facts"):
        self.uri = str(uri)
        self.table_name = table
        self._db = None
        self._tbl = None

    def __repr__(self) -> str:
        return f"FactStore(uri={self.uri!r}, table={self.table_name!r})"

    def _table(self, create: bool = False):
        if self._tbl is None:
            import lancedb
            import pyarrow as pa

            self._db = self._db or lancedb.connect(self.uri)
            if self.table_name in self._db.table_names():
                self._tbl = self._db.open_table(self.table_name)
            elif create:
                schema = pa.schema([
                    ("key", pa.string()), ("scope", pa.string()), ("scope_id", pa.string()),
                    ("subject", pa.string()), ("predicate", pa.string()), ("object", pa.string()),
                    ("timestamp", pa.timestamp("us", tz="UTC")), ("source_trace_ids", pa.list_(pa.string())),
                    ("source_span", pa.string()),
                ])
                self._tbl = self._db.create_table(self.table_name, schema=schema)
        return self._tbl

    @staticmethod
    def _where(scope: Scope, **eq: str) -> str:
        from ..store import sql_quote

        parts = [f"scope = {sql_quote(scope.scope)}", f"scope_id = {sql_quote(scope.scope_id)}"]
        parts += [f"{k} = {sql_quote(v)}" for k, v in eq.items()]
        return " AND ".join(parts)

    def _rows(self, where: str | None) -> list[dict]:
        tbl = self._table()
        if tbl is None:
            return []
        q = tbl.search()
        if where:
            q = q.where(where)
        return q.limit(None).to_arrow().to_pylist()

    @staticmethod
    def _fact(row: dict) -> Fact:
        ts = row["timestamp"]
        ts = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
        return Fact(row["subject"], row["predicate"], row["object"], ts, tuple(row["source_trace_ids"] or ()),
                    row["source_span"] or "")

    def upsert(self, scope: Scope, facts: Iterable[Fact]) -> int:
        """Store facts for a scope; a fact equal in every field is stored once. Returns new rows."""
        if not isinstance(scope, Scope):
            raise ValueError(f"scope must be a Scope, got {scope!r}")
        rows = {}
        for f in facts:
            rows[f.key] = {
                "key": f.key, "scope": scope.scope, "scope_id": scope.scope_id, "subject": f.subject,
                "predicate": f.predicate, "object": f.object, "timestamp": f.timestamp.astimezone(timezone.utc),
                "source_trace_ids": list(f.source_trace_ids), "source_span": f.source_span,
            }
        if not rows:
            return 0
        tbl = self._table(create=True)
        # The key hashes every field, so matching on (scope, key) makes re-ingest idempotent.
        before = tbl.count_rows()
        (tbl.merge_insert(["scope", "scope_id", "key"]).when_not_matched_insert_all().execute(list(rows.values())))
        return tbl.count_rows() - before

    def all(self, scope: Scope | None = None) -> list[Fact]:
        rows = self._rows(self._where(scope) if scope else None)
        return sorted((self._fact(r) for r in rows), key=lambda f: (f.timestamp, f.subject, f.predicate, f.object))

    def latest(self, scope: Scope, subject: str, predicate: str) -> Fact | None:
        rows = self._rows(self._where(scope, subject=canonical_subject(subject), predicate=predicate))
        facts = [self._fact(r) for r in rows]
        return max(facts, key=lambda f: (f.timestamp, f.object), default=None)

    def all_time_ordered(self, scope: Scope, subject: str) -> list[Fact]:
        rows = self._rows(self._where(scope, subject=canonical_subject(subject)))
        return sorted((self._fact(r) for r in rows), key=lambda f: (f.timestamp, f.predicate, f.object))

    def delete_for_trace(self, trace_id: str) -> int:
        """Remove facts sourced only from `trace_id`; drop it from facts with other sources too."""
        tbl = self._table()
        if tbl is None:
            return 0
        rows = [r for r in self._rows(None) if trace_id in (r["source_trace_ids"] or [])]
        if not rows:
            return 0
        from ..store import sql_quote

        tbl.delete("key IN (" + ", ".join(sql_quote(r["key"]) for r in rows) + ")")
        keep = []
        for r in rows:
            rest = [s for s in r["source_trace_ids"] if s != trace_id]
            if rest:
                keep.append((Scope(r["scope"], r["scope_id"]), Fact(r["subject"], r["predicate"], r["object"],
                             r["timestamp"], tuple(rest), r["source_span"])))
        for scope, f in keep:
            self.upsert(scope, [f])
        return len(rows) - len(keep)

    def count(self) -> int:
        tbl = self._table()
        return tbl.count_rows() if tbl is not None else 0


# ---------------------------------------------------------------------- extraction
_NEGATION = re.compile(r"\b(not|never|no longer|don't|doesn't|didn't|won't|isn't|aren't|wasn't|can't|"
                       r"haven't|hasn't|dont|doesnt|didnt|nobody|neither|nor)\b|n't\b", re.I)
_QUESTION_START = re.compile(r"^\s*(do|does|did|are|is|am|was|were|can|could|would|will|should|where|what|"
                             r"who|when|why|how|which|have|has)\b", re.I)
# Where an object phrase stops: punctuation, or a clause/time word after it.
_STOP = (r"(?=\s+(?:in\s+(?:january|february|march|april|may|june|july|august|september|october|november|"
         r"december|\d{4}|the\s+(?:spring|summer|autumn|fall|winter))|on\s+(?:monday|tuesday|wednesday|thursday|"
         r"friday|saturday|sunday|\d)|since|last|this|next|yesterday|today|because|when|after|before|and|but|"
         r"so|which|who|while|until|ago|for\s+(?:a|the|two|three|\d)|with\s+my)\b|\s*[.,;:!?()\"]|\s+-\s|$)")
_OBJ = r"(?P<obj>[^.,;:!?()\"]+?)"
# A proper name: capitalised words, allowing "of"/"de"/"&" inside ("City of Bristol College",
# "Halvorsen & Brandt"); a leading "the" is not part of it.
_NAME = r"(?:the\s+)?(?P<obj>[A-Z][\w'.-]*[\w](?:\s+(?:(?:of|de|da|do|del|la|and|&)\s+)?[A-Z][\w'.-]*[\w])*)"
_SUBJ = r"(?P<subj>\bI\b|\b[A-Z][a-z]+\b)"
_DET = re.compile(r"^(?:a|an|the|some|my|our|her|his|their|him|them|us)\s+", re.I)
# After a named (non-"I") subject the verb must agree: "Sarah lives", not "Drivers hate".
_THIRD_PERSON_VERB = re.compile(r"^\s*(?:\w+s\b|\w+ed\b|is\b|was\b|has\b|got\b|went\b|drove\b|bought\b|took\b|'s\b)")
_NOT_NAMES = frozenset("""The A An My Our Your His Her Their It This That These Those We They He She You There Here
Then Today Yesterday Tomorrow Last Next After Before When While Also And But So Yes No Ok Okay Oh Well Just
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August
September October November December Mom Dad Mum Mummy Mother Father Grandma Grandpa Granny
Train Flight Bus Order Invoice Ticket Meeting""".split())


def _v(base: str, third: str | None = None) -> str:
    """Verb alternatives for I/named subjects: `live` → `(?:live|lives|lived|moved to…)`-style group."""
    return f"(?:{base}|{third or base + 's'})"


# (predicate, regex). Subject group `subj` (I or a name), object group `obj`. First match per
# predicate per sentence wins; patterns run in this order.
_PATTERNS: list[tuple[str, str]] = [
    ("isNamed", rf"\b[Mm]y name is {_NAME}"),
    ("isNamed", rf"\b(?P<subj>I)(?:'m| am) called {_NAME}"),
    ("isNamed", rf"\b[Cc]all me {_NAME}"),
    ("identifiesAs", rf"{_SUBJ} {_v('identify', 'identifies')} as {_OBJ}{_STOP}"),
    ("livesIn", rf"{_SUBJ} ?(?:{_v('live')}|lived|(?:'m|am|is|was) (?:now )?living|(?:'ve |have |has )?(?:moved|relocated)) (?:back )?(?:in|to) {_NAME}"),
    ("worksAt", rf"{_SUBJ} ?(?:{_v('work')}|worked|(?:'m|am|is) (?:now )?working|(?:'ve |have |has )?started(?: a new job| working)?) (?:at|for|with) {_NAME}"),
    ("worksAt", rf"{_SUBJ} ?(?:got|landed|started|accepted) (?:a|an|the) (?:new )?(?:job|position|role|offer) (?:at|with) {_NAME}"),
    ("worksAt", rf"\b(?P<subj>I) joined {_NAME}"),
    ("studiesAt", rf"{_SUBJ} ?(?:{_v('study', 'studies')}|studied|(?:'m|am|is) (?:now )?studying|(?:'ve |have )?enrolled) (?:[\w ]+ )?at {_NAME}"),
    ("ownsPet", rf"\b(?P<subj>[Mm]y|I have an?|I adopted an?|I got an?) (?:new )?(?:dog|cat|puppy|kitten|parrot|hamster|rabbit|bunny|tortoise|turtle|horse|goldfish|pet)(?: \w+)?,? (?:named |called |is called |is named )?{_NAME}"),
    ("allergicTo", rf"{_SUBJ}(?:'m| am| is| was) (?:severely |very |mildly )?allergic to {_OBJ}{_STOP}"),
    ("allergicTo", rf"{_SUBJ} ?(?:have|has) an? (?:\w+ )?allergy to {_OBJ}{_STOP}"),
    ("takesMedication", rf"{_SUBJ} ?(?:{_v('take')}|(?:'ve |have |has )?started taking|(?:was|got|'ve been|have been) prescribed|(?:'m|am|is) (?:now )?on) (?P<obj>[a-z]*[A-Za-z][\w-]*(?: \d+ ?mg)?)(?= (?:daily|every|twice|once|for|each|in the|at night|at bedtime|\d)|[.,;!?]|$)"),
    ("diagnosedWith", rf"{_SUBJ} ?(?:was|were|got|'ve been|have been|has been) diagnosed with {_OBJ}{_STOP}"),
    ("drives", rf"{_SUBJ} ?(?:{_v('drive')}|drove|(?:'m|am) driving) (?:an? |the )?{_OBJ}{_STOP}"),
    ("marriedTo", rf"{_SUBJ}(?:'m| am| is| got| was) married to {_NAME}"),
    ("marriedTo", rf"\b(?P<subj>[Mm]y) (?:wife|husband|spouse)(?:'s name is|,| is| named)? {_NAME}"),
    ("parentOf", rf"\b(?P<subj>[Mm]y) (?:son|daughter|kid|child|baby|boy|girl)(?:'s name is|,| is called| is named| named| called)? {_NAME}"),
    ("friendOf", rf"\b(?P<subj>[Mm]y) (?:best |old |close )?friend,? {_NAME}"),
    ("colleagueOf", rf"\b(?P<subj>[Mm]y) (?:colleague|coworker|co-worker|teammate|manager|boss),? {_NAME}"),
    ("visited", rf"{_SUBJ} ?(?:visited|(?:went|travelled|traveled|flew) to|(?:'ve|have|has) been to) {_NAME}"),
    ("attended", rf"{_SUBJ} ?(?:attended|went to) (?P<obj>(?:the |a |an |my )?[\w' -]*?(?:conference|wedding|concert|workshop|meetup|summit|festival|funeral|graduation|class|course|seminar|game|show|party)(?: [A-Z0-9][\w-]*)*)"),
    ("purchased", rf"{_SUBJ} ?(?:bought|purchased|ordered|picked up) {_OBJ}{_STOP}"),
    ("scheduled", rf"{_SUBJ} ?(?:scheduled|booked|(?:have|has) an? (?:appointment|meeting|call|session) (?:with|for)) {_OBJ}{_STOP}"),
    ("commitsTo", rf"{_SUBJ} ?(?:promised|committed|pledged|vowed) to {_OBJ}{_STOP}"),
    ("decidedOn", rf"{_SUBJ} ?(?:decided|chose|opted) (?:to go with |on |to )?{_OBJ}{_STOP}"),
    ("avoids", rf"{_SUBJ} ?(?:{_v('avoid')}|(?:try|tries) to avoid|stay away from|stays away from) {_OBJ}{_STOP}"),
    ("dislikes", rf"{_SUBJ} ?(?:{_v('dislike')}|{_v('hate')}|(?:can't|cannot) stand|(?:'m|am) not a fan of) {_OBJ}{_STOP}"),
    ("prefers", rf"{_SUBJ} ?(?:{_v('prefer')}|{_v('love')}|really like|(?:'m|am|is) a (?:big |huge )?fan of) {_OBJ}{_STOP}"),
    ("prefers", rf"\b(?P<subj>[Mm]y) favou?rite \w+(?: \w+)? is {_OBJ}{_STOP}"),
    ("believes", rf"{_SUBJ} ?(?:firmly |really |strongly )?{_v('believe')} (?:that )?{_OBJ}{_STOP}"),
    ("is", r"\b(?P<subj>I)(?:'m| am) an? (?P<obj>(?:[\w-]+ ){0,2}(?:engineer|developer|designer|teacher|nurse|doctor|lawyer|student|manager|architect|writer|chef|accountant|analyst|scientist|researcher|consultant|vegetarian|vegan|runner|photographer|musician|artist|pilot|pharmacist|librarian|founder))\b"),
]
_COMPILED = [(p, re.compile(rx)) for p, rx in _PATTERNS]
_PREPOSITIONS = frozenset("to from in at of for with by on into onto about near via".split())
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def _clean_object(obj: str) -> str:
    obj = obj.strip().strip("'\"")
    while True:
        new = _DET.sub("", obj)
        if new == obj:
            return obj
        obj = new


class RuleFactExtractor:
    """Offline, pattern-based: first-person statements (and named third persons) → facts.

    Negated sentences and questions yield nothing. The object is always a literal span.
    """

    name = "rule"

    def __repr__(self) -> str:
        return f"RuleFactExtractor(patterns={len(_COMPILED)})"

    def extract(self, text: str, trace_id: str | None = None, timestamp: datetime | None = None) -> list[Fact]:
        ts = timestamp or utcnow()
        out: list[Fact] = []
        seen: set[tuple[str, str, str]] = set()
        for sentence in _SENTENCES.split(text or ""):
            s = sentence.strip()
            if not s or s.endswith("?") or _QUESTION_START.match(s) or _NEGATION.search(s):
                continue
            done: set[str] = set()
            for pred, rx in _COMPILED:
                if pred in done:
                    continue
                m = rx.search(s)
                if not m:
                    continue
                subj = (m.groupdict().get("subj") or "I").strip()
                if subj.lower() in ("my", "i have a", "i have an", "i adopted a", "i adopted an", "i got a", "i got an"):
                    subj = "I"
                if subj != "I" and subj.lower() not in FIRST_PERSON:
                    before = s[:m.start("subj")].split()
                    if (subj in _NOT_NAMES or not _THIRD_PERSON_VERB.match(s[m.end("subj"):])
                            or (before and before[-1].lower() in _PREPOSITIONS)):
                        continue
                obj = _clean_object(m.group("obj"))
                if not obj or len(obj) > 80 or obj.lower() in FIRST_PERSON:
                    continue
                key = (canonical_subject(subj), pred, obj)
                if key in seen:
                    continue
                seen.add(key)
                done.add(pred)
                out.append(Fact(subj, pred, obj, ts, (trace_id,) if trace_id else (), s))
        return out


LLM_FACT_SYSTEM = "You extract facts as JSON. Answer with a JSON array only."


def llm_fact_prompt(text: str) -> str:
    return (
        "Extract facts the speaker states about themselves or a named person. Allowed predicates: "
        f"{', '.join(PREDICATES)}. Return a JSON array of objects with keys subject, predicate, object. "
        "The subject is \"I\" for the speaker. The object MUST be copied word for word from the text. "
        "Skip negated statements and questions. Return [] when there is none.\n\n"
        f"Text: {text}\nJSON:"
    )


class LLMFactExtractor:
    """Facts from a text generator; objects that are not literal substrings are rejected."""

    name = "llm"

    def __init__(self, llm):
        self.llm = llm
        self.warnings: list[str] = []

    def __repr__(self) -> str:
        return f"LLMFactExtractor(llm={self.llm!r})"

    def extract(self, text: str, trace_id: str | None = None, timestamp: datetime | None = None) -> list[Fact]:
        ts = timestamp or utcnow()
        try:
            raw = self.llm.generate(LLM_FACT_SYSTEM, llm_fact_prompt(text))
        except Exception as exc:
            self.warnings.append(f"{trace_id or 'text'}: generator failed ({type(exc).__name__}: {exc})")
            return []
        match = re.search(r"\[.*\]", raw or "", re.S)
        try:
            items = json.loads(match.group(0) if match else raw)
            if not isinstance(items, list):
                raise ValueError("not a JSON array")
        except (ValueError, TypeError) as exc:
            self.warnings.append(f"{trace_id or 'text'}: invalid JSON from the generator ({exc}); no facts")
            return []
        out = []
        for item in items:
            if not isinstance(item, dict):
                continue
            subj, pred, obj = (str(item.get(k, "")).strip() for k in ("subject", "predicate", "object"))
            if pred not in PREDICATES or not obj or not subj:
                self.warnings.append(f"{trace_id or 'text'}: dropped {item!r} (unknown predicate or empty field)")
                continue
            if obj not in text:
                self.warnings.append(f"{trace_id or 'text'}: dropped object {obj!r}: not a literal span of the text")
                continue
            out.append(Fact(subj, pred, obj, ts, (trace_id,) if trace_id else (), text))
        return out


def extract_for_traces(fact_store: FactStore, extractor, traces: Iterable[MemoryTrace]) -> tuple[int, list[str]]:
    """Run an extractor over traces and upsert per scope. Returns (new facts, warnings)."""
    by_scope: dict[Scope, list[Fact]] = {}
    warnings: list[str] = []
    for t in traces:
        if not t.is_active:
            continue
        try:
            facts = extractor.extract(t.content, trace_id=t.id, timestamp=t.created_at)
        except Exception as exc:
            warnings.append(f"{t.id}: extraction failed ({type(exc).__name__}: {exc})")
            continue
        by_scope.setdefault(t.scope_key, []).extend(facts)
    warnings += list(getattr(extractor, "warnings", []))
    n = sum(fact_store.upsert(scope, facts) for scope, facts in by_scope.items())
    return n, warnings


# ---------------------------------------------------------------------- query classifiers
class AgentOSFactClassifier:
    """Faithful AgentOS rule: pairs only when the query says i/my/me/user, and a predicate matches
    when its lowercased name is a substring of the lowercased query."""

    name = "agentos"

    def classify(self, query: str) -> tuple[list[tuple[str, str]], bool]:
        q = query.lower()
        words = set(re.findall(r"[a-z]+", q))
        temporal = bool(TEMPORAL_RE.search(query))
        if not words & {"i", "my", "me", "user"}:
            return [], temporal
        return [("user", p) for p in PREDICATES if p.lower() in q], temporal


# Natural-language cues per predicate (regexes over the lowercased query).
_CUES: dict[str, str] = {
    "livesIn": r"\b(live|lives|living|lived|home ?town|reside|moved|move to|based|address|city)\b",
    "worksAt": r"\b(work|works|working|worked|job|employer|company|office|career|hired)\b",
    "studiesAt": r"\b(study|studies|studying|school|university|college|degree|enrolled)\b",
    "ownsPet": r"\b(pet|pets|dog|cat|puppy|kitten|parrot|hamster|rabbit)\b",
    "allergicTo": r"\b(allerg\w*)\b",
    "takesMedication": r"\b(medication|medications|medicine|meds|pills?|prescription|prescribed|dose|taking)\b",
    "diagnosedWith": r"\b(diagnos\w*|condition|illness|disease)\b",
    "marriedTo": r"\b(marry|married|wife|husband|spouse)\b",
    "parentOf": r"\b(son|daughter|kids?|children|child)\b",
    "friendOf": r"\b(friends?)\b",
    "colleagueOf": r"\b(colleagues?|coworkers?|co-workers?|teammates?|manager|boss)\b",
    "visited": r"\b(visit\w*|trip|travel\w*|been to|went to)\b",
    "attended": r"\b(attend\w*|conference|wedding|concert|event)\b",
    "purchased": r"\b(bought|buy|purchase\w*|ordered|order)\b",
    "scheduled": r"\b(schedul\w*|appointment|booked|meeting)\b",
    "drives": r"\b(drive|drives|car)\b",
    "isNamed": r"\b(my name|what am i called|what's my name)\b",
    "identifiesAs": r"\b(identify|identifies|pronouns?)\b",
    "prefers": r"\b(prefer\w*|favou?rite|like best|love)\b",
    "dislikes": r"\b(dislike\w*|hate|can't stand)\b",
    "avoids": r"\b(avoid\w*)\b",
    "commitsTo": r"\b(promis\w*|commit\w*)\b",
    "decidedOn": r"\b(decid\w*|decision|chose|choice)\b",
    "believes": r"\b(believe\w*|opinion)\b",
    "is": r"\b(what do i do for a living|profession|occupation)\b",
}
_CUES_RE = {p: re.compile(rx) for p, rx in _CUES.items()}
_POSSESSIVE_NAME = re.compile(r"\b([A-Z][a-z]+)'s\b|\b(?:does|did|is|was|has) ([A-Z][a-z]+)\b")


class KeywordFactClassifier:
    """Maps natural questions to (subject, predicate) pairs: "where do I live" → ("user", "livesIn")."""

    name = "keyword"

    def classify(self, query: str) -> tuple[list[tuple[str, str]], bool]:
        temporal = bool(TEMPORAL_RE.search(query))
        q = query.lower()
        words = set(re.findall(r"[a-z']+", q))
        subjects = []
        if words & (FIRST_PERSON | {"i'm", "i've", "am"}):
            subjects.append("user")
        for m in _POSSESSIVE_NAME.finditer(query):
            name = (m.group(1) or m.group(2) or "")
            if name and name not in _NOT_NAMES:
                subjects.append(name.lower())
        if not subjects:
            return [], temporal
        preds = [p for p in PREDICATES if p in _CUES_RE and _CUES_RE[p].search(q)]
        return [(s, p) for s in dict.fromkeys(subjects) for p in preds], temporal


def fact_traces_for_query(fact_store, classifier, query: str, scope: Scope | None,
                          temporal_scope: str = "subject") -> tuple[list[Fact], list[ScoredMemoryTrace]]:
    """Step 0 of the pipeline: the facts a query asks for, as synthetic traces (scope-checked).

    A temporal query gets history: every fact of the subject (`temporal_scope="subject"`, AgentOS)
    or every fact of the asked predicates (`"predicates"`, the hybrid preset; falls back to the
    subject's facts when those predicates have none).
    """
    if scope is None:
        return [], []
    classifier = classifier or KeywordFactClassifier()
    pairs, temporal = classifier.classify(query)
    facts: list[Fact] = []
    if temporal:
        # AgentOS: a temporal question gets every fact of the subject, oldest first.
        for subject in dict.fromkeys(s for s, _ in pairs):
            history = fact_store.all_time_ordered(scope, subject)
            if temporal_scope == "predicates":
                asked = {p for s, p in pairs if s == subject}
                history = [f for f in history if f.predicate in asked] or history
            facts += history
    else:
        for subject, predicate in pairs:
            f = fact_store.latest(scope, subject, predicate)
            if f is not None:
                facts.append(f)
    # Trace ids are subject:predicate:time; two objects at the same instant keep the first.
    unique: dict[str, Fact] = {}
    for f in facts:
        unique.setdefault(fact_trace_id(f), f)
    facts = list(unique.values())
    return facts, [fact_to_trace(f, scope) for f in facts]
