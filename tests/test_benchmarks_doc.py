"""docs/BENCHMARKS.md is what scripts/write_benchmarks.py renders from the results (docs/*.json) and the notes
(docs/*-notes.md): a number or a sentence written into the page by hand is lost at the next regeneration, so it
must live in a result file or a notes file (two hand-written sections were lost that way)."""
from __future__ import annotations

import difflib
import importlib.util

from conftest import ROOT


def test_benchmarks_page_is_what_the_results_render():
    spec = importlib.util.spec_from_file_location("write_benchmarks", ROOT / "scripts" / "write_benchmarks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    rendered = module.render()
    diff = "\n".join(list(difflib.unified_diff(page.splitlines(), rendered.splitlines(), "docs/BENCHMARKS.md",
                                               "rendered", lineterm=""))[:40])
    assert page == rendered, ("docs/BENCHMARKS.md differs from what `python scripts/write_benchmarks.py` renders; "
                              "put the change in docs/*.json or a docs/*-notes.md file and regenerate:\n" + diff)
