"""Starting or joining a Ray cluster, and where a store's Lance dataset lives for the workers.

With no address a local Ray is started for the call and shut down after it: `num_cpus` CPUs, no dashboard,
every service bound to 127.0.0.1 (nothing listens on another interface), and the workers at the niceness of the
command that started them: Ray's default renices its workers to 15, and beside six CPU-bound processes on 2 cores
they got 1-2% of a core each, so a job of seconds ran for many minutes while the same command without --ray ran
at full share. With an address (`ray://head:10001` through Ray Client, or `auto` for a cluster `ray start` began
on this machine) the call joins it; this package's code travels to the workers as a `py_modules` runtime
environment, its dependencies (the `ray` extra, lancedb, the embedder's model) must be installed on the workers'
image (and that cluster's own settings, niceness included, are its operator's).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

INSTALL_HINT = ("--ray needs the optional extra: pip install '.[ray]' "
                "(ray[data]==2.60.0 lance-ray==0.5.0 pylance==14.0.2), or `make install-ray` for .venv-ray")


def local_system_config() -> dict[str, Any]:
    """Ray's `_system_config` for a local cluster (a new dict each call: ray.init adds its own keys to it).

    `worker_niceness` 0: the workers do the command's work, so they run at the command's priority, not below
    every other process (Ray's default 15 lets a CPU-bound neighbour starve them)."""
    return {"worker_niceness": 0}


def require_ray(workers: int = 1) -> tuple[Any, Any]:
    """(ray, lance_ray), or ImportError with the install hint naming the missing module (ValueError for
    fewer than one worker), before anything is written."""
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    try:
        import lance  # noqa: F401  (pylance: what lance_ray writes with)
        import lance_ray
        import ray
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc.name or 'a module'} is missing)") from None
    return ray, lance_ray


@contextmanager
def ray_session(address: str | None = None, num_cpus: int = 2) -> Iterator[Any]:
    """A Ray connection for the block: joins `address`, else starts a local cluster on loopback.

    A session the caller already opened (`ray.is_initialized()`) is used as it is and left open."""
    ray, _ = require_ray()
    if ray.is_initialized():
        yield ray
        return
    package = Path(__file__).resolve().parent.parent  # this `retrieval` package, for the workers
    if address:
        ray.init(address=address, log_to_driver=False, logging_level="warning",
                 runtime_env={"py_modules": [str(package)]})
    else:  # same machine: the workers import the driver's copy
        path = os.pathsep.join(p for p in (str(package.parent), os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 logging_level="warning", runtime_env={"env_vars": {"PYTHONPATH": path}},
                 _system_config=local_system_config())
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


def dataset_uri(store: Any, table: str | None = None) -> str:
    """The Lance dataset behind a LanceDB table of `store` (absolute: workers do not share the driver's cwd)."""
    name = table or store.table_name
    if store.is_local:
        return str(Path(os.path.abspath(store.local_path)) / f"{name}.lance")
    return f"{store.uri.rstrip('/')}/{name}.lance"


def cluster_cpus(ray: Any) -> int:
    return int(ray.cluster_resources().get("CPU", 1))


def fragment_ids(store: Any, table: str | None = None) -> set[int]:
    """The ids of the fragments of the latest version of a store's table (pylance, the extra's)."""
    import lance

    ds = lance.dataset(dataset_uri(store, table), storage_options=store.storage_options)
    return {f.fragment_id for f in ds.get_fragments()}
