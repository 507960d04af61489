"""One JSON POST (httpx) for OpenAI-compatible servers: a key only where it belongs, no redirects, bounded
retries on 429/503 honouring Retry-After, and errors with every secret scrubbed."""
from __future__ import annotations

import base64
import email.utils
import json
import logging
import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import httpx

from retrieval.models.credentials import BaseURL, Credential, secret_values
from retrieval.models.errors import BackendError, http_error, scrub

RETRY_STATUSES = (429, 503)
# httpx logs every request's full URL at INFO (a token in a base URL's query would reach the logs) and httpcore
# traces at DEBUG: both quieter than WARNING never carry anything this client needs to say.
for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def v1_path(base: BaseURL, suffix: str) -> str:
    """OpenAI clients take base URLs with or without the /v1 segment; both mean the same endpoint."""
    return suffix if base.path.endswith("/v1") else "/v1" + suffix


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds (fractions accepted) or an HTTP date; None if absent/garbled."""
    if value is None or not str(value).strip():
        return None
    value = str(value).strip()
    try:
        secs = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        secs = when.timestamp() - (time.time() if now is None else now)
    if secs != secs:  # NaN
        return None
    return max(0.0, secs)


@dataclass
class JsonEndpoint:
    """POST JSON to `base` + path. The key is the explicit one, else the operator's for this origin only."""

    base: BaseURL
    backend: str  # label for messages, already secret-free
    api_key: str | None = field(default=None, repr=False)
    credential: Credential | None = field(default=None, repr=False)
    timeout: float = 30.0
    max_retries: int = 3
    max_retry_wait: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    @property
    def key(self) -> str | None:
        if self.api_key:
            return self.api_key
        return self.credential.key_for(self.base) if self.credential else None

    def _secrets(self) -> tuple[str, ...]:
        return secret_values(self.api_key, self.credential, self.base)

    def _keyless_reason(self) -> str:
        if self.key:
            return ""
        if self.credential is None:
            return "no key is configured (OPENAI_API_KEY in the environment or Streamlit secrets)"
        return (f"the configured key ({self.credential.source}) is only sent to {self.credential.base.display}; "
                f"set OPENAI_BASE_URL to {self.base.display} if this server is yours")

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.key
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif self.base.username or self.base.password:
            # Credentials written into the URL itself go to that URL's host only, as browsers do.
            pair = f"{unquote(self.base.username)}:{unquote(self.base.password)}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return headers

    def post(self, path: str, payload: dict) -> Any:
        """The parsed JSON reply, unvalidated (`Any`, as `json.loads` gives it): callers pick out what they
        need and treat a KeyError/TypeError/IndexError as a reply in the wrong shape."""
        secrets = self._secrets()
        attempt = 0
        # follow_redirects=False: a 3xx is an error, never a second request carrying the Authorization header.
        with httpx.Client(follow_redirects=False, timeout=self.timeout, trust_env=False) as client:
            while True:
                try:
                    resp = client.post(self.base.request_url(path), json=payload, headers=self.headers())
                except httpx.TimeoutException:
                    raise BackendError(f"{self.backend}: timed out after {self.timeout:g}s") from None
                except httpx.TransportError as exc:  # connection refused, DNS, a reset
                    raise BackendError(scrub(f"{self.backend}: cannot connect ({exc}); is the server running?",
                                             *secrets)) from None
                if resp.is_success:
                    break
                wait, why = self._retry_wait(resp, attempt)
                if wait is None:
                    detail = "; ".join(x for x in (_error_detail(resp), why) if x)
                    raise http_error(self.backend, resp.status_code, *secrets, detail=detail,
                                     keyless=self._keyless_reason()) from None
                attempt += 1
                self.sleep(wait)
        try:
            return json.loads(resp.content)
        except ValueError:
            raise BackendError(f"{self.backend}: the response was not the JSON this client expects "
                               f"(not JSON); is this an OpenAI-compatible endpoint?") from None

    def _retry_wait(self, resp: httpx.Response, attempt: int) -> tuple[float | None, str]:
        """(seconds to wait before retrying, "") or (None, why we give up)."""
        if resp.status_code not in RETRY_STATUSES:
            return None, ""
        if attempt >= self.max_retries:
            return None, f"gave up after {attempt} retries"
        wait = retry_after_seconds(resp.headers.get("Retry-After"))
        if wait is None:
            wait = min(self.max_retry_wait, 0.5 * 2 ** attempt)  # no hint: a short exponential backoff
        if wait > self.max_retry_wait:
            return None, (f"the server asked to wait {wait:.0f}s, longer than the {self.max_retry_wait:g}s "
                          "this client waits")
        return wait, ""


def _error_detail(resp: httpx.Response) -> str:
    try:
        data = json.loads(resp.content[:2000])
    except ValueError:
        return ""
    msg = data.get("message") or data.get("error") if isinstance(data, dict) else None
    if isinstance(msg, dict):
        msg = msg.get("message")
    return msg if isinstance(msg, str) else ""
