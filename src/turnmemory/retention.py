"""What a finished tool call leaves behind: per-tool target and outcome rules, and the sanitizers.

Retention is an allowlist. A tool with a rule keeps one bounded *target* (a path, pattern, command,
URL or subagent name) and, on success only, the outcomes its rule names (a changed file, or a failed
command with its exit code). A tool without a rule keeps its name and status. Nothing else of the
call's input or output survives: no file contents, no command output, no MCP arguments or results.

Library users register rules for their own tools by passing ``rules=`` to :class:`TurnRecorder`::

    rules = {**DEFAULT_RULES, "open_url": ToolRule(target=url_target("href"), parameter="href")}

Every retained string passes the one redactor, :func:`turnmemory.redaction.redact`; add secret
shapes of your own with :func:`turnmemory.redaction.register`.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from turnmemory._text import MAX_FIELD_BYTES, bound_text, cut_utf8, redact_prefix
from turnmemory.memory import ToolActivity
from turnmemory.redaction import REDACTED, redact

__all__ = [
    "DEFAULT_RULES",
    "MAX_FIELD_BYTES",
    "MCP_TOOL",
    "REDACTED",
    "ToolRule",
    "bound_text",
    "command_target",
    "cut_utf8",
    "names_target",
    "normalize_mcp_tool",
    "path_target",
    "pattern_target",
    "redact",
    "redact_prefix",
    "relativize",
    "retain",
    "sanitize_url",
    "url_target",
]

MCP_TOOL = "call_mcp_tool"
"""The registered wrapper tool through which MCP calls run and replay."""

TargetFn = Callable[[Mapping[str, Any], "str | None"], "str | None"]
"""Extracts a raw target from a call's arguments, given the workspace; sanitized afterwards."""

Outcome = Literal["none", "file_change", "exit_code"]


@dataclass(frozen=True, slots=True)
class ToolRule:
    """How a finished call of one tool is retained.

    ``target`` extracts the raw target (it is bounded and redacted afterwards); ``outcome`` names
    what a successful call keeps (``"file_change"`` reads ``output["file_changed"]``,
    ``"exit_code"`` reads a non-zero ``output["exit_code"]``); ``parameter`` is the argument name
    under which the ``arguments="target"`` replay option puts the target; ``mcp`` marks the MCP
    wrapper, which keeps ``server`` and the logical tool instead of a target.
    """

    target: TargetFn | None = None
    outcome: Outcome = "none"
    parameter: str | None = None
    mcp: bool = False


def _first_string(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def path_target(*keys: str) -> TargetFn:
    """A target read from the first string argument among ``keys``, made workspace-relative.

    Secrets are redacted before the path is normalized, which could otherwise break their shape
    (``https://u:p@h`` becomes ``https:/u:p@h``); a custom target function should do the same.
    """

    def target(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        path = _first_string(arguments, keys)
        return _redacted_path(path, workspace) if path is not None else None

    return target


PATH_CHARS = 4096
"""The longest path a target keeps (``PATH_MAX``): a longer one is cut to it, then redacted."""


def _redacted_path(path: str, workspace: str | None) -> str:
    """``path`` cut to :data:`PATH_CHARS`, redacted, then made workspace-relative."""
    return relativize(redact_prefix(path, PATH_CHARS), workspace)


def pattern_target(pattern_key: str = "pattern", path_key: str = "path") -> TargetFn:
    """``"<path> :: <pattern>"``, or the pattern alone when the path is absent or the workspace."""

    def target(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        pattern = _first_string(arguments, (pattern_key,))
        path = _first_string(arguments, (path_key,))
        if path is not None:
            path = _redacted_path(path, workspace)
        if path in (None, "."):
            return pattern
        if pattern is None:
            return path
        return f"{path} :: {pattern}"

    return target


def command_target(*keys: str) -> TargetFn:
    """A command read from the first argument among ``keys`` (an argv list is joined)."""

    def target(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        for key in keys:
            value = arguments.get(key)
            if isinstance(value, list) and all(isinstance(part, str) for part in value):
                return " ".join(value)
            if isinstance(value, str) and value.strip():
                return value
        return None

    return target


def url_target(*keys: str) -> TargetFn:
    """A URL read from the first argument among ``keys``, without credentials, query or fragment."""

    def target(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        url = _first_string(arguments, keys)
        return sanitize_url(url) if url is not None else None

    return target


def names_target(name_key: str = "agent", list_key: str = "tasks") -> TargetFn:
    """Subagent names: ``arguments[name_key]``, or the distinct names in ``arguments[list_key]``."""

    def target(arguments: Mapping[str, Any], workspace: str | None) -> str | None:
        single = _first_string(arguments, (name_key,))
        if single is not None:
            return single
        names: list[str] = []
        tasks = arguments.get(list_key)
        if isinstance(tasks, list):
            for task in tasks:
                if isinstance(task, Mapping):
                    name = task.get(name_key)
                    if isinstance(name, str) and name.strip() and name not in names:
                        names.append(name)
        return ", ".join(names) or None

    return target


DEFAULT_RULES: Mapping[str, ToolRule] = MappingProxyType(
    {
        "read_file": ToolRule(target=path_target("path"), parameter="path"),
        "write_file": ToolRule(target=path_target("path"), outcome="file_change", parameter="path"),
        "edit_file": ToolRule(target=path_target("path"), outcome="file_change", parameter="path"),
        "glob": ToolRule(target=pattern_target(), parameter="pattern"),
        "grep": ToolRule(target=pattern_target(), parameter="pattern"),
        "bash": ToolRule(target=command_target("command"), outcome="exit_code", parameter="command"),
        "web_fetch": ToolRule(target=url_target("url"), parameter="url"),
        "delegate_task": ToolRule(target=names_target(), parameter="agent"),
        MCP_TOOL: ToolRule(mcp=True),
    }
)
"""Rules for the agent's own tools (the spec's allowlist)."""


def retain(
    text_offset: int,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    output: Any = None,
    error: str | None = None,
    workspace: str | None = None,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
) -> ToolActivity:
    """The activity a finished call leaves behind (``error`` set means the call failed)."""
    args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
    status = "error" if error is not None else "success"
    rule = rules.get(name)
    tool = bound_text(name, 128) or "unknown_tool"
    if rule is None:
        return ToolActivity(text_offset=text_offset, tool=tool, status=status)
    if rule.mcp:
        return _retain_mcp(text_offset, args, output, status)
    raw_target = rule.target(args, workspace) if rule.target is not None else None
    target = bound_text(raw_target) if raw_target else None
    file_changed = failed_command = exit_code = None
    if status == "success" and isinstance(output, Mapping):
        if rule.outcome == "file_change":
            changed = output.get("file_changed")
            if isinstance(changed, str) and changed.strip():
                file_changed = bound_text(_redacted_path(changed, workspace))
        elif rule.outcome == "exit_code":
            code = output.get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                exit_code = code
                command = output.get("failed_command")
                if isinstance(command, str) and command.strip():
                    failed_command = bound_text(command)
                else:
                    failed_command = target
    return ToolActivity(
        text_offset=text_offset,
        tool=tool,
        status=status,
        target=target,
        file_changed=file_changed,
        failed_command=failed_command,
        exit_code=exit_code,
    )


def _retain_mcp(text_offset: int, args: Mapping[str, Any], output: Any, status: str) -> ToolActivity:
    reported = output if isinstance(output, Mapping) else {}

    def pick(key: str) -> str:
        for source in (reported, args):
            value = source.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""

    server, tool = normalize_mcp_tool(
        redact_prefix(pick("server"), PATH_CHARS), redact_prefix(pick("tool"), PATH_CHARS)
    )
    server = bound_text(server, 128) or "unknown"
    return ToolActivity(
        text_offset=text_offset, tool=bound_text(tool, 128) or MCP_TOOL, status=status, server=server
    )


def normalize_mcp_tool(server: str, tool: str) -> tuple[str, str]:
    """Strip ``mcp:`` prefixes and split ``server/tool`` forms into ``(server, tool)``."""
    server = server.strip().removeprefix("mcp:")
    tool = tool.strip().removeprefix("mcp:")
    if "/" in tool:
        head, _, rest = tool.partition("/")
        if not server or head == server:
            server, tool = head, rest
    return server, tool


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def relativize(path: str, workspace: str | None) -> str:
    """``path`` relative to ``workspace`` when it lies inside it (the workspace itself is ``"."``).

    Paths outside the workspace, and relative paths, are returned normalized but otherwise as they
    are. Windows paths (``C:\\...``) are compared case-insensitively and returned with ``/``.
    """
    path = path.strip()
    if _WINDOWS_PATH.match(path) or (workspace and _WINDOWS_PATH.match(workspace)):
        return _relativize_windows(path, workspace)
    if not path.startswith("/"):
        return posixpath.normpath(path) if path else path
    normalized = posixpath.normpath(path)
    if workspace and workspace.startswith("/"):
        root = posixpath.normpath(workspace)
        if normalized == root:
            return "."
        prefix = root if root.endswith("/") else root + "/"
        if normalized.startswith(prefix):
            return normalized[len(prefix) :]
    return normalized


def _relativize_windows(path: str, workspace: str | None) -> str:
    normalized = ntpath.normpath(path)
    if workspace:
        root = ntpath.normpath(workspace)
        if normalized.lower() == root.lower():
            return "."
        prefix = root if root.endswith("\\") else root + "\\"
        if normalized.lower().startswith(prefix.lower()):
            return normalized[len(prefix) :].replace("\\", "/")
    return normalized.replace("\\", "/")


def sanitize_url(url: str) -> str | None:
    """``url`` without credentials, query or fragment; ``None`` unless it has a scheme and a host."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not host:
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, "", ""))
