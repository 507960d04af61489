"""A local fake of Cohere (/v2/rerank, /v2/chat) and an OpenAI-compatible server (/v1/chat/completions).

Started by the tests on 127.0.0.1; `mode` picks the behaviour: ok, 401, 429, 500, timeout, malformed.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    def __init__(self):
        self.mode = "ok"
        self.requests: list[dict] = []
        self.chat_text = "I asked the technician about the drain pump and he replaced it."
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                mode = server.mode
                if mode == "timeout":
                    time.sleep(2.0)
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
                if self.path == "/v2/rerank":
                    docs = body["documents"]
                    scores = [min(1.0, 0.1 + 0.2 * sum(w in d.lower() for w in body["query"].lower().split()))
                              for d in docs]
                    results = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                                     key=lambda r: -r["relevance_score"])
                    return self._send(200, {"id": "r1", "results": results, "meta": {}})
                if self.path == "/v2/chat":
                    return self._send(200, {"id": "c1", "finish_reason": "COMPLETE", "message": {
                        "role": "assistant", "content": [{"type": "text", "text": server.chat_text}]}, "usage": {}})
                if self.path == "/v1/chat/completions":
                    return self._send(200, {"id": "o1", "object": "chat.completion", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": server.chat_text},
                         "finish_reason": "stop"}]})
                return self._send(404, {"message": "no such endpoint"})

            def _send(self, code, payload):
                raw = json.dumps(payload).encode()
                self.send_response(code)
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

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
