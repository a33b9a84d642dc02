"""The agent's tools and their registry.

Each tool is a :class:`Tool`: a JSON schema and a ``prepare`` step returning an :class:`Action`
(the access it needs, the diff it would make, and how to run it). :class:`ToolRegistry` looks tools
up by name. Arguments reach ``prepare`` already checked against the schema by the LLM loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError
from turnmemory.agent.tools.delegate import Subagent, delegate_tool
from turnmemory.agent.tools.files import EDIT_FILE, READ_FILE, WRITE_FILE, unified_diff
from turnmemory.agent.tools.search import GLOB, GREP
from turnmemory.agent.tools.shell import BASH
from turnmemory.agent.tools.web import WEB_FETCH

__all__ = [
    "BASH",
    "EDIT_FILE",
    "GLOB",
    "GREP",
    "READ_FILE",
    "READ_ONLY_TOOLS",
    "WEB_FETCH",
    "WRITE_FILE",
    "Action",
    "Subagent",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "builtin_tools",
    "delegate_tool",
    "unified_diff",
]

READ_ONLY_TOOLS: tuple[Tool, ...] = (READ_FILE, GREP, GLOB)
"""What a subagent may use."""


def builtin_tools(subagent: Subagent | None = None) -> list[Tool]:
    """The agent's own tools; ``delegate_task`` only when a subagent runner is given."""
    tools = [READ_FILE, WRITE_FILE, EDIT_FILE, BASH, GREP, GLOB, WEB_FETCH]
    if subagent is not None:
        tools.append(delegate_tool(subagent))
    return tools


class ToolRegistry:
    """Tools by name, sorted."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {tool.name: tool for tool in sorted(tools, key=lambda tool: tool.name)}

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        """The registered tool names, sorted."""
        return tuple(self._tools)

    def prepare(self, name: str, arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
        """Prepare a call of tool ``name``; :class:`ToolError` if it cannot run."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"unknown tool {name!r}: available tools are {', '.join(self._tools)}")
        return tool.prepare(arguments, ctx)
