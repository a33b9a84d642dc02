"""Tools as the loop offers them, and the checking of the calls a model makes of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._schema import schema_problem
from turnmemory.providers._tools import Call, plain

__all__ = ["EMPTY_SCHEMA", "ToolSpec", "call_problem", "placeholder_tool", "tool_table"]

EMPTY_SCHEMA: Mapping[str, Any] = MappingProxyType({"type": "object", "properties": {}})


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

    def definition(self, schema_key: str, schema: Any = None) -> dict[str, Any]:
        """The tool as a provider's request defines it: its name, under ``schema_key`` its ``schema``
        (:meth:`schema` unless given, as a wire that wraps it passes it), and its description if any."""
        definition = {"name": self.name, schema_key: self.schema() if schema is None else schema}
        if self.description:
            definition["description"] = self.description
        return definition


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


def tool_table(tools: Sequence[ToolSpec]) -> dict[str, ToolSpec]:
    """Tools by name; a repeated name is a ``ValueError``."""
    table: dict[str, ToolSpec] = {}
    for spec in tools:
        if spec.name in table:
            raise ValueError(f"tools: the name {spec.name!r} is offered twice")
        table[spec.name] = spec
    return table


def _preview(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")
