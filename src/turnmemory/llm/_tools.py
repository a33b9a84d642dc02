"""Tools as the loop sees them: definitions, results, the calls a model makes, and their checking."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._schema import schema_problem

__all__ = [
    "EMPTY_SCHEMA",
    "NO_OUTPUT",
    "Call",
    "ToolResult",
    "ToolSpec",
    "call_problem",
    "object_result",
    "parse_arguments",
    "parse_output",
    "placeholder_tool",
    "plain",
    "result_text",
    "tool_table",
]

EMPTY_SCHEMA: Mapping[str, Any] = MappingProxyType({"type": "object", "properties": {}})
NO_OUTPUT = "(no output)"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and the JSON schema of its arguments."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: EMPTY_SCHEMA)

    def schema(self) -> dict[str, Any]:
        """The input schema as a plain (JSON-ready, mutable) dict."""
        schema: dict[str, Any] = plain(self.input_schema)
        return schema


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What running a tool gave: ``output`` (any JSON value) on success, or ``error`` on failure."""

    output: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the model made in one response.

    ``arguments`` is ``None`` when the provider sent arguments that are not a JSON object;
    ``raw_arguments`` then holds what it sent. ``native`` is whatever the wire format needs to
    answer the call (Gemini: the call's own id, or ``None`` when it came without one).
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    native: Any = None


def placeholder_tool(name: str) -> ToolSpec:
    """The definition declared for a tool that the request replays but that is not offered now."""
    return ToolSpec(
        name=name, description="Used earlier in this conversation; not available now. Do not call it."
    )


def call_problem(call: Call, tools: Mapping[str, ToolSpec]) -> str | None:
    """Why ``call`` cannot run, in words the model can act on, or ``None`` when it can."""
    spec = tools.get(call.name)
    if spec is None:
        available = ", ".join(sorted(tools)) or "none"
        return f"Unknown tool {call.name!r}. Available tools: {available}."
    if call.arguments is None:
        return (
            f"The arguments of {call.name} are not a JSON object ({_preview(call.raw_arguments)}). "
            f"Expected arguments matching this schema: {compact_json(plain(spec.input_schema))}"
        )
    problem = schema_problem(spec.input_schema, call.arguments)
    if problem is None:
        return None
    return f"Invalid arguments for {call.name}: {problem}. Expected arguments matching this schema: {compact_json(plain(spec.input_schema))}"


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Streamed argument text as an object; an empty text is ``{}``, anything but an object ``None``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def result_text(result: ToolResult, *, flagged: bool) -> str:
    """A result as text, for providers whose results are strings.

    Output that is not a string is compact JSON. An error is its message where the provider
    ``flagged`` errors itself (``is_error``), and ``{"error": message}`` where it has no such flag.
    Empty text becomes ``(no output)``, since providers reject empty result text.
    """
    if result.error is not None:
        text = result.error if flagged else compact_json(plain({"error": result.error}))
    else:
        text = result.output if isinstance(result.output, str) else compact_json(plain(result.output))
    return text or NO_OUTPUT


def parse_output(text: str, *, is_error: bool = False) -> ToolResult:
    """Read back a result that :func:`result_text` wrote (``is_error``: the provider flagged it)."""
    if is_error:
        return ToolResult(error=text)
    try:
        value = json.loads(text)
    except ValueError:
        return ToolResult(output=text)
    return object_result(value)


def object_result(value: Any) -> ToolResult:
    """A result from a decoded JSON value: ``{"error": "..."}`` alone reads as an error."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("error"), str):
        return ToolResult(error=value["error"])
    return ToolResult(output=value)


def tool_table(tools: Sequence[ToolSpec]) -> dict[str, ToolSpec]:
    """Tools by name; a repeated name is a ``ValueError``."""
    table: dict[str, ToolSpec] = {}
    for spec in tools:
        if spec.name in table:
            raise ValueError(f"tools: the name {spec.name!r} is offered twice")
        table[spec.name] = spec
    return table


def plain(value: Any) -> Any:
    """``value`` with every mapping turned into a new dict and every sequence into a new list."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def _preview(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")
