"""Run a table of nasty inputs through the file loaders, then ingest what they keep.

    .venv/bin/python scripts/probe_loaders.py            # this checkout
    PYTHONPATH=DIR .venv/bin/python scripts/probe_loaders.py  # another copy of the package (a "before" run)

A failure is: an exception other than ValueError from a loader; any exception from
`Workspace.ingest` of the traces a loader returned (the loader promised they were valid); fewer
good traces kept than the input had; a scope leak (one scope's upload moving another's trace); or a
zip that takes more than 64 MB of Python memory to refuse. Prints one row per category.
"""
from __future__ import annotations

import argparse
import io
import json
import struct
import tempfile
import tracemalloc
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20


def deflate_zeros(total: int, chunk: int = MB) -> tuple[bytes, int]:
    """A raw deflate stream of `total` zero bytes built in ~0.1 s, and its CRC-32.

    After a full flush the compressor starts afresh, so one flushed block repeated is a valid stream.
    """
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = co.compress(b"\0" * chunk) + co.flush(zlib.Z_FULL_FLUSH)
    crc, zero = 0, b"\0" * chunk
    for _ in range(total // chunk):
        crc = zlib.crc32(zero, crc)
    return block * (total // chunk) + co.flush(), crc


def raw_zip(name: str, payload: bytes, crc: int, size: int, *, method: int = 8, flags: int = 0) -> bytes:
    """A one-member zip written by hand, so the declared size, CRC and flags can lie."""
    nb = name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0x21, crc, len(payload), size,
                        len(nb), 0) + nb
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method, 0, 0x21, crc, len(payload),
                          size, len(nb), 0, 0, 0, 0, 0, 0) + nb
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(payload), 0)
    return local + payload + central + end


def beir_zip(lines: list[str], name: str = "ds/corpus.jsonl") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, "\n".join(lines) + "\n")
    return buf.getvalue()


def J(**rec) -> str:
    return json.dumps(rec)


GOOD = [J(id="g1", content="a good line"), J(id="g2", content="another good line")]


def jsonl(*bad: str) -> bytes:
    """Good line, the bad lines, good line: the two good ones must survive."""
    return "\n".join([GOOD[0], *bad, GOOD[1]]).encode("utf-8", "surrogatepass")


def cases() -> dict[str, list[tuple[str, str, bytes, dict, int]]]:
    """category → [(label, file name, bytes, loader kwargs, good traces expected)]."""
    deep = "[" * 100_000
    big_int = "1" * 5000
    table: dict[str, list] = {"json-numbers": [], "json-structure": [], "dates": [], "text-fields": [],
                              "csv": [], "zip": []}
    for label, line in [
        ("retrieval_count 1e400", '{"id":"x","content":"probe text","retrieval_count":1e400}'),
        ("retrieval_count 2**64", J(id="x", content="probe text", retrieval_count=2**64)),
        ("retrieval_count 1.5", J(id="x", content="probe text", retrieval_count=1.5)),
        ("confidence 1e400", '{"id":"x","content":"probe text","confidence":1e400}'),
        ("stability_ms Infinity", '{"id":"x","content":"probe text","stability_ms":Infinity}'),
        ("valence NaN", '{"id":"x","content":"probe text","valence":NaN}'),
        ("5,000-digit int", f'{{"id":"x","content":"probe text","retrieval_count":{big_int}}}'),
        ("5,000-digit int as id", f'{{"id":{big_int},"content":"probe text"}}'),
        ("4,000-digit int as id", f'{{"id":{"1" * 4000},"content":"probe text"}}'),
        ("10**30 as confidence", J(id="x", content="probe text", confidence=10**30)),
        ("bool as retrieval_count", J(id="x", content="probe text", retrieval_count=True)),
    ]:
        table["json-numbers"].append((label, "n.jsonl", jsonl(line), {}, 2))
    for label, line in [
        ("100k [", deep),
        ("100k {\"a\":", '{"a":' * 100_000),
        ("deep list in tags", J(id="x", content="probe text", tags=json.loads("[" * 900 + "]" * 900))),
        ("dict as id", J(id={"a": 1}, content="probe text")),
        ("list as scope_id", J(id="x", content="probe text", scope_id=["u"])),
        ("object as tag", J(id="x", content="probe text", tags=[{"a": 1}])),
        ("json array line", "[1,2,3]"),
        ("bare string line", '"just text"'),
    ]:
        table["json-structure"].append((label, "s.jsonl", jsonl(line), {}, 2))
    sep = {"U+2028": "\u2028", "U+2029": "\u2029", "U+0085": "\u0085", "form feed": "\x0c", "VT": "\x0b"}
    for label, ch in sep.items():
        raw = '{"id":"x","content":"a' + ch + 'b"}'
        table["json-structure"].append((f"raw {label} inside a string", "s.jsonl", jsonl(raw), {}, 3))
    table["json-structure"].append(("CRLF lines + BOM", "s.jsonl", b"\xef\xbb\xbf" + jsonl().replace(b"\n", b"\r\n"),
                                    {}, 2))
    for label, value in [
        ("0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00+01:00"),
        ("9999-12-31T23:00-05:00", "9999-12-31T23:00-05:00"),
        ("9999-12-31", "9999-12-31"), ("0001-01-01", "0001-01-01"), ("1500-01-01", "1500-01-01"),
        ("epoch 1e20", 1e20), ("epoch -1e20", -1e20), ("epoch 1e300", 1e300), ("epoch 'nan'", "nan"),
        ("epoch ms 1e15", 1e15), ("epoch '1e20' text", "1e20"), ("year 2300", "2300-01-01T00:00:00Z"),
    ]:
        for key in ("created_at", "last_accessed_at"):
            table["dates"].append((f"{key} {label}", "d.jsonl", jsonl(J(id="x", content="probe text", **{key: value})),
                                   {}, 2))
    for label, rec in [
        ("lone surrogate in content", '{"id":"x","content":"a\\ud800b"}'),
        ("lone surrogate in id", '{"id":"x\\udfff","content":"probe text"}'),
        ("lone surrogate in tags", '{"id":"x","content":"probe text","tags":["\\ud83d"]}'),
        ("lone surrogate in title", '{"id":"x","content":"probe text","title":"\\ud800"}'),
        ("lone surrogate in scope_id", '{"id":"x","content":"probe text","scope_id":"\\ud800"}'),
        ("NUL in id", '{"id":"a\\u0000b","content":"probe text"}'),
        ("NUL in content", '{"id":"x","content":"alpha\\u0000beta"}'),
        ("ESC in id", '{"id":"a\\u001bb","content":"probe text"}'),
        ("newline in id", '{"id":"a\\nb","content":"probe text"}'),
        ("U+2028 in id", '{"id":"a\\u2028b","content":"probe text"}'),
        ("NUL in scope_id", '{"id":"x","content":"probe text","scope_id":"u\\u0000"}'),
        ("quote in scope_id", J(id="x", content="probe text", scope_id="o'brien")),
        ("10k-char id", J(id="i" * 10_000, content="probe text")),
        ("emoji-only content", J(id="x", content="👍")),
    ]:
        good = 3 if label in ("quote in scope_id", "emoji-only content") else 2
        table["text-fields"].append((label, "t.jsonl", jsonl(rec), {}, good))
    head = "id,content,retrieval_count\n"
    for label, body, good in [
        ("field over 128 KiB", f"g1,ok,0\nbig,{'x' * 200_000},0\ng2,ok,0\n", 3),
        ("quoted field over 128 KiB", f'g1,ok,0\nbig,"{"x" * 200_000}",0\ng2,ok,0\n', 3),
        ("unclosed quote mid-file", 'g1,ok,0\nbad,"unclosed,0\ng2,ok,0\ng3,ok,0\n', 3),
        ("unclosed quote on last line", 'g1,ok,0\ng2,ok,0\nbad,"unclosed,0\n', 2),
        ("quote then text", 'g1,ok,0\nbad,"x"y,0\ng2,ok,0\n', 2),
        ("extra unquoted comma", "g1,ok,0\nbad,hello, world,0\ng2,ok,0\n", 2),
        ("5,000-digit retrieval_count", f"g1,ok,0\nbad,c,{big_int}\ng2,ok,0\n", 2),
        ("retrieval_count 1e400", "g1,ok,0\nbad,c,1e400\ng2,ok,0\n", 2),
        ("bare CR in a row", "g1,ok,0\nbad,a\rb,0\ng2,ok,0\n", 2),
        ("NUL after 4 KiB", "g1," + "x" * 5000 + ",0\nbad,alpha\x00beta,0\ng2,ok,0\n", 2),
        ("U+2028 in a field", "g1,ok,0\ng3,alpha\u2028beta,0\ng2,ok,0\n", 3),
        ("multi-line quoted field", 'g1,ok,0\ng3,"line one\nline two",0\ng2,ok,0\n', 3),
    ]:
        table["csv"].append((label, "c.csv", (head + body).encode("utf-8"), {}, good))
    table["csv"].append(("header with unclosed quote", "c.csv", b'id,"content\ng1,ok\n', {}, 0))
    payload, crc = deflate_zeros(600 * MB)
    good_zip = beir_zip(GOOD)
    crc_bad = bytearray(good_zip)
    crc_bad[14:18] = b"\0\0\0\0"  # the local header's CRC; the central one lies the same way below
    at = bytes(crc_bad).rfind(b"PK\x01\x02")
    crc_bad[at + 16:at + 20] = b"\0\0\0\0"
    enc = raw_zip("corpus.jsonl", b"x" * 40, 0, 40, method=0, flags=1)
    aes = raw_zip("corpus.jsonl", b"x" * 40, 0, 40, method=99)
    for label, data, good in [
        ("good BEIR zip", good_zip, 2),
        ("bad CRC", bytes(crc_bad), 0),
        ("encrypted", enc, 0),
        ("AES (method 99)", aes, 0),
        ("truncated", good_zip[: len(good_zip) // 2], 0),
        ("PK + random bytes", b"PK\x03\x04" + bytes(range(256)) * 4, 0),
        ("600 MB bomb, honest sizes", raw_zip("corpus.jsonl", payload, crc, 600 * MB), 0),
        ("600 MB bomb, declared 1 KB", raw_zip("corpus.jsonl", payload, crc, 1000), 0),
        ("__MACOSX shadow first", _macosx_zip(), 2),
    ]:
        table["zip"].append((label, "z.zip", data, {}, good))
    return table


def _macosx_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("__MACOSX/._corpus.jsonl", b"\x00\x05\x16\x07binary resource fork")
        z.writestr("ds/corpus.jsonl", "\n".join(GOOD) + "\n")
    return buf.getvalue()


def run() -> list[tuple[str, int, int, list[str]]]:
    from retrieval.ingest.loaders import load_file
    from retrieval.models import HashingEmbedder
    from retrieval.workspace.core import Workspace

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for category, items in cases().items():
            notes = []
            for n, (label, name, data, kw, good) in enumerate(items):
                tracemalloc.start()
                try:
                    rep = load_file(name, data, **kw)
                except ValueError:
                    rep = None
                except Exception as exc:  # the probe's whole point: anything else is a failure
                    notes.append(f"{label}: loader raised {type(exc).__name__}: {str(exc)[:80]}")
                    tracemalloc.stop()
                    continue
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                if peak > 64 * MB:
                    notes.append(f"{label}: {peak // MB} MB of memory to load")
                kept = len(rep.traces) if rep else 0
                if kept < good:
                    notes.append(f"{label}: {kept} of {good} good line(s) kept")
                if rep and rep.traces:
                    try:  # a fresh store per input, so one failure cannot cascade into the next
                        Workspace(str(Path(tmp) / f"{category}-{n}"), embedder=HashingEmbedder(64)).ingest(rep.traces)
                    except Exception as exc:
                        notes.append(f"{label}: ingest raised {type(exc).__name__}: {str(exc)[:80]}")
            rows.append((category, len(items), len(notes), notes))
        rows.append(_scope_probe(Path(tmp), load_file, Workspace, HashingEmbedder))
    return rows


def _scope_probe(tmp: Path, load_file, Workspace, HashingEmbedder) -> tuple[str, int, int, list[str]]:
    """The same file name (and the same content) uploaded for two scopes must give two traces."""
    notes, tried = [], 0
    for name, a, b in [("notes.txt", b"u1 private note", b"u2 other note"),
                       ("notes.jsonl", J(content="same words").encode(), J(content="same words").encode()),
                       ("notes.csv", b"content\nsame words\n", b"content\nsame words\n")]:
        tried += 1
        ws = Workspace(str(tmp / f"scope-{tried}"), embedder=HashingEmbedder(64))
        try:
            r1 = load_file(name, a, scope="user", scope_id="u1")
            ws.ingest(r1.traces)
            ws.ingest(load_file(name, b, scope="user", scope_id="u2").traces)
            kept = ws.store.get([t.id for t in r1.traces])
            if [(t.scope_id, t.content) for t in kept] != [("u1", t.content) for t in r1.traces]:
                notes.append(f"{name}: u2's upload moved or overwrote u1's trace {r1.traces[0].id}")
        except Exception as exc:
            notes.append(f"{name}: {type(exc).__name__}: {str(exc)[:80]}")
    return ("scope-ids", tried, len(notes), notes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = ap.parse_args(argv)
    rows = run()
    print(f"{'category':<16} {'tried':>5} {'failed':>6}")
    for category, tried, failed, notes in rows:
        print(f"{category:<16} {tried:>5} {failed:>6}")
        for note in notes if args.verbose else notes[:3]:
            print(f"    {note}")
    total = sum(r[2] for r in rows)
    print(f"{'total':<16} {sum(r[1] for r in rows):>5} {total:>6}")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
