"""What the model knows about MCP servers: the tool catalogue, name resolution and argument validation.

Pure functions over :class:`McpTool` records; nothing here talks to a server. A server is as
untrusted as the model, so what it lists is bounded before the model sees any of it: tool names
must match :data:`TOOL_NAME` (others are left out and counted), descriptions are cut to
:data:`DESCRIPTION_BYTES`, and one server adds at most :data:`SERVER_PROMPT_BYTES` to the system
prompt; past that the catalogue says how many tools it leaves to ``list_mcp_tools``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory.agent.mcp._config import McpError
from turnmemory.retention import MCP_TOOL, bound_text, cut_utf8, normalize_mcp_tool

__all__ = [
    "DESCRIPTION_BYTES",
    "LIST_TOOL",
    "SERVER_PROMPT_BYTES",
    "TOOL_NAME",
    "McpTool",
    "ServerCatalogue",
    "accepted_tools",
    "catalogue_notes",
    "catalogue_text",
    "check_server",
    "check_tool",
    "compact_signature",
    "normalized_names",
    "parse_arguments",
    "resolve_call",
    "validate_arguments",
]

LIST_TOOL = "list_mcp_tools"
"""The wrapper tool that shows full input schemas of MCP tools."""

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""The tool names accepted: the characters MCP allows (SEP-986) within the 64 that Anthropic and
Bedrock allow a tool name. Anything else (a control character, a mebibyte of name) is left out."""

DESCRIPTION_BYTES = 4096
"""The most of a tool's description kept (``list_mcp_tools`` shows it; the prompt its first line)."""

SERVER_PROMPT_BYTES = 16 * 1024
"""The most one server's tool lines add to the system prompt."""

_LINE_BYTES = 200
_SIGNATURE_BYTES = 600
_ERROR_BYTES = 300
_NAMES_SHOWN = 40
_DEPTH = 3


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool a server offers: its name, description and JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ServerCatalogue:
    """A configured server as the model sees it: its tools once started, or why it is unavailable."""

    name: str
    tools: tuple[McpTool, ...] | None = None
    error: str | None = None
    rejected: int = 0
    """How many listed tools were left out for a name :data:`TOOL_NAME` does not accept."""

    def tool(self, name: str) -> McpTool | None:
        """The tool called ``name``, if this server offers it."""
        return next((tool for tool in self.tools or () if tool.name == name), None)


def accepted_tools(
    listed: Iterable[tuple[str, str | None, Mapping[str, Any]]],
) -> tuple[tuple[McpTool, ...], int]:
    """The tools of ``(name, description, input_schema)`` listings the catalogue keeps, and how many it
    left out: names :data:`TOOL_NAME` rejects and repeated names; descriptions cut to :data:`DESCRIPTION_BYTES`."""
    tools: dict[str, McpTool] = {}
    rejected = 0
    for name, description, schema in listed:
        if not TOOL_NAME.fullmatch(name) or name in tools:
            rejected += 1
            continue
        tools[name] = McpTool(name, cut_utf8(description or "", DESCRIPTION_BYTES), schema)
    return tuple(tools.values()), rejected


def normalized_names(server: Any, tool: Any) -> tuple[str, str]:
    """``(server, tool)`` without ``mcp:`` prefixes, ``server/tool`` split; non-strings count as empty."""
    return normalize_mcp_tool(
        server if isinstance(server, str) else "", tool if isinstance(tool, str) else ""
    )


def check_server(server: str, servers: Sequence[str]) -> str:
    """``server`` when it is one of ``servers``; otherwise an error listing them."""
    if server not in servers:
        known = ", ".join(servers) if servers else "none are configured"
        shown = bound_text(server, 64) or "(empty)"
        raise McpError(f"unknown MCP server {shown!r}; configured servers: {known}")
    return server


def resolve_call(server: Any, tool: Any, servers: Sequence[str]) -> tuple[str, str]:
    """The normalized ``(server, tool)`` of a call; the server must be one of ``servers``.

    Accepts ``mcp:`` prefixes and ``server/tool`` forms. The tool itself is checked against the
    server's catalogue once the server has started (see :func:`check_tool`).
    """
    server, tool = normalized_names(server, tool)
    check_server(server, servers)
    if not tool:
        raise McpError(f"{MCP_TOOL} needs 'tool': one of the tools of MCP server {server!r}")
    return server, tool


def check_tool(catalogue: ServerCatalogue, tool: str) -> McpTool:
    """The catalogue entry of ``tool``; an error listing the server's tools when it has none such."""
    found = catalogue.tool(tool)
    if found is None:
        names = [entry.name for entry in catalogue.tools or ()]
        listed = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
        shown = bound_text(tool, 128)
        raise McpError(f"MCP server {catalogue.name!r} has no tool {shown!r}; its tools: {listed or 'none'}")
    return found


def parse_arguments(value: Any) -> dict[str, Any]:
    """The tool arguments of a ``call_mcp_tool`` call: an object, a JSON object string, or absent."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise McpError("'arguments' must be a JSON object") from None
    if not isinstance(value, Mapping):
        raise McpError(f"'arguments' must be an object, not {type(value).__name__}")
    return dict(value)


def validate_arguments(tool: McpTool, server: str, arguments: Mapping[str, Any]) -> None:
    """Raise :class:`McpError` with the first schema violation of ``arguments``.

    A schema the validator cannot read is left to the server to enforce.
    """
    import jsonschema  # type: ignore[import-untyped]

    schema = dict(tool.input_schema)
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(dict(arguments)))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        location = f" at {where!r}" if where else ""
        message = bound_text(f"{error.message}{location}", _ERROR_BYTES)
        raise McpError(
            f"invalid arguments for {server}.{tool.name}: {message}; expected {compact_signature(tool.input_schema)}"
        )


def compact_signature(schema: Mapping[str, Any]) -> str:
    """A tool's arguments in one line: ``(path: string, limit?: integer, mode?: "a"|"b")``.

    ``?`` marks an optional argument; nested objects render as ``{name: type}``, arrays as
    ``array<type>``; descriptions are left to :data:`LIST_TOOL`.
    """
    inner = _fields(schema, schema, _DEPTH) if _is_object(schema) else _render(schema, schema, _DEPTH)
    return bound_text(f"({inner})", _SIGNATURE_BYTES)


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _fields(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    required = schema.get("required")
    needed = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    return ", ".join(
        f"{name}{'' if name in needed else '?'}: {_render(value, root, depth - 1)}"
        for name, value in properties.items()
    )


def _render(schema: Any, root: Mapping[str, Any], depth: int) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve_ref(ref, root)
        if target is None or depth <= 0:
            return ref.rsplit("/", 1)[-1]
        return _render(target, root, depth - 1)
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list):
        return "|".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return "|".join(_render(option, root, depth) for option in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(_render({**schema, "type": one}, root, depth) for one in kind)
    if kind == "array" or "items" in schema:
        items = schema.get("items")
        return f"array<{_render(items, root, depth - 1)}>" if items is not None and depth > 0 else "array"
    if _is_object(schema):
        if not isinstance(schema.get("properties"), Mapping) or not schema["properties"]:
            return "object"
        return "{" + _fields(schema, root, depth) + "}" if depth > 0 else "{...}"
    return kind if isinstance(kind, str) else "any"


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def catalogue_text(servers: Sequence[ServerCatalogue]) -> str:
    """The system-prompt section listing each server's tools: name, signature, one-line description.

    Each server's lines stop at :data:`SERVER_PROMPT_BYTES`, with one line saying how many tools are
    left to :data:`LIST_TOOL`; tools left out for their names are counted.
    """
    if not servers:
        return ""
    lines = [
        f"MCP servers. Call their tools with {MCP_TOOL}(server, tool, arguments); "
        f"{LIST_TOOL}(server, tool) shows a tool's full input schema."
    ]
    for server in servers:
        if server.tools is None:
            reason = bound_text(server.error or "not started", _ERROR_BYTES)
            lines.append(f"server {server.name}: unavailable ({reason})")
            continue
        lines.append(f"server {server.name} ({len(server.tools)} tools):")
        listed = _tool_lines(server.tools)
        lines.extend(listed)
        if len(listed) < len(server.tools):
            lines.append(
                f"- ... {len(server.tools) - len(listed)} more tools, not listed here: "
                f'{LIST_TOOL}(server="{server.name}") lists them all'
            )
        if server.rejected:
            lines.append(f"({server.rejected} more tools left out: {_REJECTED})")
    return "\n".join(lines)


def catalogue_notes(servers: Sequence[ServerCatalogue]) -> list[str]:
    """What the user should know about the catalogue: servers that failed, catalogues cut short."""
    notes: list[str] = []
    for server in servers:
        if server.tools is None:
            notes.append(
                bound_text(server.error or f"MCP server {server.name!r} is unavailable", _ERROR_BYTES)
            )
            continue
        listed = len(_tool_lines(server.tools))
        if listed < len(server.tools):
            notes.append(
                f"MCP server {server.name!r} offers {len(server.tools)} tools; the system prompt lists "
                f"{listed} of them (the model lists the rest with {LIST_TOOL})"
            )
        if server.rejected:
            notes.append(f"MCP server {server.name!r}: {server.rejected} tools left out ({_REJECTED})")
    return notes


_REJECTED = "names that are not 1-64 letters, digits, '_', '.' or '-', or repeated"


def _tool_lines(tools: Sequence[McpTool]) -> list[str]:
    """The catalogue lines of ``tools`` that fit in :data:`SERVER_PROMPT_BYTES`, in order."""
    lines: list[str] = []
    used = 0
    for tool in tools:
        description = _first_line(tool.description)
        line = (
            f"- {tool.name}{compact_signature(tool.input_schema)}{f' - {description}' if description else ''}"
        )
        used += len(line.encode("utf-8")) + 1
        if used > SERVER_PROMPT_BYTES:
            break
        lines.append(line)
    return lines


def _first_line(text: str) -> str:
    first = next((line for line in text.strip().splitlines() if line.strip()), "")
    return bound_text(first, _LINE_BYTES)
