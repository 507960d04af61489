"""Query classifiers (SPEC §7): which (subject, predicate) pairs a query asks for, and whether it
asks about time ("where did I live first?" wants history, not only the latest fact).
"""
from __future__ import annotations

import re

from retrieval.facts.model import FIRST_PERSON, NOT_NAMES, PREDICATES

TEMPORAL_RE = re.compile(r"\b(first|last|when|before|after|most recent|originally|initially|latest)\b", re.I)


def is_temporal(query: str) -> bool:
    return bool(TEMPORAL_RE.search(query))


class AgentOSFactClassifier:
    """Faithful AgentOS rule: pairs only when the query says i/my/me/user, and a predicate matches
    when its lowercased name is a substring of the lowercased query."""

    name = "agentos"

    def classify(self, query: str) -> tuple[list[tuple[str, str]], bool]:
        q = query.lower()
        words = set(re.findall(r"[a-z]+", q))
        temporal = is_temporal(query)
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
        temporal = is_temporal(query)
        q = query.lower()
        words = set(re.findall(r"[a-z']+", q))
        subjects = []
        if words & (FIRST_PERSON | {"i'm", "i've", "am"}):
            subjects.append("user")
        for m in _POSSESSIVE_NAME.finditer(query):
            name = (m.group(1) or m.group(2) or "")
            if name and name not in NOT_NAMES:
                subjects.append(name.lower())
        if not subjects:
            return [], temporal
        preds = [p for p in PREDICATES if p in _CUES_RE and _CUES_RE[p].search(q)]
        return [(s, p) for s in dict.fromkeys(subjects) for p in preds], temporal
