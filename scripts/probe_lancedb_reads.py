"""Why the store keeps a row copy past 1,000 rows: LanceDB's random reads cost per column, not per row.

On a store built by scripts/bench_scale.py (`--root` keeps it): one column read for 60 and for 600
random rows, all columns for 60 rows, and the same 60 rows from the in-memory row copy.

  python scripts/probe_lancedb_reads.py --db /tmp/bench_scale_1m/db --out docs/probe_lancedb_reads.json
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def p50(fn, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", default="docs/probe_lancedb_reads.json")
    args = ap.parse_args()
    import lancedb

    from retrieval.store.row_copy import RowCache

    tbl = lancedb.connect(args.db).open_table("traces")
    n = tbl.count_rows()
    cols = [f.name for f in tbl.schema if f.name != "vector"]
    rng = random.Random(1)
    rows = lambda k: [rng.randrange(n) for _ in range(k)]
    res = {"command": "python " + " ".join(sys.argv), "rows": n, "columns": len(cols) + 1,
           "one_column_60_rows_ms": p50(lambda: tbl.take_offsets(rows(60)).select(["confidence"]).to_arrow()),
           "one_column_600_rows_ms": p50(lambda: tbl.take_offsets(rows(600)).select(["confidence"]).to_arrow()),
           "all_columns_60_rows_ms": p50(lambda: tbl.take_offsets(rows(60)).select(cols + ["vector"]).to_arrow())}
    t0 = time.perf_counter()
    copy = RowCache(tbl, cols)
    res["row_copy_build_s"] = round(time.perf_counter() - t0, 1)
    ids = copy.data.column("id")
    res["row_copy_60_rows_ms"] = p50(lambda: copy.rows([ids[i].as_py() for i in rows(60)]))
    print(json.dumps(res, indent=2))
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
