"""Write tests/durations.json — each test file's measured seconds — from a pytest JUnit XML report.

`tests/conftest.py` orders the files longest first and `make test` hands them to the workers in that order
(`--no-loadscope-reorder`), so the long files start early and short ones fill the end instead of one worker running a
long browser file alone while the other waits. The numbers only order the files: stale ones cost time, never a
result. Refresh after the suite changes shape:

    .venv/bin/python -m pytest -n auto --dist loadfile --junitxml=/tmp/suite.xml
    .venv/bin/python scripts/test_durations.py /tmp/suite.xml
"""
from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def file_seconds(report: Path) -> dict[str, float]:
    """Seconds per test file (`tests/test_x.py`), setup and teardown included, from a JUnit XML report."""
    total: dict[str, float] = {}
    for case in ET.parse(report).iter("testcase"):
        module = (case.get("classname") or "").split(".")
        name = next((m for m in reversed(module) if m.startswith("test_")), None)
        if name:
            key = f"tests/{name}.py"
            total[key] = total.get(key, 0.0) + float(case.get("time") or 0.0)
    return {f: round(s, 1) for f, s in sorted(total.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a JUnit XML report of a whole-suite run (pytest --junitxml)")
    args = ap.parse_args()
    seconds = file_seconds(args.report)
    if not seconds:
        raise SystemExit(f"error: {args.report} holds no test case of a tests/test_*.py file; run the whole suite "
                         "with --junitxml and pass that file")
    OUT.write_text(json.dumps(seconds, indent=0, sort_keys=True) + "\n")
    print(f"{len(seconds)} files, {sum(seconds.values()):.0f} s in all, written to {OUT}")


if __name__ == "__main__":
    main()
