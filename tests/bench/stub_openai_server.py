"""A tiny OpenAI-compatible streaming server for tests (loopback only, stdlib only).

Run: python stub_openai_server.py PORT [--delay-ready S]. GET /health, GET /v1/models,
POST /tokenize (one token per word), POST /v1/completions (stream: one word per chunk, then usage).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "stub-model"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    ready_at = 0.0
    seen: list[dict[str, Any]] = []  # noqa: RUF012 - test-only recorder (per server class)

    def log_message(self, *args: Any) -> None:
        return None

    def _json(self, code: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if time.monotonic() < self.ready_at:
            self._json(503, {"error": "loading"})
        elif self.path == "/health":
            self._json(200, {})
        elif self.path == "/v1/models":
            self._json(200, {"data": [{"id": MODEL}]})
        else:
            self._json(404, {"error": "no route"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if self.path == "/tokenize":
            self._json(200, {"tokens": list(range(len(body["prompt"].split())))})
            return
        if self.path != "/v1/completions":
            self._json(404, {"error": "no route"})
            return
        prompt = body["prompt"]
        n_prompt = len(prompt) if isinstance(prompt, list) else len(prompt.split())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(body["max_tokens"]):
            chunk = {"choices": [{"index": 0, "text": f" w{i}"}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.001)
        usage = {"prompt_tokens": n_prompt, "completion_tokens": body["max_tokens"]}
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def serve(port: int, delay_ready_s: float = 0.0) -> ThreadingHTTPServer:
    handler = type("StubHandler", (Handler,), {"ready_at": time.monotonic() + delay_ready_s,
                                               "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    delay = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--delay-ready" else 0.0
    srv = serve(int(sys.argv[1]), delay)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.shutdown()
