"""Where a credential may go: parsed base URLs, origin checks, and secrets scrubbed from every display.

An operator-configured key (environment or Streamlit secrets) belongs to one origin — the base URL
the operator configured next to it, or the provider's default. A base URL from anywhere else (a URL
parameter, a typed field, a config file) is untrusted input: it is parsed here, and it never chooses
where a configured key is sent. Requests are rebuilt from the parsed parts, so the host that was
checked is the host that is contacted (no `user@host` or backslash tricks between check and use).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from urllib.parse import quote, unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
# A host that urlsplit accepts but a resolver or proxy could read differently is rejected, not guessed.
_BAD_HOST = re.compile(r"[^a-z0-9.\-_:]")


@dataclass(frozen=True)
class BaseURL:
    """A parsed http(s) base URL. `display` and `repr` never show userinfo or query values."""

    scheme: str
    host: str
    port: int
    path: str = ""
    query: str = field(default="", repr=False)
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def _netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"

    @property
    def display(self) -> str:
        """Stable, secret-free form: lower-case host, no default port, no trailing slash, query values ***."""
        q = "&".join(f"{p.partition('=')[0]}=***" for p in self.query.split("&") if p) if self.query else ""
        return f"{self.scheme}://{self._netloc}{self.path}" + (f"?{q}" if q else "")

    def request_url(self, suffix: str = "") -> str:
        """The URL actually requested: built from the checked parts, without userinfo."""
        return f"{self.scheme}://{self._netloc}{self.path}{suffix}" + (f"?{self.query}" if self.query else "")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every token the URL carries (userinfo, query values), raw and percent-decoded, for scrubbing."""
        vals = [self.username, self.password] + [p.partition("=")[2] for p in self.query.split("&")]
        out = {v for raw in vals if raw for v in (raw, unquote(raw), quote(unquote(raw), safe=""))}
        return tuple(sorted(out, key=len, reverse=True))

    def __str__(self) -> str:
        return self.display


def parse_base_url(url: str) -> BaseURL:
    """Parse an http(s) base URL; ValueError (with the URL scrubbed) for anything else."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("base URL is empty; give one like http://127.0.0.1:11434")
    raw = url.strip()
    if any(ord(c) < 0x21 or c in "\\\x7f" for c in raw):
        raise ValueError(f"base URL {_rough_scrub(raw)!r} contains spaces, control characters or a backslash")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"base URL {_rough_scrub(raw)!r} is not a valid URL ({_rough_scrub(str(exc))})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"base URL {_rough_scrub(raw)!r} must start with http:// or https://")
    host = (parts.hostname or "").rstrip(".")
    if not host or _BAD_HOST.search(host):
        raise ValueError(f"base URL {_rough_scrub(raw)!r} has no valid host name")
    if port == 0:
        raise ValueError(f"base URL {_rough_scrub(raw)!r} has port 0; give the server's port")
    return BaseURL(scheme=scheme, host=host, port=port or DEFAULT_PORTS[scheme], path=parts.path.rstrip("/"),
                   query=parts.query, username=parts.username or "", password=parts.password or "")


def _rough_scrub(text: str) -> str:
    """For a URL too broken to parse: drop anything that looks like userinfo or a query."""
    text = re.sub(r"//[^/?#]*@", "//***@", text)
    return re.sub(r"\?.*", "?***", text)


def scrub_url(url: str) -> str:
    """A URL fit for a name, a repr, an error or a log line."""
    try:
        return parse_base_url(url).display
    except ValueError:
        return _rough_scrub(str(url))


def same_origin(a: str | BaseURL, b: str | BaseURL) -> bool:
    """True when both parse and share scheme, host and port. Unparseable means no."""
    try:
        pa = a if isinstance(a, BaseURL) else parse_base_url(a)
        pb = b if isinstance(b, BaseURL) else parse_base_url(b)
    except ValueError:
        return False
    return pa.origin == pb.origin


@dataclass(frozen=True)
class Provider:
    label: str
    key_names: tuple[str, ...]  # first found wins; secrets are read before the environment
    url_names: tuple[str, ...]
    default_url: str


OPENAI = Provider("OpenAI-compatible", ("OPENAI_API_KEY",), ("OPENAI_BASE_URL",), "https://api.openai.com/v1")
# CO_API_URL / CO_API_KEY are what the cohere package itself reads.
COHERE = Provider("Cohere", ("COHERE_API_KEY", "CO_API_KEY"), ("COHERE_BASE_URL", "CO_API_URL"),
                  "https://api.cohere.com")


@dataclass(frozen=True)
class Credential:
    """An operator's key and the one origin it may be sent to. `repr` never shows the key."""

    provider: str
    key: str = field(repr=False)
    base: BaseURL
    source: str  # e.g. "env OPENAI_API_KEY", for messages

    def key_for(self, url: str | BaseURL) -> str | None:
        return self.key if same_origin(self.base, url) else None


def _lookup(names: tuple[str, ...], secrets: Mapping[str, str] | None) -> tuple[str | None, str]:
    for name in names:
        val = (secrets or {}).get(name)
        if isinstance(val, str) and val.strip():
            return val.strip(), f"secrets {name}"
    for name in names:
        val = os.environ.get(name)
        if val and val.strip():
            return val.strip(), f"env {name}"
    return None, ""


def operator_base_url(provider: Provider, secrets: Mapping[str, str] | None = None) -> str:
    url, _ = _lookup(provider.url_names, secrets)
    return url or provider.default_url


def operator_credential(provider: Provider, secrets: Mapping[str, str] | None = None) -> Credential | None:
    """The key the operator configured (Streamlit secrets, then the environment), bound to the base URL
    the operator configured (same sources) or the provider's default. None when no key is configured."""
    key, source = _lookup(provider.key_names, secrets)
    if key is None:
        return None
    url = operator_base_url(provider, secrets)
    try:
        base = parse_base_url(url)
    except ValueError as exc:
        raise ValueError(f"the configured {provider.label} base URL is invalid: {exc}; fix "
                         f"{' or '.join(provider.url_names)}") from None
    return Credential(provider.label, key, base, source)


def secret_values(*items: str | BaseURL | Credential | None) -> tuple[str, ...]:
    """Everything to scrub from a message: keys and the tokens inside URLs."""
    out: list[str] = []
    for it in items:
        if isinstance(it, Credential):
            out += [it.key, *it.base.secrets]
        elif isinstance(it, BaseURL):
            out += it.secrets
        elif isinstance(it, str) and it:
            out.append(it)
    return tuple(sorted(set(out), key=len, reverse=True))
