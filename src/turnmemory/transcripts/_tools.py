"""Mapping other agents' tools onto this project's tools, so the retention rules apply to them.

Each agent names its tools differently (Claude Code ``Edit`` with ``file_path``, Codex
``exec_command`` with ``cmd``, OpenCode ``read`` with ``filePath``, ...). The functions here return the
project's tool name and the arguments its rule reads (``path``, ``command``, ``pattern``, ``url``,
``agent``, or ``server``/``tool`` for MCP). A tool without a counterpart keeps its own name and no
arguments: its memory is then only the name and status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnmemory.retention import MCP_TOOL, Outcome

__all__ = [
    "claude_code_tool",
    "exit_code_in",
    "mcp_tool",
    "opencode_tool",
    "patch_targets",
    "patch_tool",
    "shell_command",
    "tool_outcome",
]

Mapped = tuple[str, dict[str, Any]]


def _string(arguments: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _with(name: str, **values: str | None) -> Mapped:
    return name, {key: value for key, value in values.items() if value is not None}


def mcp_tool(name: str) -> Mapped | None:
    """``mcp__<server>__<tool>`` as ``call_mcp_tool`` with ``server`` and ``tool``; else ``None``."""
    if not name.startswith("mcp__"):
        return None
    server, _, tool = name[len("mcp__") :].partition("__")
    if not server or not tool:
        return None
    return MCP_TOOL, {"server": server, "tool": tool}


def claude_code_tool(name: str, arguments: Mapping[str, Any]) -> Mapped:
    """A Claude Code tool call as one of this project's tools."""
    mcp = mcp_tool(name)
    if mcp is not None:
        return mcp
    if name in ("Edit", "MultiEdit", "NotebookEdit"):
        return _with("edit_file", path=_string(arguments, "file_path", "notebook_path"))
    if name == "Write":
        return _with("write_file", path=_string(arguments, "file_path"))
    if name == "Read":
        return _with("read_file", path=_string(arguments, "file_path"))
    if name == "Bash":
        return _with("bash", command=_string(arguments, "command"))
    if name in ("Grep", "Glob"):
        return _with(name.lower(), pattern=_string(arguments, "pattern"), path=_string(arguments, "path"))
    if name == "WebFetch":
        return _with("web_fetch", url=_string(arguments, "url"))
    if name in ("Task", "Agent"):
        return _with("delegate_task", agent=_string(arguments, "subagent_type"))
    return name, {}


_OPENCODE_FILE_TOOLS = {"edit": "edit_file", "write": "write_file", "read": "read_file"}


def opencode_tool(name: str, arguments: Mapping[str, Any]) -> Mapped:
    """An OpenCode tool call as one of this project's tools.

    OpenCode names MCP tools ``<server>_<tool>``, which cannot be split reliably: they keep their name.
    """
    if name in _OPENCODE_FILE_TOOLS:
        return _with(_OPENCODE_FILE_TOOLS[name], path=_string(arguments, "filePath", "path"))
    if name == "bash":
        return _with("bash", command=_string(arguments, "command"))
    if name in ("grep", "glob"):
        return _with(name, pattern=_string(arguments, "pattern"), path=_string(arguments, "path"))
    if name == "webfetch":
        return _with("web_fetch", url=_string(arguments, "url"))
    if name == "task":
        return _with("delegate_task", agent=_string(arguments, "subagent_type"))
    if name == "apply_patch":
        return patch_tool(_string(arguments, "patchText", "patch", "input") or "")
    return name, {}


def patch_tool(patch: str) -> Mapped:
    """An ``apply_patch`` call: ``write_file`` when it only adds files, else ``edit_file``; first path."""
    targets = patch_targets(patch)
    adds_only = bool(targets) and all(op == "add" for op, _ in targets)
    return _with("write_file" if adds_only else "edit_file", path=targets[0][1] if targets else None)


_SHELL_WRAPPERS = (("bash", "-lc"), ("bash", "-c"), ("sh", "-c"), ("zsh", "-lc"), ("zsh", "-c"))


def shell_command(value: Any) -> str | None:
    """A command line from a string or an argv list (``bash -lc <script>`` unwrapped)."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        argv: list[str] = value
        return argv[2] if len(argv) == 3 and tuple(argv[:2]) in _SHELL_WRAPPERS else " ".join(argv)
    return None


_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.M)


def patch_targets(patch: str) -> list[tuple[str, str]]:
    """``[(operation, path)]`` from the ``*** Add/Update/Delete File: <path>`` headers of a patch."""
    return [(op.lower(), path) for op, path in _PATCH_HEADER.findall(patch)]


_EXIT_PATTERNS = (
    re.compile(r"\AExit code:? (-?\d+)\b"),
    re.compile(r"\AError: Exit code (-?\d+)\b"),
    re.compile(r"^Process exited with code (-?\d+)\b", re.M),
    re.compile(r"<returncode>(-?\d+)</returncode>"),
    re.compile(r"\bexited with exit code (-?\d+)\b"),
)


def exit_code_in(text: str) -> int | None:
    """The exit code a command result states (``Exit code N``, ``Process exited with code N``, ...)."""
    head = text[:4096]
    for pattern in _EXIT_PATTERNS:
        match = pattern.search(head)
        if match:
            return int(match.group(1))
    return None


def tool_outcome(
    kind: Outcome, path: str | None, text: str, is_error: bool, code: int | None = None
) -> tuple[dict[str, Any] | None, bool]:
    """The outcome a finished call leaves and whether it failed, from what its result showed the model.

    ``kind`` is the outcome the tool's rule keeps. A command (``"exit_code"``) that states an exit code
    (``code``, else one found in ``text``) ran, even when flagged as an error: its outcome is that code;
    without one, an error flag means the call failed and no flag means exit code 0. A write or edit
    (``"file_change"``) that did not fail changed ``path``. Anything else keeps only the error flag.
    """
    if kind == "exit_code":
        code = exit_code_in(text) if code is None else code
        if code is not None:
            return {"exit_code": code}, False
        return (None, True) if is_error else ({"exit_code": 0}, False)
    if kind == "file_change" and not is_error:
        return ({"file_changed": path} if path else None), False
    return None, is_error
