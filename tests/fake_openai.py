"""A scripted fake of the OpenAI chat-completions protocol on loopback, for tests.

A real HTTP server (http.server in a thread, port 0), so the client's whole
path - connection, headers, status codes, timeouts, JSON - is exercised. A
`script` maps each request to a `Reply`: a good answer, garbage, an HTTP
status (429/500/...), a hang longer than the client's timeout, or a body that
is not JSON. Every request is recorded (path, headers, body) and the number
of requests in flight is tracked, so tests can count calls and check limits.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the fake answers: `text` as a chat completion, or a status / raw body / hang."""

    text: str | None = "ok"
    status: int = 200
    delay_s: float = 0.0
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: bool = True


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        return "\n".join(m.get("content", "") for m in self.body.get("messages", []))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))


Script = Callable[[Recorded], Reply]


def ok(text: str) -> Reply:
    return Reply(text=text)


def garbage() -> Reply:
    return Reply(text="I think it might be, hard to say... 🤷")


def status(code: int, retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(text=None, status=code, headers=headers,
                 raw=json.dumps({"error": {"message": f"scripted {code}"}}).encode())


def hang(seconds: float = 5.0) -> Reply:
    return Reply(text="too late", delay_s=seconds)


def not_json() -> Reply:
    return Reply(raw=b"<html>gateway says hi</html>")


class FakeOpenAI:
    """`with FakeOpenAI(script) as fake:` then point a client at `fake.base_url`."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or (lambda req: ok("true\nfine"))
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._counts: dict[str, int] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                body = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]})
                self._send(200, body.encode(), {})

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                try:
                    body = json.loads(self.rfile.read(n) or b"{}")
                except ValueError:
                    body = {}
                rec = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake._lock:
                    fake.requests.append(rec)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    reply = fake.script(rec)
                    if reply.delay_s:
                        fake._stop.wait(reply.delay_s)
                finally:
                    # before answering: once the client has the answer it may send the next
                    with fake._lock:
                        fake.in_flight -= 1
                data = reply.raw if reply.raw is not None else fake._completion(rec, reply)
                # the client may have given up (timeout): expected for hangs
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply.status, data, reply.headers)

            def _send(self, code: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def count(self, key: str) -> int:
        """Increment and return a per-key counter (for 'fail twice, then answer' scripts)."""
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            return self._counts[key]

    @staticmethod
    def _completion(rec: Recorded, reply: Reply) -> bytes:
        text = reply.text or ""
        out: dict[str, Any] = {
            "id": "chatcmpl-fake", "object": "chat.completion", "model": rec.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
        }
        if reply.usage:
            out["usage"] = {"prompt_tokens": max(1, len(rec.prompt) // 4),
                            "completion_tokens": max(1, len(text) // 4),
                            "total_tokens": 0}
        return json.dumps(out).encode()

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
