"""Rule-based fact extraction (SPEC §7): regex patterns over first-person and named statements.

Offline and deterministic. A pattern captures the object as a literal span of the sentence, so a
fact can always be traced back to the words it came from.
"""
from __future__ import annotations

import re
from datetime import datetime

from retrieval.types import utcnow
from retrieval.facts.model import FIRST_PERSON, NOT_NAMES, Fact, canonical_subject

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


def _v(base: str, third: str | None = None) -> str:
    """`live` → `(?:live|lives)`: the form after "I" or the one after a named subject.

    Only those two; each pattern spells out its other tenses ("lived", "moved to") itself.
    """
    return f"(?:{base}|{third or base + 's'})"


# (predicate, regex). Subject group `subj` (I or a name), object group `obj`. First match per
# predicate per sentence wins; patterns run in this order.
_PATTERNS: list[tuple[str, str]] = [
    ("isNamed", rf"\b[Mm]y name is {_NAME}"),
    ("isNamed", rf"\b(?P<subj>I)(?:'m| am) called {_NAME}"),
    ("isNamed", rf"\b[Cc]all me {_NAME}"),
    ("identifiesAs", rf"{_SUBJ} {_v('identify', 'identifies')} as {_OBJ}{_STOP}"),
    ("livesIn",
     rf"{_SUBJ} ?(?:{_v('live')}|lived|(?:'m|am|is|was) (?:now )?living|(?:'ve |have |has )?(?:moved|relocated)) (?:back )?(?:in|to) {_NAME}"),
    ("worksAt",
     rf"{_SUBJ} ?(?:{_v('work')}|worked|(?:'m|am|is) (?:now )?working|(?:'ve |have |has )?started(?: a new job| working)?) (?:at|for|with) {_NAME}"),
    ("worksAt",
     rf"{_SUBJ} ?(?:got|landed|started|accepted) (?:a|an|the) (?:new )?(?:job|position|role|offer) (?:at|with) {_NAME}"),
    ("worksAt", rf"\b(?P<subj>I) joined {_NAME}"),
    ("studiesAt",
     rf"{_SUBJ} ?(?:{_v('study', 'studies')}|studied|(?:'m|am|is) (?:now )?studying|(?:'ve |have )?enrolled) (?:[\w ]+ )?at {_NAME}"),
    ("ownsPet",
     rf"\b(?P<subj>[Mm]y|I have an?|I adopted an?|I got an?) (?:new )?(?:dog|cat|puppy|kitten|parrot|hamster|rabbit|bunny|tortoise|turtle|horse|goldfish|pet)(?: \w+)?,? (?:named |called |is called |is named )?{_NAME}"),
    ("allergicTo", rf"{_SUBJ}(?:'m| am| is| was) (?:severely |very |mildly )?allergic to {_OBJ}{_STOP}"),
    ("allergicTo", rf"{_SUBJ} ?(?:have|has) an? (?:\w+ )?allergy to {_OBJ}{_STOP}"),
    ("takesMedication",
     rf"{_SUBJ} ?(?:{_v('take')}|(?:'ve |have |has )?started taking|(?:was|got|'ve been|have been) prescribed|(?:'m|am|is) (?:now )?on) (?P<obj>[a-z]*[A-Za-z][\w-]*(?: \d+ ?mg)?)(?= (?:daily|every|twice|once|for|each|in the|at night|at bedtime|\d)|[.,;!?]|$)"),
    ("diagnosedWith", rf"{_SUBJ} ?(?:was|were|got|'ve been|have been|has been) diagnosed with {_OBJ}{_STOP}"),
    ("drives", rf"{_SUBJ} ?(?:{_v('drive')}|drove|(?:'m|am) driving) (?:an? |the )?{_OBJ}{_STOP}"),
    ("marriedTo", rf"{_SUBJ}(?:'m| am| is| got| was) married to {_NAME}"),
    ("marriedTo", rf"\b(?P<subj>[Mm]y) (?:wife|husband|spouse)(?:'s name is|,| is| named)? {_NAME}"),
    ("parentOf",
     rf"\b(?P<subj>[Mm]y) (?:son|daughter|kid|child|baby|boy|girl)(?:'s name is|,| is called| is named| named| called)? {_NAME}"),
    ("friendOf", rf"\b(?P<subj>[Mm]y) (?:best |old |close )?friend,? {_NAME}"),
    ("colleagueOf", rf"\b(?P<subj>[Mm]y) (?:colleague|coworker|co-worker|teammate|manager|boss),? {_NAME}"),
    ("visited", rf"{_SUBJ} ?(?:visited|(?:went|travelled|traveled|flew) to|(?:'ve|have|has) been to) {_NAME}"),
    ("attended",
     rf"{_SUBJ} ?(?:attended|went to) (?P<obj>(?:the |a |an |my )?[\w' -]*?(?:conference|wedding|concert|workshop|meetup|summit|festival|funeral|graduation|class|course|seminar|game|show|party)(?: [A-Z0-9][\w-]*)*)"),
    ("purchased", rf"{_SUBJ} ?(?:bought|purchased|ordered|picked up) {_OBJ}{_STOP}"),
    ("scheduled",
     rf"{_SUBJ} ?(?:scheduled|booked|(?:have|has) an? (?:appointment|meeting|call|session) (?:with|for)) {_OBJ}{_STOP}"),
    ("commitsTo", rf"{_SUBJ} ?(?:promised|committed|pledged|vowed) to {_OBJ}{_STOP}"),
    ("decidedOn", rf"{_SUBJ} ?(?:decided|chose|opted) (?:to go with |on |to )?{_OBJ}{_STOP}"),
    ("avoids", rf"{_SUBJ} ?(?:{_v('avoid')}|(?:try|tries) to avoid|stay away from|stays away from) {_OBJ}{_STOP}"),
    ("dislikes",
     rf"{_SUBJ} ?(?:{_v('dislike')}|{_v('hate')}|(?:can't|cannot) stand|(?:'m|am) not a fan of) {_OBJ}{_STOP}"),
    ("prefers",
     rf"{_SUBJ} ?(?:{_v('prefer')}|{_v('love')}|really like|(?:'m|am|is) a (?:big |huge )?fan of) {_OBJ}{_STOP}"),
    ("prefers", rf"\b(?P<subj>[Mm]y) favou?rite \w+(?: \w+)? is {_OBJ}{_STOP}"),
    ("believes", rf"{_SUBJ} ?(?:firmly |really |strongly )?{_v('believe')} (?:that )?{_OBJ}{_STOP}"),
    ("is",
     r"\b(?P<subj>I)(?:'m| am) an? (?P<obj>(?:[\w-]+ ){0,2}(?:engineer|developer|designer|teacher|nurse|doctor|lawyer|student|manager|architect|writer|chef|accountant|analyst|scientist|researcher|consultant|vegetarian|vegan|runner|photographer|musician|artist|pilot|pharmacist|librarian|founder))\b"),
]
_COMPILED = [(p, re.compile(rx)) for p, rx in _PATTERNS]
_PREPOSITIONS = frozenset(["to", "from", "in", "at", "of", "for", "with", "by", "on", "into", "onto", "about", "near",
                           "via"])
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
                if subj.lower() in ("my", "i have a", "i have an", "i adopted a", "i adopted an", "i got a",
                                    "i got an"):
                    subj = "I"
                if subj != "I" and subj.lower() not in FIRST_PERSON:
                    before = s[:m.start("subj")].split()
                    if (subj in NOT_NAMES or not _THIRD_PERSON_VERB.match(s[m.end("subj"):])
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
