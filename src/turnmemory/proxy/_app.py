"""The ASGI app: compact the history of each model request, relay everything else as it comes.

Requests to the four model routes are read whole (bounded in size and time), compacted through
:func:`turnmemory.integrations.compact_request` and forwarded with ``httpx``; the upstream's status,
headers and body bytes are relayed unchanged, a stream chunk by chunk as it arrives. Other requests
are streamed through both ways. The app holds no key and keeps no body: it logs one line per request.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from turnmemory._text import terminal_safe
from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
from turnmemory.integrations import GATEWAY_RULES, CompactedRequest, Wire, compact_request
from turnmemory.proxy._body import item_spans, splice
from turnmemory.retention import ToolRule

__all__ = ["ANTHROPIC_API", "OPENAI_API", "ROUTES", "Limits", "ProxyApp"]

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"

ROUTES: Mapping[str, Wire] = {
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
"""The paths whose ``POST`` bodies are compacted, and their wire."""

_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
_MIB = 1 << 20

Scope = Mapping[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Mapping[str, Any]], Any]

log = logging.getLogger("turnmemory.proxy")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may cost: its body size, the time a client may take to send it, and the
    upstream's connect and read (between two chunks) timeouts, in bytes and seconds."""

    max_body: int = 64 * _MIB
    client_timeout: float = 60.0
    connect_timeout: float = 10.0
    read_timeout: float = 600.0


class _Refused(Exception):
    """The proxy answers the request itself: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Gone(Exception):
    """The client went away."""


@dataclass(slots=True)
class _Line:
    """What the log line of one request says."""

    method: str
    path: str
    turns: int = 0
    received: int = 0
    forwarded: int = 0
    status: int | str = "-"
    added: float = 0.0
    note: str = ""

    def __str__(self) -> str:
        note = f" ({self.note})" if self.note else ""
        return (
            f"{self.method} {terminal_safe(self.path)} turns={self.turns} "
            f"bytes={self.received}->{self.forwarded} upstream={self.status} "
            f"added={self.added * 1000:.1f}ms{note}"
        )


def _error(wire: str, status: int, message: str) -> bytes:
    """An error body in the shape the client's SDK reads."""
    if wire == "anthropic":
        kind = {413: "request_too_large", 408: "timeout_error", 504: "timeout_error", 404: "not_found_error"}
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": kind.get(status, "api_error"), "message": message},
        }
    else:
        kind = {413: "invalid_request_error", 408: "timeout", 504: "timeout", 404: "invalid_request_error"}
        body = {
            "error": {
                "message": message,
                "type": kind.get(status, "server_error"),
                "param": None,
                "code": None,
            }
        }
    return json.dumps(body).encode()


class ProxyApp:
    """The gateway as an ASGI app: ``/v1/messages*`` to ``anthropic_upstream``, the rest of ``/v1/``
    to ``openai_upstream`` (a base URL ending in ``/v1``; requests carrying ``anthropic-version`` go to
    the Anthropic upstream whatever their path)."""

    def __init__(
        self,
        *,
        anthropic_upstream: str = ANTHROPIC_API,
        openai_upstream: str = OPENAI_API,
        limits: Limits = Limits(),
        rules: Mapping[str, ToolRule] = GATEWAY_RULES,
        boundary: BoundaryPolicy = DEFAULT_POLICY,
    ) -> None:
        self.anthropic_upstream = anthropic_upstream.rstrip("/")
        self.openai_upstream = openai_upstream.rstrip("/")
        self.limits = limits
        self.rules = rules
        self.boundary: BoundaryPolicy = boundary
        """Which completed turns are compacted (:func:`turnmemory.integrations.compact`)."""
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(
                connect=self.limits.connect_timeout,
                read=self.limits.read_timeout,
                write=self.limits.read_timeout,
                pool=self.limits.connect_timeout,
            )
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
            self._client = httpx.AsyncClient(
                timeout=timeout, limits=limits, follow_redirects=False, trust_env=False
            )
        return self._client

    async def aclose(self) -> None:
        """Close the upstream connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http_request(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _target(self, path: str, headers: Mapping[bytes, bytes]) -> tuple[str, str] | None:
        """The upstream URL of ``path`` and its wire family (``anthropic`` or ``openai``)."""
        if path == "/v1/messages" or path.startswith("/v1/messages/") or b"anthropic-version" in headers:
            return self.anthropic_upstream + path, "anthropic"
        if path == "/v1" or path.startswith("/v1/"):
            return self.openai_upstream + path[len("/v1") :], "openai"
        return None

    async def _http_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        line = _Line(method, path)
        headers = dict(scope["headers"])
        target = self._target(path, headers)
        wire = ROUTES.get(path) if method == "POST" else None
        family = "openai" if target is None else target[1]
        try:
            if target is None:
                raise _Refused(404, f"turnmemory proxy: no upstream serves {path}")
            url = target[0] + ("?" + scope["query_string"].decode("latin-1") if scope["query_string"] else "")
            if wire is not None:
                raw = await self._read(receive, headers)
                started = time.monotonic()
                content, line.turns, line.note = await anyio.to_thread.run_sync(self._compact, wire, raw)
                line.received, line.forwarded = len(raw), len(content)
                line.added = time.monotonic() - started
                await self._forward(method, url, scope["headers"], content, receive, send, line)
            else:
                await self._forward(method, url, scope["headers"], _stream(receive), receive, send, line)
        except _Refused as refused:
            line.status, line.note = "-", f"answered {refused.status}"
            await _answer(
                send, refused.status, _error(family if wire is None else wire, refused.status, str(refused))
            )
        except _Gone:
            line.note = "client went away"
        log.info("%s", line)

    async def _read(self, receive: Receive, headers: Mapping[bytes, bytes]) -> bytes:
        limit = self.limits.max_body
        declared = headers.get(b"content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > limit:
            raise _Refused(413, f"turnmemory proxy: request body over {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.limits.client_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Gone
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _Refused(413, f"turnmemory proxy: request body over {limit} bytes")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        assert deadline.cancel_called
        raise _Refused(
            408, f"turnmemory proxy: request body not received within {self.limits.client_timeout:g} s"
        )

    def _compact(self, wire: Wire, raw: bytes) -> tuple[bytes, int, str]:
        """The body to forward, the turns compacted, and why nothing was (empty when it was or needed not)."""
        try:
            text = raw.decode("utf-8")
            body = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return raw, 0, "not JSON, forwarded as it came"
        if not isinstance(body, dict):
            return raw, 0, "not a JSON object, forwarded as it came"
        try:
            done: CompactedRequest | None = compact_request(
                wire, body, rules=self.rules, boundary=self.boundary
            )
            if done is None:
                return raw, 0, ""
            spans = item_spans(text, done.key)
            if spans is None or len(spans) < done.replaced:
                return raw, 0, "history not found, forwarded as it came"
            return splice(text, spans, done.replaced, done.items).encode(), done.turns, ""
        except Exception as error:  # fail open: whatever compaction cannot handle goes up as it came
            return raw, 0, f"not compacted ({type(error).__name__}), forwarded as it came"

    async def _forward(
        self,
        method: str,
        url: str,
        raw_headers: list[tuple[bytes, bytes]],
        content: bytes | AsyncIterator[bytes],
        receive: Receive,
        send: Send,
        line: _Line,
    ) -> None:
        headers = [(name, value) for name, value in raw_headers if name not in _HOP_BY_HOP]
        if not isinstance(content, bytes):
            headers += [(name, value) for name, value in raw_headers if name == b"content-length"]
        if not any(name == b"accept-encoding" for name, _ in headers):
            headers.append((b"accept-encoding", b"identity"))  # relay what the client can read as it is
        client = self._http()
        request = client.build_request(method, url, headers=headers, content=content)
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as error:
            raise _Refused(504, f"turnmemory proxy: upstream timed out ({type(error).__name__})") from error
        except httpx.HTTPError as error:
            raise _Refused(502, f"turnmemory proxy: upstream unreachable ({type(error).__name__})") from error
        line.status = response.status_code
        try:
            await _relay(response, receive, send, line)
        finally:
            await response.aclose()


async def _stream(receive: Receive) -> AsyncIterator[bytes]:
    """A request body as it arrives."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _relay(response: httpx.Response, receive: Receive, send: Send, line: _Line) -> None:
    """Send the upstream response on as it arrives; a client that goes away ends it."""
    headers = [
        (name, value)
        for name, value in response.headers.raw
        if name.lower() not in _HOP_BY_HOP - {b"content-length"}
    ]
    finished = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            if not finished:  # (after the last chunk, receive() says disconnect too)
                line.note = "client went away mid-response"
            group.cancel_scope.cancel()

        group.start_soon(watch)
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as error:
            line.note = f"upstream broke mid-response ({type(error).__name__})"
            raise _Broken from error
        finished = True
        await send({"type": "http.response.body", "body": b""})
        group.cancel_scope.cancel()


class _Broken(Exception):
    """The upstream response broke after it started: the client's connection is closed unfinished."""
