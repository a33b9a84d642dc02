"""The MCP servers of one agent process: lazy start on one event-loop thread, catalogue, calls, shutdown.

What the user should know and the model alone would otherwise see (a server that failed to start, a
catalogue cut short, a server writing lines that are not MCP messages) is said through ``notice``,
once each, on the thread that called the manager, made safe for a terminal.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from turnmemory._text import terminal_safe
from turnmemory.agent.mcp._catalogue import (
    ServerCatalogue,
    catalogue_notes,
    catalogue_text,
    check_server,
    check_tool,
    normalized_names,
    parse_arguments,
    resolve_call,
    validate_arguments,
)
from turnmemory.agent.mcp._config import McpError, McpServerConfig
from turnmemory.agent.mcp._results import INLINE_LIMIT, listing_output, tool_error, tool_output

if TYPE_CHECKING:
    from turnmemory.agent.mcp._connection import Connection, ToolReply

__all__ = ["McpManager"]

_T = TypeVar("_T")
_GRACE = 15.0  # beyond the configured timeouts, for stopping a dead session and thread hand-offs


class McpManager:
    """The configured MCP servers of one agent process: lazy start, catalogue, calls, shutdown.

    Thread-safe: calls may come from any thread; all SDK work runs on the manager's own event-loop
    thread. Use as a context manager, or call :meth:`close` (it also runs at interpreter exit).
    ``notice`` receives the one-line notes for the user (see the module docstring).
    """

    def __init__(
        self,
        configs: Iterable[McpServerConfig],
        *,
        spill_dir: Path | str,
        inline_limit: int = INLINE_LIMIT,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self._configs: dict[str, McpServerConfig] = {}
        for config in configs:
            if config.name in self._configs:
                raise ValueError(f"mcp server {config.name!r} is configured twice")
            self._configs[config.name] = config
        self.spill_dir = Path(spill_dir)
        self.inline_limit = inline_limit
        self._notice = notice
        self._said: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[str, Connection] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._failures: dict[str, str] = {}
        self._closed = False
        atexit.register(self.close)

    @property
    def servers(self) -> tuple[str, ...]:
        """The configured server names, in config order."""
        return tuple(self._configs)

    def status(self) -> dict[str, str]:
        """Each server's state for the user: ``not started``, ``running (N tools)``, ``disconnected``
        or ``failed: <reason>``."""
        states: dict[str, str] = {}
        for name in self._configs:
            connection = self._connections.get(name)
            if name in self._failures:
                states[name] = f"failed: {self._failures[name]}"
            elif connection is None:
                states[name] = "not started"
            elif connection.running:
                states[name] = f"running ({len(connection.tools)} tools)"
            else:
                states[name] = "disconnected"
        return states

    def catalogue_text(self) -> str:
        """The system-prompt section listing every server's tools (starting servers not yet started).

        A server that failed to start is listed with its error; it is not retried here (a call
        retries it), so building a prompt never waits twice on a broken server.
        """
        if not self._configs:
            return ""
        wait = max(config.startup_timeout for config in self._configs.values()) + _GRACE
        catalogues = self._run(self._start_all, wait)
        self._say(*catalogue_notes(catalogues))
        return catalogue_text(catalogues)

    def describe(self, server: Any = None, tool: Any = None) -> dict[str, Any]:
        """The ``list_mcp_tools`` output: the catalogue, one server's tools, or one tool, with full schemas
        (spilled to a file past the inline limit, see :func:`listing_output`)."""
        if not server and not tool:
            every = {"catalogue": self.catalogue_text() or "no MCP servers are configured"}
            return listing_output(every, spill_dir=self.spill_dir, limit=self.inline_limit)
        name, tool_name = normalized_names(server, tool)
        check_server(name, self.servers)
        catalogue = self._catalogue(name)
        tools = [check_tool(catalogue, tool_name)] if tool_name else list(catalogue.tools or ())
        listing: dict[str, Any] = {
            "server": name,
            "tools": [
                {
                    "name": entry.name,
                    "description": entry.description,
                    "input_schema": dict(entry.input_schema),
                }
                for entry in tools
            ],
        }
        return listing_output(listing, spill_dir=self.spill_dir, limit=self.inline_limit)

    def check(self, server: Any, tool: Any, arguments: Any = None) -> tuple[str, str, dict[str, Any]]:
        """``(server, tool, arguments)`` normalized and validated against the catalogue and the tool's
        input schema (starting the server if needed); :class:`McpError` says what is wrong."""
        name, tool_name = resolve_call(server, tool, self.servers)
        parsed = parse_arguments(arguments)
        entry = check_tool(self._catalogue(name), tool_name)
        validate_arguments(entry, name, parsed)
        return name, entry.name, parsed

    def call(self, server: Any, tool: Any, arguments: Any = None) -> dict[str, Any]:
        """Call an MCP tool; the output names the normalized ``server`` and ``tool``.

        Returns ``{"server", "tool", "content", "structured"?, "truncated"?, "spill_file"?,
        "size_bytes"?}``. Raises :class:`McpError` (one readable line) for an unknown server or
        tool, arguments the schema rejects, a server that fails to start, a timeout, or a result
        the server flags as an error.
        """
        name, tool_name, parsed = self.check(server, tool, arguments)
        config = self._configs[name]
        try:
            reply: ToolReply = self._run(
                lambda: self._invoke(name, tool_name, parsed),
                config.startup_timeout + config.timeout + _GRACE,
            )
        finally:
            connection = self._connections.get(name)
            if connection is not None and connection.junk_lines:
                self._say(
                    f"MCP server {name!r} writes lines to stdout that are not MCP messages; they are ignored"
                )
        if reply.is_error:
            raise tool_error(name, tool_name, reply.text)
        return tool_output(
            name, tool_name, reply.text, reply.structured, spill_dir=self.spill_dir, limit=self.inline_limit
        )

    def close(self) -> None:
        """Shut every started server down and stop the event-loop thread; safe to call again."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        atexit.unregister(self.close)
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(2 * _GRACE)
        except concurrent.futures.TimeoutError:
            pass
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_GRACE)

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _say(self, *notes: str) -> None:
        for note in notes:
            if self._notice is not None and note not in self._said:
                self._said.add(note)
                self._notice(terminal_safe(note))

    def _catalogue(self, name: str) -> ServerCatalogue:
        connection = self._run(
            lambda: self._ensure(name, retry_failed=True), self._configs[name].startup_timeout + _GRACE
        )
        return ServerCatalogue(name=name, tools=connection.tools)

    def _run(self, work: Callable[[], Coroutine[Any, Any, _T]], wait: float) -> _T:
        """Run ``work()`` on the event-loop thread and wait for it; Ctrl-C abandons (cancels) it."""
        loop = self._event_loop()
        future = asyncio.run_coroutine_threadsafe(work(), loop)
        try:
            return future.result(wait)
        except concurrent.futures.TimeoutError:
            raise McpError(f"MCP did not answer within {wait:g}s") from None
        finally:
            if not future.done():
                future.cancel()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpError("the MCP servers are shut down")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=_run_loop, args=(loop,), name="turnmemory-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _ensure(self, name: str, *, retry_failed: bool) -> Connection:
        """The running connection to ``name``: started now, or restarted if its session ended."""
        try:
            from turnmemory.agent.mcp._connection import Connection
        except ImportError as error:
            raise McpError(
                f"MCP servers need the mcp SDK ({error.name} is missing): pip install 'turnmemory[mcp]'"
            ) from None
        connection = self._connections.get(name)
        if connection is None:
            connection = Connection(self._configs[name])
            self._connections[name] = connection
        async with self._starting.setdefault(name, asyncio.Lock()):
            if connection.running:
                return connection
            if name in self._failures and not retry_failed:
                raise McpError(self._failures[name])
            await connection.stop()
            try:
                await connection.start()
            except McpError as error:
                self._failures[name] = str(error)
                raise
            self._failures.pop(name, None)
            return connection

    async def _start_all(self) -> list[ServerCatalogue]:
        names = list(self._configs)
        results = await asyncio.gather(
            *(self._ensure(name, retry_failed=False) for name in names), return_exceptions=True
        )
        return [
            ServerCatalogue(name=name, tools=result.tools, rejected=result.rejected)
            if not isinstance(result, BaseException)
            else ServerCatalogue(name=name, error=str(result))
            for name, result in zip(names, results, strict=True)
        ]

    async def _invoke(self, name: str, tool: str, arguments: dict[str, Any]) -> ToolReply:
        connection = await self._ensure(name, retry_failed=True)
        return await connection.call(tool, arguments)

    async def _stop_all(self) -> None:
        await asyncio.gather(*(connection.stop() for connection in self._connections.values()))


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
