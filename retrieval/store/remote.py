"""Remote LanceDB stores (s3:// gs:// az://): storage options read from the environment.

The operator configures the object store once, in the environment of the app or the CLI; a URI
never carries a key. Read (each only when set; LanceDB's object store also reads most of these
itself, passing them explicitly makes the behaviour the same everywhere):

- s3://  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION (or
         AWS_DEFAULT_REGION), AWS_ENDPOINT_URL (MinIO, R2, moto …; `aws_endpoint`),
         AWS_ALLOW_HTTP=true for a plain-http endpoint (also implied by an http:// endpoint),
         AWS_VIRTUAL_HOSTED_STYLE_REQUEST
- gs://  GOOGLE_SERVICE_ACCOUNT (a key file path), GOOGLE_SERVICE_ACCOUNT_KEY (the JSON)
- az://  AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN,
         AZURE_STORAGE_ENDPOINT (Azurite), AZURE_STORAGE_ALLOW_HTTP
- any    LANCEDB_STORAGE_OPTIONS: a JSON object merged last (other object_store keys, e.g. timeouts)

A remote store has no BM25 sidecar (nothing is written beside the data): BM25 is built in memory
from the table on open, with progress, or `--sparse fts` uses LanceDB's own full-text index.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

REMOTE_SCHEMES = ("s3://", "gs://", "az://", "abfs://", "s3+ddb://")

_ENV = {
    "s3": (("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
           ("AWS_SESSION_TOKEN", "aws_session_token"), ("AWS_DEFAULT_REGION", "aws_region"),
           ("AWS_REGION", "aws_region"), ("AWS_ENDPOINT_URL", "aws_endpoint"),
           ("AWS_ENDPOINT_URL_S3", "aws_endpoint"), ("AWS_ALLOW_HTTP", "allow_http"),
           ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "aws_virtual_hosted_style_request")),
    "gs": (("GOOGLE_SERVICE_ACCOUNT", "google_service_account"),
           ("GOOGLE_SERVICE_ACCOUNT_KEY", "google_service_account_key")),
    "az": (("AZURE_STORAGE_ACCOUNT_NAME", "azure_storage_account_name"),
           ("AZURE_STORAGE_ACCOUNT_KEY", "azure_storage_account_key"),
           ("AZURE_STORAGE_SAS_TOKEN", "azure_storage_sas_token"), ("AZURE_STORAGE_ENDPOINT", "azure_storage_endpoint"),
           ("AZURE_STORAGE_ALLOW_HTTP", "allow_http")),
}


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def is_remote(uri: str) -> bool:
    return str(uri).startswith(REMOTE_SCHEMES) or str(uri).startswith("db://")


def storage_options_from_env(uri: str, env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The object-store options for `uri` from the environment; None for a local path."""
    env = os.environ if env is None else env
    if not is_remote(uri) or str(uri).startswith("db://"):
        return None
    scheme = "az" if uri.startswith(("az://", "abfs://")) else uri.split("://", 1)[0].split("+")[0]
    opts: dict[str, str] = {}
    for var, key in _ENV.get(scheme, ()):
        if env.get(var):
            opts[key] = env[var]
    if opts.get("aws_endpoint", "").startswith("http://"):
        opts.setdefault("allow_http", "true")
    extra = env.get("LANCEDB_STORAGE_OPTIONS")
    if extra:
        try:
            parsed = json.loads(extra)
        except ValueError as exc:
            raise ValueError(f"LANCEDB_STORAGE_OPTIONS is not a JSON object: {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError("LANCEDB_STORAGE_OPTIONS must be a JSON object of string values")
        opts.update({str(k): str(v) for k, v in parsed.items()})
    return opts


def open_db(uri: str, storage_options: Mapping[str, str] | None = None, *, consistent: bool = False) -> Any:
    """The one place a LanceDB connection is made, for the traces table and every side table (facts,
    judgments, audit): with the store's storage options, so an `s3://` store's side tables reach
    the same bucket the same way. `consistent=True` re-reads the latest version on every read
    (tables that several processes write and read back at once)."""
    import lancedb

    from retrieval.store.tuning import bound_scan_read_ahead

    check_local_location(uri)
    bound_scan_read_ahead()
    kw: dict[str, Any] = {"storage_options": dict(storage_options) if storage_options else None}
    if consistent:
        kw["read_consistency_interval"] = timedelta(0)
    return lancedb.connect(str(uri), **kw)


class StoreLocationError(ValueError):
    """A store location that cannot hold a store (a file where its folder should be): said as it is, never
    wrapped as a damaged table by the side tables that open the same location."""


def check_local_location(uri: str) -> None:
    """A local store location must be a folder, or not exist yet under a folder: a regular file there (or on
    the way there) is refused in words before LanceDB's `mkdir` turns it into a bare `[Errno 17]`."""
    if not is_local_uri(str(uri)):
        return
    path = Path(str(uri).removeprefix("file://"))
    for p in (path, *path.parents):
        if p.exists():
            if p.is_dir():
                return
            where = "is a file" if p == path else f"lies under {str(p)!r}, which is a file"
            raise StoreLocationError(f"store location {str(path)!r} {where}, not a store folder: point --db (or "
                             "RETRIEVAL_DB) at a folder (a missing one is created) or at a URI such as "
                             "s3://bucket/store")


def redact_uri(uri: str) -> str:
    """A store URI fit for a page, a status line, an error or a log: credentials in its userinfo
    (`s3://KEY:SECRET@bucket/store`) and query values (`?secret=…`) are replaced by `***`."""
    text = str(uri)
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    path, q, query = rest.partition("?")
    if "@" in path:  # userinfo; a secret may hold '/', so everything up to the last '@' goes (display only)
        path = "***@" + path.rsplit("@", 1)[1]
    if q:
        query = "&".join(f"{p.split('=', 1)[0]}=***" if "=" in p else p for p in query.split("&"))
    return f"{scheme}://{path}{q}{query}"


_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/{1,2})[^\s'\"?#]*@")  # `s3:/…` too: a Path folds `//`


def redact_text(text: str, *uris: str) -> str:
    """Free text (an error, a summary line) fit to print: each of `uris` as `redact_uri` shows it, and the
    userinfo of any other `scheme://user:secret@…` in the text replaced by `***`."""
    out = str(text)
    for uri in uris:
        if uri and redact_uri(uri) != uri:
            out = out.replace(uri, redact_uri(uri))
    if "@" not in out or ":/" not in out:  # no userinfo to match; the pattern is quadratic on a long word
        return out
    return _USERINFO.sub(r"\1***@", out)
