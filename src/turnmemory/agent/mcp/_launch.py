"""A stdio server's process: started behind the reaper gate, covered by the watchdog, its stderr kept short.

The SDK's ``stdio_client`` spawns its command in a session of its own; here that command is the reaper
gate that bash's host commands run under (:data:`turnmemory.agent.tools._reaper.STDIO_GATE`). It
writes its process group on stderr and waits for the first request before it starts the server. The
agent moves the gate into a cgroup of its own where it can make one and registers it with the watchdog
before it sends that request, so no server runs unregistered: an agent killed in between closes the
gate's stdin, and the gate exits without starting anything. Whatever the server starts stays within
the gate's reach, ``setsid -f`` daemons and double forks included: the gate kills it all when the
server ends or is stopped, the cgroup (or the process group) is killed when the session ends, and the
watchdog does both if the agent dies.

The server's stderr is a pipe read on the event loop as it is written. Only its last
:data:`TAIL_BYTES` are kept, in memory, for the start-up error that quotes it; none of it is
written to disk.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

from turnmemory.agent.mcp._config import McpServerConfig
from turnmemory.agent.tools._reaper import STDIO_GATE, adopt, release

__all__ = ["TAIL_BYTES", "LaunchFailed", "StderrTail", "launched"]

TAIL_BYTES = 8 * 1024
"""The most of a server's stderr kept (its last bytes)."""

_CHUNK = 64 * 1024
_GROUP_LINE = 32  # the gate's first line: its process group, in decimal
_DRAIN_CHUNKS = 16  # read at close, for the last lines of a server that just exited


class LaunchFailed(Exception):
    """The server's process ended before it could be registered."""


class StderrTail:
    """A server's stderr: the gate's announcement of its process group, then the last bytes written.

    Created on the event loop that reads it; :attr:`writer` is the pipe end the server writes to.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self.writer = os.fdopen(write_end, "w")
        self._fd: int | None = read_end
        self._data = bytearray()
        self._group: asyncio.Future[int | None] = self._loop.create_future()  # None: never said
        self._failure = "the server exited during start-up"
        self._loop.add_reader(read_end, self._read)

    async def group(self) -> int:
        """The server's process group, once the gate has said it; :class:`LaunchFailed` if it never will."""
        group = await asyncio.shield(self._group)
        if group is None:
            raise LaunchFailed(self._failure)
        return group

    def lines(self, count: int) -> list[str]:
        """The last ``count`` non-blank lines written (of the kept tail)."""
        text = self._data.decode("utf-8", errors="replace")
        return [line.strip() for line in text.splitlines() if line.strip()][-count:]

    def close(self) -> None:
        """Read what is left in the pipe (boundedly), stop reading and close it; safe to repeat."""
        self.writer.close()
        for _ in range(_DRAIN_CHUNKS):
            if self._fd is None or not self._read():
                break
        if self._fd is not None:
            self._stop()

    def _read(self) -> bool:
        """Take what the pipe holds; ``False`` once nothing more is there for now."""
        assert self._fd is not None
        try:
            chunk = os.read(self._fd, _CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self._stop()
            return False
        self._data += chunk
        if not self._group.done():
            line, newline, rest = self._data.partition(b"\n")
            if newline and line.isdigit():
                self._group.set_result(int(line))
                self._data = bytearray(rest)
            elif newline or len(self._data) > _GROUP_LINE:
                self._failure = "the server's launcher did not start"
                self._group.set_result(None)
        del self._data[:-TAIL_BYTES]
        return True

    def _stop(self) -> None:
        assert self._fd is not None
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None
        if not self._group.done():
            self._group.set_result(None)


@asynccontextmanager
async def launched(config: McpServerConfig, tail: StderrTail) -> AsyncIterator[Any]:
    """The SDK's stdio transport to ``config``'s command, started behind the gate with stderr to
    ``tail``; on exit the SDK stops the server and what is left of its group and cgroup is killed.

    ``FileNotFoundError`` when the command is not found on the server's ``PATH``.
    """
    assert config.command is not None
    group: int | None = None
    cgroup: str | None = None
    try:
        env = get_default_environment() | dict(config.env)
        executable = _executable(config.command, env.get("PATH", os.defpath), config.cwd)
        gate, *gate_args = STDIO_GATE
        parameters = StdioServerParameters(
            command=gate,
            args=[*gate_args, executable, config.command, *config.args],
            env=env,
            cwd=config.cwd,
            encoding_error_handler="replace",  # a byte that is not UTF-8 becomes U+FFFD, not a dead reader
        )
        async with stdio_client(parameters, errlog=tail.writer) as streams:
            tail.writer.close()  # the server holds its own copy now
            group = await tail.group()
            cgroup = adopt(group)
            yield streams
    finally:
        if group is not None:
            release(group, cgroup)
        tail.close()


def _executable(command: str, path: str, cwd: str | None) -> str:
    """The file ``command`` runs, looked up as ``exec`` would (in ``cwd`` when it names a path)."""
    if os.sep in command:
        found = os.path.join(cwd or os.curdir, command)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return os.path.abspath(found)
        raise FileNotFoundError(command)
    resolved = shutil.which(command, path=path)
    if resolved is None:
        raise FileNotFoundError(command)
    return os.path.abspath(resolved)
