"""A store location (`--db PATH`, RETRIEVAL_DB) that is a regular file, or lies under one, is refused in words by the
one place a LanceDB connection is made (`retrieval.store.remote.open_db`): every CLI command (read from
`build_parser()`, so a new one is covered) and the app's Home say the path is a file, not a store folder, and
how to point it elsewhere, never `[Errno 17] File exists` nor "the cases table is unreadable"; the file is
left as it was (probe: every command printed the bare errno)."""
from __future__ import annotations

import pytest

from cligen import build_store, commands, run, sample_argv
from retrieval.workspace import Workspace

SAID = "is a file, not a store folder: point --db (or RETRIEVAL_DB) at a folder"
NEVER_OPENS_DB = {"eval": "evaluates a named dataset in its own cached store, never --db"}
CONTENT = b"my notes, not a store\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("location")
    db, files = build_store(root)
    return root, db, files


@pytest.fixture
def env(monkeypatch):
    for k in ("RETRIEVAL_MODE", "RETRIEVAL_AUTH", "RETRIEVAL_POLICY", "RETRIEVAL_USER", "RETRIEVAL_TRACEBACK",
              "RETRIEVAL_DB"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


@pytest.mark.parametrize("under", [False, True], ids=["the-file", "under-the-file"])
@pytest.mark.parametrize("command", sorted(commands()))
def test_every_command_says_a_file_is_not_a_store_folder(built, env, tmp_path, command, under):
    _, db, files = built
    plain = tmp_path / "notes.txt"
    plain.write_bytes(CONTENT)
    where = plain / "db" if under else plain
    argv = [str(where) if a == str(db) else a for a in sample_argv(command, commands()[command], db, files)]
    out = run(argv)
    assert plain.read_bytes() == CONTENT
    if command in NEVER_OPENS_DB:
        return
    assert str(where) in argv
    assert out.rc == 2, (command, out.out[-300:], out.err[-800:])
    assert len(out.error_lines) == 1, out.err[-800:]
    line = out.error_lines[0]
    assert SAID in line and str(plain) in line, line
    assert "Errno" not in line and "unreadable" not in line and "Error:" not in line, line


def test_the_workspace_the_app_opens_refuses_a_file(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_bytes(CONTENT)
    ws = Workspace(str(plain))  # what ui/cache get_workspace builds: opening is lazy
    with pytest.raises(ValueError, match="is a file, not a store folder: point --db"):
        ws.status()
    with pytest.raises(ValueError, match="lies under .*notes.txt'?, which is a file"):
        Workspace(str(plain / "db")).status()
    assert plain.read_bytes() == CONTENT


def test_home_says_the_store_location_is_a_file(tmp_path, env):
    from apphelpers import open_page

    plain = tmp_path / "notes.txt"
    plain.write_bytes(CONTENT)
    env.setenv("RETRIEVAL_DB", str(plain))
    env.setenv("RETRIEVAL_EMBEDDER", "hashing")
    at = open_page(None, 60)
    assert not at.exception, at.exception
    text = " ".join(e.value for e in at.error)
    assert "is a file, not a store folder" in text and "Errno" not in text and "delete the folder" not in text, text
    assert plain.read_bytes() == CONTENT
