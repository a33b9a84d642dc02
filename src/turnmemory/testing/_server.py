"""The loopback HTTP server that answers provider requests from a script."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from turnmemory.providers import PROVIDERS
from turnmemory.providers.check import check_request
from turnmemory.testing._anthropic import ANTHROPIC
from turnmemory.testing._bedrock import BEDROCK
from turnmemory.testing._cache import PromptCache
from turnmemory.testing._gemini import GEMINI
from turnmemory.testing._openai_chat import OPENAI_CHAT
from turnmemory.testing._openai_responses import OPENAI_RESPONSES
from turnmemory.testing._script import Failure, Hang, Reply, ScriptItem
from turnmemory.testing._wire import Exchange, Frame, JsonAnswer, Route, WireProtocol, apply_edits, cut_point

__all__ = ["PROVIDERS", "FakeProviderServer", "RecordedRequest"]

_PROTOCOLS: tuple[WireProtocol, ...] = (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI, BEDROCK)
"""The wire protocol of every provider the server speaks (``PROVIDERS``: ``RecordedRequest.provider``
and ``base_url`` spell them so)."""

_BASE_PATHS = {"openai_chat": "/v1", "openai_responses": "/v1"}
_EXHAUSTED = "fake server: script exhausted"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request that reached a provider route with a JSON object body.

    ``path`` includes the query string; ``headers`` has lower-case names; ``model`` comes from the
    path (Gemini, Bedrock) or the body; ``stream`` says whether a stream was asked for.
    """

    provider: str
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]
    stream: bool
    model: str


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _HTTPServer

    def do_POST(self) -> None:
        try:
            self.server.owner._serve(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_PUT = do_DELETE = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: requests are recorded on the server object instead."""

    def send_json(self, answer: JsonAnswer) -> None:
        payload = json.dumps(answer.body, ensure_ascii=False).encode()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True

    def send_stream(
        self, content_type: str, frames: Iterable[Frame], complete: bool, pace: float = 0.0
    ) -> None:
        """Write frames as a chunked body, ``pace`` seconds apart; without ``complete`` the body is
        left unterminated. A closing server ends the stream where it is."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for frame in frames:
            if pace and self.server.owner.closing.wait(pace):
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame.data), frame.data))
            self.wfile.flush()
        if complete:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    """One daemon thread per connection, each tracked so ``close_connections`` can end and join it."""

    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: FakeProviderServer) -> None:
        self.owner = owner
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall; nothing here needs it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="FakeProviderServer-connection",
        )
        thread.daemon = True
        with self._connections_lock:
            self._connections[request] = thread
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.pop(request, None)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every open connection (a client may hold one idle) and join its thread."""
        with self._connections_lock:
            open_connections = list(self._connections.items())
        for connection, thread in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            thread.join()


class FakeProviderServer:
    """A loopback fake of the five provider APIs, answering requests from a script.

    It listens on ``host`` (``127.0.0.1``) at ``port`` (0: a free one) from construction until
    ``close()`` or the end of a ``with`` block. Each request on a provider route consumes the next
    script item (``Reply`` or ``Failure``); with the script exhausted it answers 500 in the
    provider's error shape. With ``check`` the request body is first validated by
    ``turnmemory.providers.check.check_request``, and problems are answered with a 400 carrying
    them, consuming nothing; an Anthropic request is also checked against the previous one to the
    same model (the cache look-back). Requests lacking any credential header get a 401. With a
    ``cache`` (:class:`PromptCache`), Anthropic replies report the reads and writes that cache
    computes from the request's ``cache_control`` breakpoints instead of their scripted input counts.
    Thread-safe.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        check: bool = True,
        cache: PromptCache | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._lock = threading.Lock()
        self._cache = cache
        self._previous: dict[tuple[str, str], dict[str, Any]] = {}
        self._script: deque[ScriptItem] = deque()
        self._answered = 0
        self._requests: list[RecordedRequest] = []
        self._check = check
        self.closing = threading.Event()
        """Set when the server starts closing: held requests (``Hang``, paced streams) end then."""
        self.push(*script)
        self._httpd = _HTTPServer((host, port), self)
        self._closed = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeProviderServer",
            daemon=True,
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the server."""
        return f"http://{self._httpd.server_name}:{self._httpd.server_port}"

    def base_url(self, provider: str) -> str:
        """The base URL to hand the provider's SDK (Bedrock: its ``endpoint_url``)."""
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r} (expected one of {', '.join(PROVIDERS)})")
        return self.url + _BASE_PATHS.get(provider, "")

    def push(self, *items: ScriptItem) -> None:
        """Append items to the script."""
        for item in items:
            if not isinstance(item, Reply | Failure | Hang):
                raise TypeError(f"script items must be Reply, Failure or Hang, not {type(item).__name__}")
        with self._lock:
            self._script.extend(items)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request recorded so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """How many script items are not consumed yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Drop the unconsumed script items and the recorded requests (id numbering continues)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()

    def close(self) -> None:
        """Stop serving, drop open connections and join every server thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.closing.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FakeProviderServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _take(self) -> tuple[ScriptItem, int] | None:
        with self._lock:
            if not self._script:
                return None
            self._answered += 1
            return self._script.popleft(), self._answered

    def _match(self, path: str) -> tuple[WireProtocol, Route] | None:
        for protocol in _PROTOCOLS:
            route = protocol.route(path)
            if route is not None:
                return protocol, route
        return None

    def _serve(self, handler: _Handler) -> None:
        path, _, query = handler.path.partition("?")
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        matched = self._match(path)
        if matched is None or handler.command != "POST":
            message = f"fake server: no route for {handler.command} {path}"
            handler.send_json(JsonAnswer(404, {"error": {"message": message}}))
            return
        protocol, route = matched
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            body = None
        if not isinstance(body, dict):
            handler.send_json(
                protocol.error(Failure(400, "fake server: the request body is not a JSON object"))
            )
            return
        headers = {name.lower(): value for name, value in handler.headers.items()}
        stream = route.stream if route.stream is not None else body.get("stream") is True
        model = route.model or str(body.get("model") or "fake-model")
        with self._lock:
            self._requests.append(RecordedRequest(protocol.name, handler.path, headers, body, stream, model))
        if not protocol.authorized(headers, query):
            handler.send_json(protocol.error(Failure(401, "fake server: no credentials in the request")))
            return
        with self._lock:
            previous = self._previous.get((protocol.name, model))
            self._previous[(protocol.name, model)] = body
        problems = check_request(protocol.name, body, previous=previous) if self._check else []
        if problems:
            handler.send_json(protocol.error(Failure(400, "; ".join(problems))))
            return
        taken = self._take()
        if taken is None:
            handler.send_json(protocol.error(Failure(500, _EXHAUSTED)))
            return
        item, number = taken
        exchange = Exchange(number, model, body)
        if isinstance(item, Hang):
            self.closing.wait()
            handler.close_connection = True
        elif isinstance(item, Failure):
            self._fail(handler, protocol, item, exchange, stream)
        else:
            if self._cache is not None and protocol.name == "anthropic":
                item = replace(item, usage=self._cache.usage(body, model, item.token_usage.output_tokens))
            self._reply(handler, protocol, item, exchange, stream)

    def _reply(
        self, handler: _Handler, protocol: WireProtocol, reply: Reply, exchange: Exchange, stream: bool
    ) -> None:
        if stream:
            frames, complete = apply_edits(protocol.stream(reply, exchange), reply.edits)
            if reply.break_after is not None:
                frames, complete = frames[: cut_point(frames, reply.break_after)], False
            handler.send_stream(protocol.stream_content_type, frames, complete, reply.pace)
        elif reply.break_after is None:
            handler.send_json(JsonAnswer(200, protocol.message(reply, exchange)))
        else:
            handler.close_connection = True

    def _fail(
        self, handler: _Handler, protocol: WireProtocol, failure: Failure, exchange: Exchange, stream: bool
    ) -> None:
        if failure.mid_stream and stream:
            frames = protocol.stream(Reply(text=failure.partial_text), exchange)
            cut = cut_point(frames, None)
            frames = frames[:cut] + protocol.stream_error(failure, exchange, cut)
            handler.send_stream(protocol.stream_content_type, frames, complete=True)
            return
        answer = protocol.error(failure)
        if failure.retry_after is not None:
            retry = f"{failure.retry_after:g}"
            answer = JsonAnswer(answer.status, answer.body, {**answer.headers, "retry-after": retry})
        handler.send_json(answer)
