"""moto's S3 server for tests, on 127.0.0.1 (one place: the remote-store, many-writers and CLI gate tests).

`moto_s3(bucket)` starts `python -m moto.server` on a free loopback port, waits until it listens, creates `bucket`
and yields the endpoint URL; the server stops after. Where moto cannot run the test skips, except under CI=true,
where it fails (CI must exercise object storage)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from waits import wait_until

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1"}


def skip_or_fail(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"moto S3 server must run under CI: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def moto_s3(bucket: str) -> Iterator[str]:
    try:
        import boto3
        import moto  # noqa: F401
    except ImportError:
        skip_or_fail('moto is not installed: pip install "moto[server]==5.2.5" (requirements-test.txt)')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        def listening() -> bool:
            if proc.poll() is not None:
                skip_or_fail(f"moto server exited with code {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return True
            except OSError:
                return False

        try:
            wait_until(listening, 30, "the moto server to listen", interval=0.2)
        except AssertionError:
            skip_or_fail("moto server did not listen within 30 s")
        boto3.client("s3", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="y",
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
