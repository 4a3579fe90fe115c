"""A tiny OpenAI-compatible streaming server for tests (loopback only, stdlib only).

Run: python stub_openai_server.py PORT [--delay-ready S]. GET /health, GET /v1/models,
POST /tokenize (one token per word), POST /v1/completions (stream: one word per chunk, then usage).
`serve(port, lie=MODE)` makes the completions reply break one rule (see LIES), for the tests that
prove a lying server yields failed trials, never numbers.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "stub-model"
# lie -> what the completions stream sends instead of the truth
LIES = (
    "malformed-json",  # a chunk that is not JSON
    "chunk-not-object",  # a chunk that is a JSON list
    "huge-usage",  # usage.completion_tokens = 10**9
    "huge-prompt",  # usage.prompt_tokens = 10**9
    "negative-usage",  # negative counts
    "string-usage",  # counts as strings
    "float-usage",  # counts as floats
    "usage-not-object",  # usage is a list
    "choices-not-list",  # choices is an object
    "text-not-string",  # a choice's text is a number
    "runaway-stream",  # 10x max_tokens text chunks, no usage
    "no-done",  # the stream ends without [DONE]
)
SETUP_LIES = ("bad-models",)  # GET /v1/models answers 200 with a body that is not JSON


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    ready_at = 0.0
    lie = ""
    lie_first = 0  # > 0: lie on the first N completions requests only, then tell the truth
    served = 0
    lock = threading.Lock()
    gate: threading.Event | None = None  # when set up: completions wait until the test opens it
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
        elif self.path == "/v1/models" and self.lie == "bad-models":
            body = b"<html>not json"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
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
        if self.gate is not None:
            self.gate.wait(timeout=120)
        prompt = body["prompt"]
        n_prompt = len(prompt) if isinstance(prompt, list) else len(prompt.split())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        cls = type(self)
        with cls.lock:
            cls.served += 1
            lie = self.lie if not self.lie_first or cls.served <= self.lie_first else ""
        # the client may stop reading a reply it rejected
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._stream(n_prompt, body["max_tokens"], lie)

    def _send(self, payload: str) -> None:
        self.wfile.write(f"data: {payload}\n\n".encode())
        self.wfile.flush()

    def _stream(self, n_prompt: int, max_tokens: int, lie: str) -> None:
        n_chunks = 10 * max_tokens if lie == "runaway-stream" else max_tokens
        for i in range(n_chunks):
            text: Any = 7 if lie == "text-not-string" and i == 1 else f" w{i}"
            choice = {"index": 0, "text": text}
            choices: Any = choice if lie == "choices-not-list" and i == 1 else [choice]
            self._send(json.dumps({"choices": choices}))
            if i == 1 and lie == "malformed-json":
                self._send('{"choices": [{"text": " oops"')
            if i == 1 and lie == "chunk-not-object":
                self._send("[1, 2, 3]")
            time.sleep(0.001)
        usage: Any = {"prompt_tokens": n_prompt, "completion_tokens": max_tokens}
        if lie == "huge-usage":
            usage["completion_tokens"] = 10**9
        elif lie == "huge-prompt":
            usage["prompt_tokens"] = 10**9
        elif lie == "negative-usage":
            usage = {"prompt_tokens": -5, "completion_tokens": -1}
        elif lie == "string-usage":
            usage = {k: str(v) for k, v in usage.items()}
        elif lie == "float-usage":
            usage = {k: v + 0.5 for k, v in usage.items()}
        elif lie == "usage-not-object":
            usage = [n_prompt, max_tokens]
        if lie != "runaway-stream":
            self._send(json.dumps({"choices": [], "usage": usage}))
        if lie != "no-done":
            self._send("[DONE]")


def serve(port: int, delay_ready_s: float = 0.0, lie: str = "", lie_first: int = 0,
          gate: threading.Event | None = None) -> ThreadingHTTPServer:
    if lie and lie not in LIES + SETUP_LIES:
        raise ValueError(f"unknown lie {lie!r}; one of {', '.join(LIES + SETUP_LIES)}")
    handler = type("StubHandler", (Handler,), {
        "ready_at": time.monotonic() + delay_ready_s, "seen": [], "lie": lie,
        "lie_first": lie_first, "served": 0, "lock": threading.Lock(), "gate": gate})
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
