"""Non-interference, generated (issue 32): a visitor limited to `user:maya` sees the same on S and on S′.

S holds three users' notes, cases and snapshots; S′ is S with every scope but maya's removed, built by the
same writes (tests/nonint.py: same table versions, hashing embedder, fixed clock). For every page — every
`pages/*.py` and `app.py`, found on disk, so a new page is covered with no edit — and for every CLI read
command — every subcommand of `retrieval.cli.main.build_parser()` — the visible output on S and on S′ must
be identical after `nonint.normalise` (wall-clock commit and save times inside this test's run, and durations;
nothing else). Each page is opened as maya (proxy sign-in, a policy granting `user:maya`) with the page's
query and scope parameters (`<prefix>q`, `<prefix>scope`, read from its `P = "…"`) and `?asof=` an earlier
version, then again with every toggle in the page body switched on (Changes, the team view, "Show ids"…).

Both statistics settings are built: `store` (a limited visitor's searches still read per-scope statistics:
anything store-wide that shows is a leak — items 1 and 2 of the issue) and `scope`.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrieval.cli.gate import COMMANDS

from apphelpers import ROOT
from nonint import sign_in_as_the_visitor, CASE, POLICY, QUERY, build, chart, normalise

TIMEOUT = 180
PAGES = ["app.py"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
STATISTICS = ("store", "scope")
_ID = re.compile(r'\bid: "[^"]*"\n?')


@pytest.fixture(scope="module", params=STATISTICS)
def stores(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"nonint_{request.param}")
    out = {"t0": datetime.now(UTC)}
    versions = set()
    for name, folder, only in (("S", "s", False), ("S'", "s_maya", True)):
        versions.add(build(str(root / folder), request.param, only))
        out[name] = str(root / folder)
    (out["as_of"],) = versions  # S and S′ have the same versions
    return out


DOWNLOADS: dict[str, bytes] = {}  # media file id -> the bytes a download button serves


@pytest.fixture
def maya(monkeypatch, tmp_path):
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    keep = MemoryMediaFileStorage.load_and_get_id

    def load(self, data, mimetype, kind, filename=None):
        file_id = keep(self, data, mimetype, kind, filename)
        DOWNLOADS[file_id] = data if isinstance(data, bytes) else str(data).encode()
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load)
    sign_in_as_the_visitor(monkeypatch, tmp_path)
    return monkeypatch


def page_params(path: str, as_of: int) -> dict[str, str]:
    """The page's own query and scope parameters (its `P = "x_"` prefix), and an earlier version."""
    m = re.search(r'^P = "([a-z]+_)"', (ROOT / path).read_text(), re.M)
    prefix = m.group(1) if m else None
    params = {"asof": str(as_of)}
    if prefix:
        params.update({f"{prefix}q": QUERY, f"{prefix}scope": "user:maya"})
    return params


def visible(at) -> list[str]:
    """Everything a page shows, element by element, in order: each element's type and its message (labels,
    values, options, table cells, chart data), without the element ids Streamlit derives from them."""
    out = []
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        if node.type == "arrow_data_frame" or node.type == "dataframe":
            out.append("dataframe: " + node.value.to_csv())
        elif node.type == "plotly_chart":
            out.append("chart: " + chart(proto.spec))
        elif node.type == "download_button":
            served = DOWNLOADS.get(proto.url.rsplit("/", 1)[-1].split(".")[0], b"?")
            out.append(f"download: {proto.label}: " + served.decode("utf-8", "replace"))
        else:
            out.append(f"{node.type}: " + _ID.sub("", str(proto)))
    return out


def render(maya, db: str, path: str, as_of: int) -> list[list[str]]:
    from streamlit.testing.v1 import AppTest

    maya.setenv("RETRIEVAL_DB", db)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if path != "app.py":
        at.switch_page(path)
    for k, v in page_params(path, as_of).items():
        at.query_params[k] = v
    at.run()
    shots = [visible(at)]
    body = [t for t in at.main.toggle if not t.value]
    if body:
        for t in body:
            t.set_value(True)
        at.run()
        shots.append(visible(at))
    assert not at.exception, at.exception
    return shots


def differences(on_s: list[list[str]], on_s1: list[list[str]], stores) -> list[tuple[str, str]]:
    """The elements that differ after normalising, over every rendering of the page."""
    window, uris = (stores["t0"], datetime.now(UTC)), (stores["S"], stores["S'"])
    out: list[tuple[str, str]] = [("renderings", f"{len(on_s)} vs {len(on_s1)}")] if len(on_s) != len(on_s1) else []
    for a, b in zip(on_s, on_s1):
        a, b = [normalise(x, window, uris) for x in a], [normalise(x, window, uris) for x in b]
        out += [(x, y) for x, y in zip(a, b) if x != y]
        if len(a) != len(b):
            out.append(("\n".join(a[len(b):]) or "—", "\n".join(b[len(a):]) or "—"))
    return out


def report(diff: list[tuple[str, str]]) -> str:
    import difflib

    def one(x: str, y: str) -> str:
        if x.count("\n") < 3:
            return f"S : {x}\nS′: {y}"
        return "\n".join(difflib.unified_diff(x.splitlines(), y.splitlines(), "S", "S′", n=1, lineterm=""))

    return "S and S′ differ:\n" + "\n---\n".join(one(x, y) for x, y in diff[:8])


# Differences found by this test and not fixed yet: page -> (the element's first line, why). None now: the audit
# log, once listed here, shows a limited visitor their part of every write that touched their scopes.
KNOWN: dict[str, tuple[str, str]] = {}


@pytest.mark.parametrize("path", PAGES)
def test_every_page_shows_a_limited_visitor_the_same_on_s_and_on_s_without_other_scopes(stores, maya, path):
    diff = differences(render(maya, stores["S"], path, stores["as_of"]),
                       render(maya, stores["S'"], path, stores["as_of"]), stores)
    head, why = KNOWN.get(path, (None, ""))
    known = [d for d in diff if head and d[0].startswith(head) and d[1].startswith(head)]
    assert not [d for d in diff if d not in known], report(diff)
    if known:
        pytest.xfail(f"known, not fixed here: {why}")


def test_the_page_list_is_found_on_disk():
    assert len(PAGES) == 1 + len(list((ROOT / "pages").glob("*.py"))) >= 10
    assert Path(ROOT / "pages" / "2_Inspect.py").is_file() and "pages/2_Inspect.py" in PAGES


# ---------------------------------------------------------------- the CLI's read commands
# The CLI's own command table (retrieval/cli/gate.py COMMANDS) says which commands read; one that may write
# (always, or with some flags: `tag NAME`, `doctor --repair`) is the write gate's, tested in test_cli_gate.py.
CLI_WRITES = {name for name, kind in COMMANDS.items() if kind.writes is not False}
CLI_READS = {name for name, kind in COMMANDS.items() if kind.writes is False}
# Read commands with no way to name a scope or a case: the CLI has no sign-in, so whoever runs them holds the
# whole store (the operator). They are listed, with why, rather than run as a limited visitor.
STORE_WIDE = {"eval": "reads a labelled dataset from disk, not the store"}
CLI_VALUES = {"text": QUERY, "case": CASE, "name": CASE, "a": "<first snapshot>", "b": "<second snapshot>"}


def subcommands() -> dict[str, object]:
    """Every leaf subcommand of the CLI ("case export") with its parser."""
    import argparse

    from retrieval.cli.main import build_parser

    out = {}

    def walk(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[" ".join(path)] = p
        for s in subs:
            for name, sp in s.choices.items():
                walk(sp, path + (name,))

    walk(build_parser(), ())
    return out


def test_every_cli_subcommand_is_classified_read_or_write():
    names = set(subcommands())
    assert names == CLI_READS | CLI_WRITES and not CLI_READS & CLI_WRITES, (names - CLI_READS - CLI_WRITES,
                                                                            (CLI_READS | CLI_WRITES) - names)
    assert set(STORE_WIDE) <= CLI_READS


def cli_argv(name: str, parser, db: str, out_dir: Path, snapshots: list[str], as_of: int) -> list[list[str]]:
    """The argument lists a limited visitor runs `name` with: its required arguments from CLI_VALUES, the visitor's
    scope or case where it takes one, an output folder where it writes one; again with `--as-of` and `--json`
    where it takes them."""
    base = name.split()
    opts = {o: a for a in parser._actions for o in a.option_strings}
    for a in parser._actions:
        if a.option_strings or a.dest == "help":
            continue
        value = CLI_VALUES[a.dest]  # a KeyError here: give the new positional a value above
        base.append({"<first snapshot>": snapshots[0], "<second snapshot>": snapshots[1]}.get(value, value))
    base += ["--db", db, "--embedder", "hashing"] if "--embedder" in opts else ["--db", db]
    if "--scope" in opts:
        base += ["--scope", "user:maya"]
    if "--case" in opts:
        base += ["--case", CASE]
    if "--out" in opts:
        base += ["--out", str(out_dir)]
    runs = [base]
    if "--as-of" in opts:
        runs.append(base + ["--as-of", str(as_of)])
    if "--from" in opts:
        runs = [r + ["--from", str(as_of)] for r in runs]
    if "--json" in opts:
        runs += [r + ["--json"] for r in runs]
    return runs


def run_cli(argv: list[str], out_dir: Path) -> str:
    import contextlib
    import io
    import shutil

    from retrieval.cli.main import main

    shutil.rmtree(out_dir, ignore_errors=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    files = sorted(out_dir.rglob("*")) if out_dir.exists() else ([out_dir] if out_dir.is_file() else [])
    written = "".join(f"\n== {f.relative_to(out_dir) if f != out_dir else 'out'}\n{f.read_text()}"
                      for f in files if f.is_file())
    return f"rc {rc}\n{out.getvalue()}{written}"


def snapshot_ids(db: str) -> list[str]:
    from retrieval.judgments.store import JudgmentStore

    return [s.id for s in JudgmentStore(db).snapshots(CASE)]


@pytest.mark.parametrize("name", sorted(CLI_READS - set(STORE_WIDE)))
def test_every_cli_read_command_tells_a_limited_visitor_the_same_on_s_and_on_s_without_other_scopes(
        stores, maya, tmp_path, name, request):
    parser = subcommands()[name]
    said = {}
    for which in ("S", "S'"):
        db = stores[which]
        said[which] = [run_cli(argv, tmp_path / "out") for argv in
                       cli_argv(name, parser, db, tmp_path / "out", snapshot_ids(db), stores["as_of"])]
    diff = differences([said["S"]], [said["S'"]], stores)
    assert not diff, report(diff)
    assert all(s.startswith("rc 0") for s in said["S'"]), said["S'"]


def test_the_comparison_can_fail_and_the_changes_view_was_compared(stores, maya):
    """Not vacuous: a visitor of every scope (no sign-in) is shown different things on S and S′; and the limited
    visitor's second Inspect rendering holds the Changes view with its idf sentences."""
    maya.setenv("RETRIEVAL_AUTH", "none")
    maya.delenv("RETRIEVAL_POLICY")
    assert differences(render(maya, stores["S"], "app.py", stores["as_of"]),
                       render(maya, stores["S'"], "app.py", stores["as_of"]), stores)
    maya.setenv("RETRIEVAL_AUTH", "proxy")
    maya.setenv("RETRIEVAL_POLICY", str(Path(stores["S"]).parent / "policy.toml"))
    Path(stores["S"]).parent.joinpath("policy.toml").write_text(POLICY)
    shots = render(maya, stores["S'"], "pages/2_Inspect.py", stores["as_of"])
    assert len(shots) == 2 and any("BM25 idf of" in x for x in shots[1])
    assert not any("BM25 idf of" in x for x in shots[0])
