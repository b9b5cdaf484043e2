"""A scripted HTTP server on 127.0.0.1 for tests that need real HTTP (retries, timeouts).

    with LoopbackServer({"/api/v1/models": [Reply(500), Reply(429, headers={"Retry-After": "1"}),
                                             Reply(200, body=payload)]}) as server:
        get_with_retries(client, server.url + "/api/v1/models", ...)
        server.requests("/api/v1/models")   # every request, with its arrival time

Each path answers with its scripted replies in order and repeats the last one once the script
runs out (so a single `Reply(500)` is a server that always fails). Unknown paths get a 404.
A reply with `delay` holds the request that long before answering: a hanging server.
GET and POST are both answered from the same script; a POST's body is kept on its
`RecordedRequest`. A reply with `chunks` streams its body: each `(pause, data)` is written and
flushed after `pause` seconds, with no Content-Length (the connection closes at the end), like
a server-sent-events stream.

A path may instead be answered by a function of the request body (`Responder`), for a server
that answers what it is asked, such as `chat_completions` (an OpenAI-compatible endpoint).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Reply:
    """One scripted response."""

    status: int = 200
    body: bytes | str = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: Sequence[tuple[float, bytes | str]] = ()

    def payload(self) -> bytes:
        return self.body.encode() if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class RecordedRequest:
    """A request as it arrived: `at` is `time.monotonic()` when its request line was read,
    `wall` the same moment as `time.time()` (to compare with HTTP dates); `body` is what a POST
    sent (empty for a GET)."""

    method: str
    path: str
    headers: dict[str, str]
    at: float
    wall: float
    body: bytes = b""


Responder = Callable[[bytes], Reply]
Routes = Mapping[str, Sequence[Reply] | Responder]


def chat_completions(delay: float = 0.0, completion_tokens: int = 7) -> Responder:
    """An OpenAI-compatible `/chat/completions` answer to any request: the content names the
    sha256 of the body, usage is 11 prompt + `completion_tokens` tokens, after `delay` s."""

    def answer(sent: bytes) -> Reply:
        request = json.loads(sent)
        digest = hashlib.sha256(sent).hexdigest()
        body = {
            "id": f"cmpl-{digest[:12]}",
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"answer to {digest}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 11,
                "completion_tokens": completion_tokens,
                "total_tokens": 11 + completion_tokens,
            },
        }
        return Reply(200, body=json.dumps(body), delay=delay)

    return answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: Routes) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = {
            path: replies if callable(replies) else list(replies)
            for path, replies in routes.items()
        }
        self.served: dict[str, int] = {}
        self.recorded: list[RecordedRequest] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def next_reply(self, path: str, sent: bytes = b"") -> Reply:
        with self.lock:
            replies = self.routes.get(path)
            if callable(replies):
                return replies(sent)
            if not replies:
                return Reply(404, body=b"not found")
            index = self.served.get(path, 0)
            self.served[path] = index + 1
            return replies[min(index, len(replies) - 1)]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._answer(self.rfile.read(length) if length else b"")

    def _answer(self, sent: bytes) -> None:
        arrived, wall = time.monotonic(), time.time()
        path = urlsplit(self.path).path
        with self.server.lock:
            self.server.recorded.append(
                RecordedRequest(self.command, path, dict(self.headers.items()), arrived, wall, sent)
            )
        reply = self.server.next_reply(path, sent)
        if reply.delay and self.server.stopping.wait(reply.delay):
            return  # the server is shutting down: drop the held request
        if reply.chunks:
            self._stream(reply)
            return
        body = reply.payload()
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout): nothing to answer

    def _stream(self, reply: Reply) -> None:
        self.close_connection = True
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            for pause, data in reply.chunks:
                if pause and self.server.stopping.wait(pause):
                    return
                self.wfile.write(data.encode() if isinstance(data, str) else data)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: object) -> None:
        return  # keep the test output quiet


class LoopbackServer:
    """Context manager running a scripted `ThreadingHTTPServer` in a background thread."""

    def __init__(self, routes: Routes) -> None:
        self._server = _Server(routes)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def requests(self, path: str | None = None) -> list[RecordedRequest]:
        with self._server.lock:
            return [r for r in self._server.recorded if path is None or r.path == path]

    def gaps(self, path: str) -> list[float]:
        """Seconds between consecutive arrivals of requests for `path`."""
        times = [r.at for r in self.requests(path)]
        return [later - earlier for earlier, later in itertools.pairwise(times)]

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class CountingServer:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()
