"""A scripted fake of the OpenAI chat-completions protocol on loopback, for tests.

A real HTTP server (http.server in a thread, port 0), so the client's whole
path - connection, headers, status codes, timeouts, JSON - is exercised. A
`script` maps each request to a `Reply`: a good answer, garbage, an HTTP
status (429/500/...), a hang longer than the client's timeout, or a body that
is not JSON; and the hostile ones (issue 14): a body dripped a byte at a time
(`drip`), a huge body (`huge`), an answer that echoes the caller's API key
back (`echo_key`, whole, in pieces or reversed) and truncated JSON
(`garbage_json`). Every request is recorded (path, headers, body) and the number
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
    drip_s: float = 0.0  # seconds between single bytes of the body (a slow-loris server)
    huge_bytes: int = 0  # stream this many bytes of a never-ending JSON string instead
    echo_key: str | None = None  # "whole" | "fragment" | "reversed": put the key in the text


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


def drip(seconds_per_byte: float = 0.5) -> Reply:
    return Reply(text="true\nfine", drip_s=seconds_per_byte)


def huge(n_bytes: int = 64 * 1024 * 1024) -> Reply:
    return Reply(huge_bytes=n_bytes)


def echo_key(how: str = "whole") -> Reply:
    return Reply(text="true\nthe key is {key}", echo_key=how)


def garbage_json() -> Reply:
    return Reply(raw=b'{"choices": [{"message": {"content": "tru')


def error_with_key(code: int = 401, how: str = "fragment") -> Reply:
    return Reply(text=None, status=code, echo_key=how, raw=b"")


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
                if reply.echo_key is not None:
                    reply = fake._with_key(rec, reply)
                data = reply.raw if reply.raw is not None else fake._completion(rec, reply)
                # the client may have given up (timeout): expected for hangs
                with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                    if reply.huge_bytes:
                        self._send_huge(reply.huge_bytes)
                    elif reply.drip_s:
                        self._send_drip(reply.status, data, reply.drip_s)
                    else:
                        self._send(reply.status, data, reply.headers)

            def _send_huge(self, n: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(n))
                self.end_headers()
                head = b'{"choices": [{"message": {"content": "'
                self.wfile.write(head)
                block = b"x" * 65536
                left = n - len(head)
                while left > 0 and not fake._stop.is_set():
                    self.wfile.write(block[:left])
                    left -= len(block)

            def _send_drip(self, code: int, data: bytes, every_s: float) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
                for i in range(len(data)):
                    if fake._stop.wait(every_s):
                        return
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()

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
    def _with_key(rec: Recorded, reply: Reply) -> Reply:
        """The caller's key (from its Authorization header) put into the answer or body."""
        key = rec.headers.get("authorization", "").removeprefix("Bearer ")
        shown = {"whole": key, "fragment": f"...{key[3:15]}...",
                 "reversed": key[::-1]}[reply.echo_key or "whole"]
        if reply.status >= 400:
            msg = {"error": {"message": f"Incorrect API key provided: {shown}"}}
            return Reply(text=None, status=reply.status, raw=json.dumps(msg).encode())
        return Reply(text=(reply.text or "").format(key=shown), usage=reply.usage)

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
