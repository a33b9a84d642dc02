"""An MCP server for the test suite, built with the SDK's ``MCPServer`` (FastMCP in mcp 1.x).

Run over stdio (the default) or streamable HTTP: ``echo_server.py --http PORT``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

MARK = "echo-7f3a9c"
"""Every successful echo carries this mark, so tests can look for it in requests."""

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, marked.

    A second paragraph the catalogue must not show.
    """
    return f"{MARK}: {text}"


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the given reason."""
    raise ToolError(f"deliberate failure: {reason}")


@server.tool()
def add(
    a: int,
    b: Annotated[int, Field(ge=0, description="a non-negative addend")],
    mode: Annotated[str, Field(pattern="^(plain|doubled)$")] = "plain",
) -> dict[str, int]:
    """Add two integers; structured result."""
    total = a + b
    return {"sum": total * 2 if mode == "doubled" else total}


@server.tool()
def big(size: int, char: str = "x") -> str:
    """Return ``size`` copies of ``char``."""
    return char * size


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "slept"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """A request header the client sent (HTTP only)."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), "")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
