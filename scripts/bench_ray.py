"""Ray ingest and re-embed throughput with 1 and 2 workers (retrieval.distributed), beside the normal path.

Synthetic traces generated here (deterministic: a Zipf-ish vocabulary, 100 user scopes). For each embedder:
- normal: one process, `MemoryStore.add` (embed in batches of 256, one merge_insert); its ANN index build is
  switched off for the timing, as the Ray path builds none;
- ray, W workers: a local Ray with W CPUs (its start timed apart), `ray_ingest` (rows to W tasks, each worker
  loading the embedder once, `lance_ray.write_lance` appending W fragments in one commit);
- ray re-embed, W workers (hashing only): `ray_reembed` (copy to a staging table, `lance_ray.add_columns`,
  one overwrite commit streamed by the driver).
`hashing` runs at --n (100k): everything but a model. MiniLM runs at --minilm-n: on 2 shared cores it embeds
about 200 sentences/s at best, so 100k would take ~10 min per run; the smaller N gives the same rate.

Run (the `ray` extra; a private network namespace, as Ray binds ~9 ports):
  unshare -n sh -c 'ip link set lo up; .venv-ray/bin/python scripts/bench_ray.py --n 100000 --minilm-n 3000'
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from retrieval.distributed import ray_ingest, ray_reembed, ray_session  # noqa: E402
from retrieval.models.registry import make_embedder  # noqa: E402
from retrieval.store import MemoryStore  # noqa: E402
from retrieval.types import MemoryTrace  # noqa: E402


def synth(n: int, seed: int = 7) -> list[MemoryTrace]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    return [MemoryTrace(id=f"s{i:07d}", content=" ".join(rng.choices(vocab, weights, k=rng.randint(8, 30))),
                        scope="user", scope_id=f"u{i % 100}", created_at=t0 + timedelta(seconds=i)) for i in range(n)]


def normal(root: Path, traces: list[MemoryTrace], spec: str) -> dict:
    emb = make_embedder(spec)
    emb.embed(["warm the model up"])  # model load is not ingest
    store = MemoryStore(str(root / f"normal-{spec}"), embedder=emb)
    store.writes.maintain_index = lambda: None  # type: ignore[method-assign]  # the Ray path builds no ANN index
    t = time.perf_counter()
    store.add(traces)
    s = time.perf_counter() - t
    return {"path": "normal", "embedder": spec, "n": len(traces), "workers": 1, "seconds": round(s, 2),
            "traces_per_s": round(len(traces) / s), "load_avg_1m": round(os.getloadavg()[0], 2)}


def on_ray(root: Path, traces: list[MemoryTrace], spec: str, workers: int, reembed: bool) -> list[dict]:
    db = str(root / f"ray-{spec}-{workers}")
    t = time.perf_counter()
    with ray_session(None, workers):
        start = time.perf_counter() - t
        rep = ray_ingest(db, traces, embedder=make_embedder(spec), workers=workers)
        load = round(os.getloadavg()[0], 2)
        rows = [{"path": "ray ingest", "embedder": spec, "n": len(traces), "workers": workers,
                 "seconds": round(rep.seconds, 2), "traces_per_s": round(len(traces) / rep.seconds),
                 "fragments": rep.fragments, "ray_start_s": round(start, 2), "load_avg_1m": load}]
        if reembed:
            out = ray_reembed(db, make_embedder(spec), workers=workers)
            rows.append({"path": "ray re-embed", "embedder": spec, "n": out["rows"], "workers": workers,
                         "seconds": round(out["seconds"], 2), "traces_per_s": round(out["rows"] / out["seconds"]),
                         "load_avg_1m": round(os.getloadavg()[0], 2)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="traces with the hashing embedder")
    ap.add_argument("--minilm-n", type=int, default=3000, help="traces with MiniLM (0 = skip)")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench_ray.json"))
    args = ap.parse_args()
    runs: list[dict] = []
    command = ("unshare -n sh -c 'ip link set lo up; .venv-ray/bin/python scripts/bench_ray.py "
               f"--n {args.n} --minilm-n {args.minilm_n} --workers {args.workers}'")

    def save(complete: bool) -> None:  # after every run: a run cut short by a time box keeps what it measured
        out = {"command": command, "cores": os.cpu_count(), "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "complete": complete, "runs": runs}
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        for spec, n in (("hashing", args.n), ("minilm", args.minilm_n)):
            if n <= 0:
                continue
            traces = synth(n)
            for w in (int(x) for x in args.workers.split(",")):
                runs.extend(on_ray(Path(tmp), traces, spec, w, reembed=spec == "hashing"))
                print(runs[-2:], flush=True)
                save(False)
            runs.append(normal(Path(tmp), traces, spec))
            print(runs[-1], flush=True)
            save(False)
    save(True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
