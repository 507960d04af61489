"""Labelled datasets as (traces, labelled queries): BEIR folders, LoCoMo conversations, the demo set.

Paths are arguments; evaluation data never lives in this repository.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, UTC
from pathlib import Path

from retrieval.types import MemoryTrace, Scope
from retrieval.eval.runner import LabelledQuery

BEIR_SCOPE = Scope("organization", "beir")
BEIR_TIME = datetime(2020, 1, 1, tzinfo=UTC)


def load_beir(path: str | Path, split: str = "test") -> tuple[list[MemoryTrace], list[LabelledQuery]]:
    """corpus.jsonl (title + text → content), queries.jsonl, qrels/<split>.tsv; only judged queries."""
    path = Path(path)
    for need in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (path / need).is_file():
            raise ValueError(f"{path} is not a BEIR folder: {need} is missing")
    traces = []
    with open(path / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            text = " ".join(x for x in (r.get("title", "").strip(), r.get("text", "").strip()) if x)
            if text:
                traces.append(MemoryTrace(id=str(r["_id"]), content=text, scope=BEIR_SCOPE.scope,
                                          scope_id=BEIR_SCOPE.scope_id, type="semantic", created_at=BEIR_TIME,
                                          source_type="document"))
    qrels = _beir_qrels((path / f"qrels/{split}.tsv").read_bytes(), f"qrels/{split}.tsv")
    queries = _beir_queries((path / "queries.jsonl").read_bytes(), qrels, BEIR_SCOPE)
    return traces, sorted(queries, key=lambda q: (len(q.qid), q.qid))


_DIA = re.compile(r"D(\d+):(\d+)")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def parse_session_date(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" → aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def parse_evidence(items) -> list[str]:
    """Lenient: "D8:6; D9:17" → two ids; "D", "D:11:26" → skipped; "D30:05" → "D30:5"."""
    out = []
    for item in items or []:
        for m in _DIA.finditer(str(item)):
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def load_locomo(path: str | Path) -> tuple[list[MemoryTrace], list[LabelledQuery]]:
    """Each conversation a scope; each dialogue turn a trace ("Speaker: text", session date), in thread
    `session_N` at its turn's position there (what the context setting reads)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise ValueError(f"{path} holds no LoCoMo .json file")
        path = files[0]
    data = json.loads(path.read_text(encoding="utf-8"))
    traces, queries = [], []
    for n, sample in enumerate(data):
        sid = str(sample.get("sample_id", f"conv-{n + 1}"))
        scope = Scope("thread", sid)
        conv = sample["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        known = set()
        for s in sessions:
            date = parse_session_date(conv[f"session_{s}_date_time"])
            for pos, turn in enumerate(conv[f"session_{s}"]):
                m = _DIA.fullmatch(turn["dia_id"].strip())
                if not m:
                    continue
                did = f"D{int(m.group(1))}:{int(m.group(2))}"
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                known.add(did)
                traces.append(MemoryTrace(id=f"{sid}/{did}", content=text, scope=scope.scope, scope_id=sid,
                                          created_at=date, source_type="dialogue_turn", thread=f"session_{s}",
                                          position=pos))
        for i, qa in enumerate(sample.get("qa", [])):
            ev = [e for e in parse_evidence(qa.get("evidence")) if e in known]
            if not ev:
                continue
            queries.append(LabelledQuery(f"{sid}#{i}", qa["question"], {f"{sid}/{e}": 1.0 for e in ev}, scope,
                                         LOCOMO_CATEGORIES.get(qa.get("category"), str(qa.get("category")))))
    return traces, queries


def judgments_from_bytes(data: bytes, source: str = "the uploaded judgments") -> list[LabelledQuery]:
    """Judgments JSONL from an upload (same format as data/demo/judgments.jsonl); errors name `source`."""
    from retrieval.judgments.io import parse_labelled

    return parse_labelled(data, source)


def _beir_qrels(data: bytes, name: str) -> dict[str, dict[str, float]]:
    """A qrels file through the one qrels parser (`judgments.io.parse_qrels`: BEIR or TREC); evaluation
    refuses a bad line where a case import reports it and keeps the rest."""
    from retrieval.judgments.io import parse_qrels, refuse_bad_lines

    qrels, errors = parse_qrels(data, name=name)
    refuse_bad_lines(errors)
    return {q: {d: float(g) for d, g in docs.items()} for q, docs in qrels.items()}


def _beir_queries(data: bytes, qrels: dict[str, dict[str, float]], scope: Scope | None) -> list[LabelledQuery]:
    """BEIR queries.jsonl through the one queries parser (`judgments.io.parse_queries`); judged queries only."""
    from retrieval.judgments.io import parse_queries, refuse_bad_lines

    texts, errors = parse_queries(data, name="queries.jsonl")
    refuse_bad_lines(errors)
    return [LabelledQuery(qid, text, qrels[qid], scope) for qid, text in texts.items() if qid in qrels]


def beir_judgments(queries_jsonl: bytes, qrels_tsv: bytes, scope: Scope | None) -> list[LabelledQuery]:
    """BEIR queries.jsonl + qrels .tsv (uploaded) → labelled queries in `scope`; judged queries only."""
    out = _beir_queries(queries_jsonl, _beir_qrels(qrels_tsv, "qrels"), scope)
    if not out:
        raise ValueError("no query in queries.jsonl has a judgment in the qrels file; are they from the same dataset?")
    return out


def load_demo() -> tuple[list[MemoryTrace], list[LabelledQuery]]:
    from retrieval.ingest.demo import JUDGMENTS, load_demo_traces
    from retrieval.eval.runner import load_judgments

    return load_demo_traces(), load_judgments(JUDGMENTS)


def load_dataset(spec: str) -> tuple[str, list[MemoryTrace], list[LabelledQuery]]:
    """`beir:PATH`, `locomo:PATH` or `demo` → (name, traces, queries)."""
    kind, _, path = spec.partition(":")
    if kind == "beir" and path:
        return f"beir-{Path(path).name}", *load_beir(path)
    if kind == "locomo" and path:
        return f"locomo-{Path(path).stem}", *load_locomo(path)
    if kind == "demo":
        return "demo", *load_demo()
    raise ValueError(f"dataset {spec!r}: use beir:PATH, locomo:PATH or demo")
