"""Rules the suite keeps about itself (issue 34 item 7): a test waits for a text or a state, never for a fixed time.

Every call of `page.wait_for_timeout` or `time.sleep` in tests/ (and in ui/serve.py, which drives the app for
the browser tests) is either gone or marked on its line with `# sleep-ok: <why>` — a sleep that is the subject of a test
(holding a child process until a kill -9, a server slower than a timeout) or the poll interval of a deadline
wait (`tests/waits.py`). Anything else waits with `waits.wait_until`, `ui.serve.settled`/`rerun_after`/`painted`,
Playwright's `wait_for`/`wait_for_function` or `expect`."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"#\s*sleep-ok:\s*\S")
# Built from pieces so that this file's own patterns are not a hit.
SLEEP = re.compile(r"\b(?:" + "wait_for" + r"_timeout|time\s*\.\s*" + "sleep" + r"|asyncio\s*\.\s*sleep)\s*\(")
BARE = re.compile(r"^\s*from\s+(?:time|asyncio)\s+import\s+.*\bsleep\b")


def unmarked_sleeps(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each fixed sleep in `text` without a `# sleep-ok: <why>` on its line."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1)
            if (SLEEP.search(line) or BARE.search(line)) and not MARK.search(line)]


def checked_files() -> list[Path]:
    return sorted((ROOT / "tests").rglob("*.py")) + [ROOT / "ui" / "serve.py"]


def test_no_fixed_sleep_waits_in_the_suite():
    found = {str(p.relative_to(ROOT)): hits for p in checked_files() if (hits := unmarked_sleeps(p.read_text()))}
    assert found == {}, ("wait for a text or a state (tests/waits.py, ui.serve.settled/rerun_after/painted, "
                         f"Playwright's wait_for), or mark a sleep that is the subject `# sleep-ok: why`: {found}")


def test_the_rule_sees_each_form_of_a_fixed_sleep_and_honours_only_a_reasoned_mark():
    src = "\n".join([
        "page.wait_for_" + "timeout(800)",
        "    time." + "sleep(1.5)",
        "time . " + "sleep (2)",
        "await asyncio." + "sleep(1)",
        "from time import " + "sleep",
        "time." + "sleep(60)  # sleep-ok: holds the child until the kill",
        "time." + "sleep(1)  # sleep-ok:",
        "page.wait_for_function('() => true')",
        "time.monotonic()",
    ])
    assert [n for n, _ in unmarked_sleeps(src)] == [1, 2, 3, 4, 5, 7]


def test_the_marked_sleeps_left_are_the_known_ones():
    """Each one left is a test's subject or a poll interval; a new one is a choice to review here."""
    marked = sorted((str(p.relative_to(ROOT)), MARK.search(line).string.split("sleep-ok:")[1].strip())
                    for p in checked_files() for line in p.read_text().splitlines()
                    if SLEEP.search(line) and MARK.search(line))
    assert [f for f, _ in marked] == ["tests/fake_llm_server.py", "tests/many_writers_worker.py",
                                      "tests/test_cache.py", "tests/test_crash.py", "tests/test_crash.py",
                                      "tests/waits.py", "tests/waits.py", "ui/serve.py"]
