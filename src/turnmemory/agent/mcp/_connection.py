"""One live connection to an MCP server over the official SDK, run on the manager's event loop.

A connection is a long-lived task (:meth:`Connection.start`) that enters the SDK ``Client`` and holds
it open until :meth:`Connection.stop`: the SDK's transports are anyio task groups, which must be
entered and left by the same task. Tool calls are made from other tasks on the same loop.

For stdio servers (launched by :mod:`._launch`) the transport's read stream is watched: a server
process that exits between calls marks the connection ``closed`` and the manager restarts it before
the next call; a line the SDK cannot read is ignored (and counted in :attr:`Connection.junk_lines`),
unless it answers a request, which then fails at once instead of waiting out its timeout.

The SDK reports such lines, and other trouble, through ``logging`` (as ``mcp.*`` and ``client``),
with tracebacks. With no logging configured Python would print those on the user's terminal; a
``NullHandler`` keeps them off it (a configured root logger still receives them). What the user
should know is said in the manager's one-line notices and errors.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from turnmemory import __version__
from turnmemory.agent.mcp._catalogue import McpTool, accepted_tools
from turnmemory.agent.mcp._config import McpError, McpServerConfig
from turnmemory.agent.mcp._launch import LaunchFailed, StderrTail, launched
from turnmemory.retention import bound_text

__all__ = ["Connection", "ToolReply"]

_MESSAGE_BYTES = 300
_STDERR_LINES = 3
_MAX_PAGES = 100
_HTTP_READ_TIMEOUT = 300.0
_STOP_GRACE = 10.0  # the SDK's stdio shutdown waits up to ~6 s for a server to exit
_CLIENT_INFO = mcp_types.Implementation(name="turnmemory", version=__version__)
_ANSWER_HEAD = 4096  # where an unreadable line is searched for the id of the request it answers
_REQUEST_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")')

for _logger in ("mcp", "client"):  # mcp.client.session logs as "client"
    logging.getLogger(_logger).addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What a tool call returned: its content as text, its structured content, and the error flag."""

    text: str
    structured: Any = None
    is_error: bool = False


class Connection:
    """The session with one configured server; every method runs on the manager's event loop."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.tools: tuple[McpTool, ...] = ()
        self.rejected = 0
        """How many listed tools the catalogue left out (see :func:`accepted_tools`)."""
        self.junk_lines = 0
        """Lines of the server's stdout that were not MCP messages, ignored."""
        self.closed = True
        self._tail: StderrTail | None = None
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._abandoned = False

    @property
    def running(self) -> bool:
        """Started, and the server has not gone away since."""
        return self._client is not None and not self.closed

    async def start(self) -> None:
        """Launch or connect to the server, handshake and list its tools; :class:`McpError` on failure."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._stop = anyio.Event()
        self._scope = anyio.CancelScope(deadline=anyio.current_time() + self.config.startup_timeout)
        self._abandoned = False
        stop, scope = self._stop, self._scope
        self._task = loop.create_task(self._serve(ready, stop, scope))
        try:
            await asyncio.shield(ready)
        except asyncio.CancelledError:
            self._abandoned = True
            scope.cancel()
            raise

    async def stop(self) -> None:
        """Leave the session (a stdio server is asked to exit, then terminated); safe to repeat."""
        task, stop, scope = self._task, self._stop, self._scope
        if task is None or stop is None or scope is None:
            return
        self._task = None
        stop.set()
        try:
            with anyio.move_on_after(_STOP_GRACE):
                await asyncio.shield(task)
        finally:
            if not task.done():
                scope.cancel()
                await asyncio.wait({task}, timeout=_STOP_GRACE)

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolReply:
        """Call ``tool`` with ``arguments``, bounded by the server's timeout; :class:`McpError` on failure."""
        client = self._client
        name = f"{self.config.name}.{tool}"
        if client is None or self.closed:
            raise McpError(f"MCP server {self.config.name!r} is not connected")
        try:
            with anyio.fail_after(self.config.timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            raise McpError(f"MCP tool {name} timed out after {self.config.timeout:g}s") from None
        except MCPError as error:
            if error.code == mcp_types.CONNECTION_CLOSED:
                self.closed = True
                raise McpError(
                    f"MCP server {self.config.name!r} closed the connection during {name}; "
                    "it is restarted on the next call"
                ) from None
            raise McpError(f"MCP tool {name} failed: {_bounded(error.message)}") from None
        except Exception as error:
            raise McpError(f"MCP tool {name} failed: {_describe(error)}") from None
        return ToolReply(
            text="\n".join(_block_text(block) for block in result.content),
            structured=result.structured_content,
            is_error=result.is_error,
        )

    async def _serve(self, ready: asyncio.Future[None], stop: anyio.Event, scope: anyio.CancelScope) -> None:
        failure: Exception | None = None
        try:
            with scope:  # its deadline bounds the start-up; lifted once the server is ready
                async with AsyncExitStack() as stack:
                    self.closed = False
                    transport = await self._transport(stack)
                    client = await stack.enter_async_context(
                        Client(transport, client_info=_CLIENT_INFO, read_timeout_seconds=self.config.timeout)
                    )
                    self.tools, self.rejected = await _list_tools(client)
                    scope.deadline = math.inf
                    self._client = client
                    ready.set_result(None)
                    await stop.wait()
            if scope.cancelled_caught and not ready.done() and not self._abandoned:
                failure = TimeoutError()
        except Exception as error:
            failure = error
        finally:
            self._client = None
            self.closed = True
            if not ready.done():
                ready.set_exception(self._start_error(failure))

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if config.url is not None:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(config.headers),
                    timeout=httpx2.Timeout(
                        config.startup_timeout, read=max(config.timeout, _HTTP_READ_TIMEOUT)
                    ),
                )
            )
            return streamable_http_client(config.url, http_client=http)
        self._tail = StderrTail()
        return _watch_closure(launched(config, self._tail), self._mark_closed, self._count_junk)

    def _mark_closed(self) -> None:
        self.closed = True

    def _count_junk(self) -> None:
        self.junk_lines += 1

    def _start_error(self, failure: Exception | None) -> McpError:
        name = self.config.name
        if failure is None:
            return McpError(f"MCP server {name!r}: start-up was cancelled")
        error = _leaf(failure)
        if isinstance(error, TimeoutError):
            reason = f"did not answer within {self.config.startup_timeout:g}s"
        elif isinstance(error, FileNotFoundError) and self.config.command is not None:
            reason = f"command not found: {self.config.command}"
        elif isinstance(error, MCPError) and error.code == mcp_types.CONNECTION_CLOSED:
            reason = "the server exited during start-up" if self.config.command else "the connection closed"
        elif isinstance(error, LaunchFailed):
            reason = str(error)
        else:
            reason = _describe(error)
        lines = self._tail.lines(_STDERR_LINES) if self._tail else []
        stderr = " | ".join(bound_text(line, _MESSAGE_BYTES // _STDERR_LINES) for line in lines)
        detail = f" (stderr: {stderr})" if stderr else ""
        return McpError(f"MCP server {name!r} failed to start: {reason}{detail}")


@asynccontextmanager
async def _watch_closure(
    transport: Any, on_closed: Callable[[], None], on_junk: Callable[[], None]
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], Any]]:
    """``transport`` with its read stream relayed, calling ``on_closed`` once the server side ends.

    A line the SDK could not read reaches the session as the error answer of the request it names
    (see :func:`_unreadable_answer`); any other such line is dropped, with ``on_junk`` called.
    """
    async with transport as (read_stream, write_stream):
        relay: tuple[
            MemoryObjectSendStream[SessionMessage | Exception],
            MemoryObjectReceiveStream[SessionMessage | Exception],
        ] = anyio.create_memory_object_stream(0)
        forward, receive = relay

        async def pump() -> None:
            try:
                async with forward:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            answer = _unreadable_answer(item)
                            if answer is None:
                                on_junk()
                                continue
                            item = answer
                        await forward.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                on_closed()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write_stream
            finally:
                group.cancel_scope.cancel()
                await receive.aclose()


def _unreadable_answer(error: Exception) -> SessionMessage | None:
    """The error answer to the request an unreadable line was answering, when the line names one.

    A line is searched (its first bytes, where every JSON-RPC writer puts the ``id``) for the id of
    a response; a line naming a ``method`` is a request or notification of the server's, ignored.
    """
    problems = error.errors(include_url=False) if isinstance(error, ValidationError) else []
    line = problems[0].get("input") if problems else None
    if not isinstance(line, str):
        return None
    head = line[:_ANSWER_HEAD].encode("utf-8", errors="replace")
    found = _REQUEST_ID.search(head)
    if found is None or b'"method"' in head:
        return None
    request_id = json.loads(found.group(1))
    reason = _bounded(str(problems[0].get("msg", "not a valid MCP message")))
    return SessionMessage(
        mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=mcp_types.ErrorData(
                code=mcp_types.PARSE_ERROR, message=f"its answer could not be read: {reason}"
            ),
        )
    )


async def _list_tools(client: Client) -> tuple[tuple[McpTool, ...], int]:
    """The server's tools the catalogue accepts, and how many it left out."""
    if client.server_capabilities.tools is None:
        return (), 0
    listed: list[tuple[str, str | None, dict[str, Any]]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        listed.extend((tool.name, tool.description, tool.input_schema) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return accepted_tools(listed)


def _block_text(block: mcp_types.ContentBlock) -> str:
    """A content block as text the model can read; binary data is described, never inlined."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link: {block.uri}{f' ({block.mime_type})' if block.mime_type else ''}]"
    resource = block.resource
    if isinstance(resource, mcp_types.TextResourceContents):
        return resource.text
    return (
        f"[resource: {resource.uri}, {len(resource.blob) * 3 // 4} bytes of {resource.mime_type or 'data'}]"
    )


def _leaf(error: BaseException) -> BaseException:
    """The first non-group exception inside ``error`` (anyio task groups wrap failures)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _describe(error: BaseException) -> str:
    error = _leaf(error)
    if isinstance(error, MCPError):
        return _bounded(error.message)
    text = str(error)
    return _bounded(f"{type(error).__name__}: {text}" if text else type(error).__name__)


def _bounded(text: str) -> str:
    return bound_text(text, _MESSAGE_BYTES)
