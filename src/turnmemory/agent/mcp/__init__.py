"""MCP servers in the agent, through the official ``mcp`` SDK.

The model sees one wrapper tool, ``call_mcp_tool(server, tool, arguments)``, a compact catalogue of
every server's tools in the system prompt (:meth:`McpManager.catalogue_text`) and ``list_mcp_tools``
for a tool's full input schema. Server and tool names are normalized and checked against the
catalogue, and arguments against the tool's input schema, before anything reaches a server.

::

    configs = parse_mcp_config(config.get("mcp"))
    with McpManager(configs, spill_dir=session_dir / "spill") as manager:
        system_prompt += manager.catalogue_text()
        output = manager.call("time", "get_current_time", {"timezone": "UTC"})
        # {"server": "time", "tool": "get_current_time", "content": "...", "structured": {...}}

The SDK is asyncio-based; the manager owns one event-loop thread and the synchronous agent loop
submits work to it. Servers start lazily, every start-up and call is bounded by the server's
timeouts, a server whose process died is restarted before the next call, and :meth:`McpManager.close`
(also run at exit) shuts every started server down.

One job per module: ``_config`` reads the ``[mcp]`` table (and holds the error type); ``_catalogue``
is what the model knows of the servers' tools (pure functions); ``_launch`` starts a stdio server's
process under the watchdog and keeps its stderr short; ``_connection`` is one live SDK session with
one server; ``_manager`` runs every server of one agent process on its event-loop
thread; ``_results`` makes what a call returns to the model, inline or spilled; ``_tools`` holds the
two wrapper tools the model calls.
"""

from turnmemory.agent.mcp._catalogue import McpTool, compact_signature
from turnmemory.agent.mcp._config import DEFAULT_TIMEOUT, McpError, McpServerConfig, parse_mcp_config
from turnmemory.agent.mcp._manager import McpManager
from turnmemory.agent.mcp._results import INLINE_LIMIT
from turnmemory.agent.mcp._tools import CALL_MCP_TOOL_SPEC, LIST_MCP_TOOLS_SPEC, mcp_tools
from turnmemory.retention import MCP_TOOL

__all__ = [
    "CALL_MCP_TOOL_SPEC",
    "DEFAULT_TIMEOUT",
    "INLINE_LIMIT",
    "LIST_MCP_TOOLS_SPEC",
    "MCP_TOOL",
    "McpError",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "compact_signature",
    "mcp_tools",
    "parse_mcp_config",
]
