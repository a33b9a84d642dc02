"""Retention rules for the tools of the agents a gateway serves: Claude Code, Codex CLI and OpenCode.

Their requests name the agents' own tools (Claude Code ``Bash`` and ``Edit`` with ``file_path``, Codex
``exec_command`` with ``cmd``, OpenCode ``read`` with ``filePath``, ...). Each rule here reads the
call as the transcript importers do (:mod:`turnmemory.transcripts`) and then applies the rule of the
project's tool it maps onto, so a compacted request keeps what ``turnmemory analyze`` counts for the
same session: the command and its exit code, the file changed, the pattern, the URL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from turnmemory.retention import DEFAULT_RULES, ToolRule
from turnmemory.transcripts._tools import claude_code_tool, opencode_tool, shell_command

__all__ = ["AGENT_RULES", "GATEWAY_RULES"]

Mapper = Callable[[str, Mapping[str, Any]], tuple[str, dict[str, Any]]]


def _codex_tool(name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    key = "cmd" if name == "exec_command" else "command"
    command = shell_command(arguments.get(key))
    return "bash", {} if command is None else {"command": command}


def _rule(mapper: Mapper, name: str, project: str) -> ToolRule:
    base = DEFAULT_RULES[project]
    target = base.target

    def mapped(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        if target is None:
            return None
        return target(mapper(name, arguments)[1], workspace)

    return ToolRule(target=mapped, outcome=base.outcome, mcp=base.mcp)


_TOOLS: tuple[tuple[Mapper, tuple[str, ...]], ...] = (
    (
        claude_code_tool,
        (
            "Bash",
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "Grep",
            "Glob",
            "WebFetch",
            "Task",
            "Agent",
        ),
    ),
    (opencode_tool, ("read", "write", "edit", "webfetch", "task", "apply_patch")),  # Codex's too
    (_codex_tool, ("exec_command", "shell_command", "shell")),
)

AGENT_RULES: Mapping[str, ToolRule] = MappingProxyType(
    {
        name: _rule(mapper, name, mapper(name, {"patchText": "*** Update File: x"})[0])
        for mapper, names in _TOOLS
        for name in names
    }
)
"""Rules for the other agents' own tool names (OpenCode's ``bash``, ``grep`` and ``glob`` are the
project's names already)."""

GATEWAY_RULES: Mapping[str, ToolRule] = MappingProxyType({**DEFAULT_RULES, **AGENT_RULES})
"""What a gateway applies: the project's rules and the other agents'."""
