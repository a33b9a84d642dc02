"""One live connection to an MCP server over the official SDK, run on the manager's event loop.

A connection is a long-lived task (:meth:`Connection.start`) that enters the SDK ``Client`` and holds
it open until :meth:`Connection.stop`: the SDK's transports are anyio task groups, which must be
entered and left by the same task. Tool calls are made from other tasks on the same loop.

For stdio servers the transport's read stream is watched, so a server process that exits between
calls marks the connection ``closed`` and the manager restarts it before the next call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from turnmemory import __version__
from turnmemory.agent.mcp._catalogue import McpTool
from turnmemory.agent.mcp._config import McpError, McpServerConfig
from turnmemory.retention import bound_text

__all__ = ["Connection", "ToolReply"]

_MESSAGE_BYTES = 300
_STDERR_LINES = 3
_MAX_PAGES = 100
_HTTP_READ_TIMEOUT = 300.0
_STOP_GRACE = 10.0  # the SDK's stdio shutdown waits up to ~6 s for a server to exit
_CLIENT_INFO = mcp_types.Implementation(name="turnmemory", version=__version__)


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What a tool call returned: its content as text, its structured content, and the error flag."""

    text: str
    structured: Any = None
    is_error: bool = False


class Connection:
    """The session with one configured server; every method runs on the manager's event loop."""

    def __init__(self, config: McpServerConfig, log_path: Path) -> None:
        self.config = config
        self.log_path = log_path
        self.tools: tuple[McpTool, ...] = ()
        self.closed = True
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
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        failure: Exception | None = None
        try:
            with scope:  # its deadline bounds the start-up; lifted once the server is ready
                async with AsyncExitStack() as stack:
                    self.closed = False
                    transport = await self._transport(stack)
                    client = await stack.enter_async_context(
                        Client(transport, client_info=_CLIENT_INFO, read_timeout_seconds=self.config.timeout)
                    )
                    self.tools = await _list_tools(client)
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
                ready.set_exception(self._start_error(failure, offset))

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
        assert config.command is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = stack.enter_context(self.log_path.open("a", encoding="utf-8"))
        parameters = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
        )
        return _watch_closure(stdio_client(parameters, errlog=errlog), self._mark_closed)

    def _mark_closed(self) -> None:
        self.closed = True

    def _start_error(self, failure: Exception | None, log_offset: int) -> McpError:
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
        else:
            reason = _describe(error)
        stderr = self._stderr_tail(log_offset)
        detail = f" (stderr: {stderr})" if stderr else ""
        return McpError(f"MCP server {name!r} failed to start: {reason}{detail}")

    def _stderr_tail(self, offset: int) -> str:
        if self.config.command is None:
            return ""
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                written = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in written.splitlines() if line.strip()]
        return bound_text(" | ".join(lines[-_STDERR_LINES:]), _MESSAGE_BYTES)


@asynccontextmanager
async def _watch_closure(
    transport: Any, on_closed: Callable[[], None]
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], Any]]:
    """``transport`` with its read stream relayed, calling ``on_closed`` once the server side ends."""
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


async def _list_tools(client: Client) -> tuple[McpTool, ...]:
    if client.server_capabilities.tools is None:
        return ()
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            McpTool(name=tool.name, description=tool.description or "", input_schema=tool.input_schema)
            for tool in page.tools
        )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


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
