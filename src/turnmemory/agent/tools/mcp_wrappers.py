"""``call_mcp_tool`` and ``list_mcp_tools`` as agent tools, over an :class:`~turnmemory.agent.mcp.McpManager`.

A call is checked against the server's catalogue and the tool's input schema while it is prepared,
so a permission prompt is only shown for a call that can run; each call asks for ``mcp`` access to
``server/tool``. Listing tools needs no permission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from turnmemory.agent.mcp import CALL_MCP_TOOL_SPEC, LIST_MCP_TOOLS_SPEC, McpError, McpManager
from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError

__all__ = ["mcp_tools"]

_T = TypeVar("_T")


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
