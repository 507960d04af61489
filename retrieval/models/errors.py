"""Errors from hosted or local model backends, with secrets scrubbed from every message."""
from __future__ import annotations

HTTP_HINTS = {
    200: "the response was not the JSON this client expects (a wrong base URL, or a proxy page?)",
    400: "the request was rejected (bad model name or input)",
    401: "the API key is wrong or expired; check COHERE_API_KEY / the key you set",
    403: "the API key may not use this model",
    404: "the endpoint or model was not found; check the base URL and model name",
    429: "rate limited; wait and retry, or lower the request rate",
    500: "the server failed; retry later",
    502: "bad gateway; the server is unreachable behind its proxy",
    503: "the service is unavailable; retry later",
}


class BackendError(RuntimeError):
    """A model call failed; the message says what happened and how to fix it, never the key."""


def scrub(text: str, *secrets: str | None) -> str:
    # Longest first, so a key that contains another secret is replaced whole.
    for s in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(s) >= 4:  # shorter "secrets" would blank ordinary words out of the message
            text = text.replace(s, "***")
    return text


def http_error(backend: str, status: int | None, *secrets: str | None, detail: str = "",
               keyless: str = "") -> BackendError:
    """`keyless`: why no key was sent, so a 401/403 does not blame a key that never left the machine."""
    hint = HTTP_HINTS.get(status or 0, "unexpected response")
    if keyless and status in (401, 403):
        hint = f"the server wants an API key, and none was sent: {keyless}"
    msg = f"{backend}: HTTP {status}: {hint}"
    if detail:
        msg += f" ({detail[:200]})"
    return BackendError(scrub(msg, *secrets))
