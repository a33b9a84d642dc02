"""``call_mcp_tool`` and ``list_mcp_tools``: their specs, and the agent tools over an :class:`McpManager`.

A call is checked against the server's catalogue and the tool's input schema while it is prepared,
so a permission prompt is only shown for a call that can run; each call asks for ``mcp`` access to
``server/tool``. Listing tools needs no permission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from turnmemory.agent.mcp._catalogue import LIST_TOOL
from turnmemory.agent.mcp._config import McpError
from turnmemory.agent.mcp._manager import McpManager
from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError
from turnmemory.agent.tools._schema import arguments, string
from turnmemory.llm import ToolSpec
from turnmemory.retention import MCP_TOOL

__all__ = ["CALL_MCP_TOOL_SPEC", "LIST_MCP_TOOLS_SPEC", "mcp_tools"]

_T = TypeVar("_T")

CALL_MCP_TOOL_SPEC = ToolSpec(
    name=MCP_TOOL,
    description=(
        "Call a tool of a configured MCP server. The MCP servers section of the system prompt lists each "
        "server's tools with their arguments; list_mcp_tools shows a tool's full input schema. "
        "'arguments' must match that schema."
    ),
    input_schema=arguments(
        {
            "server": string("MCP server name, as listed"),
            "tool": string("tool name on that server"),
            "arguments": {"type": "object", "description": "the tool's arguments, matching its input schema"},
        },
        "server",
        "tool",
    ),
)
"""The ``call_mcp_tool`` wrapper through which every MCP call runs (and replays)."""

LIST_MCP_TOOLS_SPEC = ToolSpec(
    name=LIST_TOOL,
    description=(
        "List MCP tools with their full input schemas: all servers' catalogue without arguments, "
        "one server's tools with 'server', one tool with 'server' and 'tool'."
    ),
    input_schema=arguments({"server": string("MCP server name"), "tool": string("tool name on that server")}),
)
"""The ``list_mcp_tools`` wrapper that shows full input schemas."""


def _as_tool_error(work: Callable[[], _T]) -> _T:
    try:
        return work()
    except McpError as error:
        raise ToolError(str(error)) from None


def mcp_tools(manager: McpManager) -> list[Tool]:
    """The two MCP wrapper tools bound to ``manager``."""

    def prepare_call(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
        server, tool, parsed = _as_tool_error(
            lambda: manager.check(arguments.get("server"), arguments.get("tool"), arguments.get("arguments"))
        )
        return Action(
            run=lambda: _as_tool_error(lambda: manager.call(server, tool, parsed)),
            access=Access("mcp", f"{server}/{tool}"),
        )

    def prepare_list(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
        return Action(
            run=lambda: _as_tool_error(
                lambda: manager.describe(arguments.get("server"), arguments.get("tool"))
            )
        )

    call, listing = CALL_MCP_TOOL_SPEC, LIST_MCP_TOOLS_SPEC
    return [
        Tool(call.name, call.description, call.input_schema, prepare_call),
        Tool(listing.name, listing.description, listing.input_schema, prepare_list),
    ]
