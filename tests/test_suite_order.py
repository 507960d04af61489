"""The suite's own scheduling: test files longest first, each file whole and in its own order (tests/conftest.py),
from the seconds `scripts/test_durations.py` reads out of a JUnit report."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from conftest import ROOT, longest_files_first


@dataclass
class Item:
    nodeid: str


def test_files_run_longest_first_each_whole_and_in_its_own_order():
    items = [Item(n) for n in ("tests/test_a.py::one", "tests/test_b.py::one", "tests/test_a.py::two",
                               "tests/test_c.py::one", "tests/test_new.py::one", "tests/test_b.py::two")]
    longest_files_first(items, {"tests/test_a.py": 1.0, "tests/test_b.py": 30.0, "tests/test_c.py": 5.0})
    assert [i.nodeid for i in items] == ["tests/test_b.py::one", "tests/test_b.py::two",  # 30 s
                                         "tests/test_c.py::one", "tests/test_new.py::one",  # 5 s; the median, 5 s
                                         "tests/test_a.py::one", "tests/test_a.py::two"]


def test_durations_are_read_per_file_from_a_junit_report(tmp_path):
    report = tmp_path / "suite.xml"
    report.write_text('<testsuites><testsuite name="pytest">'
                      '<testcase classname="tests.test_x" name="a" time="1.25"/>'
                      '<testcase classname="tests.test_x.TestGroup" name="b" time="2.5"/>'
                      '<testcase classname="tests.test_y" name="c" time="0.05"/>'
                      '</testsuite></testsuites>')
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from test_durations import file_seconds
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert file_seconds(report) == {"tests/test_x.py": 3.8, "tests/test_y.py": 0.1}  # round(3.75, 1): half-even


def test_the_checked_in_durations_name_test_files_with_seconds():
    seconds = json.loads((ROOT / "tests" / "durations.json").read_text(encoding="utf-8"))
    assert seconds and all(f.startswith("tests/test_") and f.endswith(".py") and v >= 0 for f, v in seconds.items())
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "test_durations.py"), "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "JUnit" in out.stdout
