"""A local fake of Cohere (/v2/rerank, /v2/chat, /v2/embed) and an OpenAI-compatible server
(/v1/chat/completions, /v1/embeddings).

Started by the tests on 127.0.0.1; `mode` picks the behaviour: ok, 401, 429, 500, timeout, malformed,
429-once (one 429 with `Retry-After: retry_after`, then ok), ragged (embedding rows of two lengths),
redirect (302 to `redirect_to` + the same path).
Embeddings are `embed_dim` wide and a deterministic function of the text. Every request is recorded
with its path, Authorization header and body.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    def __init__(self):
        self.mode = "ok"
        self.requests: list[dict] = []
        self.chat_text = "I asked the technician about the drain pump and he replaced it."
        self.embed_dim = 8
        self.retry_after = "0.01"
        self.redirect_to = ""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                path = self.path.split("?")[0]
                mode = server.mode
                if mode == "redirect":  # e.g. to another server, to prove no key follows a redirect
                    self.send_response(302)
                    self.send_header("Location", server.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "timeout":
                    time.sleep(2.0)  # sleep-ok: a server slower than the client's timeout is the case
                if mode == "429-once":
                    server.mode = "ok"
                    return self._send(429, {"message": "slow down"}, {"Retry-After": server.retry_after})
                if mode in ("401", "429", "500"):
                    return self._send(int(mode), {"message": f"fake error {mode}"})
                if mode == "malformed":
                    raw = b"{this is not json"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                if path == "/v2/rerank":
                    docs = body["documents"]
                    scores = [min(1.0, 0.1 + 0.2 * sum(w in d.lower() for w in body["query"].lower().split()))
                              for d in docs]
                    results = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                                     key=lambda r: -r["relevance_score"])
                    return self._send(200, {"id": "r1", "results": results, "meta": {}})
                if path == "/v2/chat":
                    return self._send(200, {"id": "c1", "finish_reason": "COMPLETE", "message": {
                        "role": "assistant", "content": [{"type": "text", "text": server.chat_text}]}, "usage": {}})
                if path == "/v1/chat/completions":
                    return self._send(200, {"id": "o1", "object": "chat.completion", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": server.chat_text},
                         "finish_reason": "stop"}]})
                if path == "/v2/embed":
                    rows = server.vectors(body["texts"], mode)
                    return self._send(200, {"id": "e1", "response_type": "embeddings_by_type", "texts": body["texts"],
                                            "embeddings": {"float": rows}, "meta": {}})
                if path == "/v1/embeddings":
                    rows = server.vectors(body["input"], mode)
                    # Out of order on purpose: clients must place rows by `index`.
                    data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)][::-1]
                    return self._send(200, {"object": "list", "data": data, "model": body["model"]})
                return self._send(404, {"message": "no such endpoint"})

            def _send(self, code, payload, headers=None):
                raw = json.dumps(payload).encode()
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that timed out hung up: expected
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def vectors(self, texts, mode: str = "ok") -> list[list[float]]:
        """Unnormalised, deterministic rows (blake2b of the text); `ragged` makes the second row shorter."""
        rows = []
        for t in texts:
            h = hashlib.blake2b(t.encode(), digest_size=64).digest()
            rows.append([float(b - 128) for b in h[: self.embed_dim]])
        if mode == "ragged" and len(rows) > 1:
            rows[1] = rows[1][:-1]
        return rows

    @property
    def auths(self) -> list:
        return [r["auth"] for r in self.requests]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
