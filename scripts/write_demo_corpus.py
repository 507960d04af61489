"""Write data/demo/traces.jsonl from the hand-written notes in scripts/demo_corpus/.

Deterministic: the same source gives the same file. Times of day come from a hash of the id.
Run: .venv/bin/python scripts/write_demo_corpus.py
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from demo_corpus import maya, priya, tomas  # noqa: E402

OUT = ROOT / "data" / "demo" / "traces.jsonl"


def timestamp(trace_id: str, date: str) -> str:
    h = hashlib.blake2b(trace_id.encode(), digest_size=4).digest()
    return f"{date}T{8 + h[0] % 14:02d}:{h[1] % 60:02d}:00+00:00"


def main() -> None:
    rows, seen = [], set()
    for module in (maya, tomas, priya):
        for tid, date, text, extra in module.TRACES:
            if tid in seen:
                raise SystemExit(f"duplicate id {tid}")
            seen.add(tid)
            rec = {"id": tid, "content": text, "scope": "user", "scope_id": module.SCOPE,
                   "created_at": timestamp(tid, date), "source_type": "user_statement"}
            rec.update(extra)
            rows.append(rec)
    rows.sort(key=lambda r: (r["scope_id"], r["created_at"], r["id"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"wrote {len(rows)} traces to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
