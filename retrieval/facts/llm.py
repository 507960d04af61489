"""Fact extraction by a text generator (SPEC §7), kept honest: an object must be a literal span.

A model paraphrases; the fact graph exists to keep literal values, so anything the model returns
that is not word for word in the text is dropped with a warning rather than stored.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING

from retrieval.types import utcnow
from retrieval.facts.model import PREDICATES, Fact

if TYPE_CHECKING:
    from retrieval.models.generators import TextGenerator

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

    def __init__(self, llm: TextGenerator) -> None:
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
