"""What the model knows of MCP servers: name normalization, schemas in one line, argument validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnmemory.agent.mcp import McpError, compact_signature
from turnmemory.agent.mcp._catalogue import (
    McpTool,
    ServerCatalogue,
    catalogue_text,
    check_tool,
    parse_arguments,
    resolve_call,
    validate_arguments,
)

PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SERVERS = ("time", "docs-1")
names = st.from_regex(r"[A-Za-z0-9_-]{1,30}", fullmatch=True)
tool_names = st.from_regex(r"[A-Za-z0-9_.-]{1,40}", fullmatch=True)

READ = McpTool(
    name="read",
    description="Read a document.\n\nLong details the catalogue leaves out.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "where"},
            "limit": {"type": "integer", "minimum": 1},
            "mode": {"enum": ["text", "raw"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "range": {"$ref": "#/$defs/Range"},
        },
        "required": ["path"],
        "additionalProperties": False,
        "$defs": {
            "Range": {
                "type": "object",
                "properties": {"start": {"type": "integer"}, "end": {"type": ["integer", "null"]}},
                "required": ["start"],
            }
        },
    },
)


@PROPERTY
@given(server=st.sampled_from(SERVERS), tool=tool_names.filter(lambda name: "/" not in name))
def test_every_spelling_of_a_call_resolves_to_the_same_names(server: str, tool: str) -> None:
    spellings = [
        (server, tool),
        (f"mcp:{server}", tool),
        (server, f"mcp:{tool}"),
        ("", f"{server}/{tool}"),
        (server, f"{server}/{tool}"),
        (f"mcp:{server}", f"mcp:{server}/{tool}"),
        (f"  {server} ", f" {tool}  "),
    ]
    for spelled_server, spelled_tool in spellings:
        assert resolve_call(spelled_server, spelled_tool, SERVERS) == (server, tool)


@PROPERTY
@given(server=names.filter(lambda name: name not in SERVERS), tool=tool_names)
def test_an_unknown_server_is_named_with_the_configured_ones(server: str, tool: str) -> None:
    with pytest.raises(McpError) as caught:
        resolve_call(server, tool, SERVERS)
    assert str(caught.value) == f"unknown MCP server {server!r}; configured servers: time, docs-1"


def test_a_call_needs_a_tool_and_a_string_server() -> None:
    with pytest.raises(McpError, match="needs 'tool'"):
        resolve_call("time", "", SERVERS)
    with pytest.raises(McpError, match=r"unknown MCP server '\(empty\)'"):
        resolve_call(None, "x", SERVERS)
    with pytest.raises(McpError, match="none are configured"):
        resolve_call("time", "x", ())


def test_an_unknown_tool_lists_the_servers_tools() -> None:
    catalogue = ServerCatalogue(name="docs-1", tools=(READ, McpTool("search", "", {"type": "object"})))
    assert check_tool(catalogue, "read") is READ
    with pytest.raises(McpError) as caught:
        check_tool(catalogue, "write")
    assert str(caught.value) == "MCP server 'docs-1' has no tool 'write'; its tools: read, search"


def test_signatures_show_types_optionality_enums_arrays_and_references() -> None:
    assert compact_signature(READ.input_schema) == (
        '(path: string, limit?: integer, mode?: "text"|"raw", tags?: array<string>, '
        "range?: {start: integer, end?: integer|null})"
    )
    assert compact_signature({"type": "object"}) == "()"
    assert compact_signature({"type": "object", "properties": {}}) == "()"
    assert compact_signature({"anyOf": [{"type": "string"}, {"type": "integer"}]}) == "(string|integer)"


def test_signatures_of_recursive_schemas_stop() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    }
    assert compact_signature(schema) == "(node?: {child?: Node})"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
schema_keys = st.sampled_from(
    ["type", "properties", "items", "enum", "anyOf", "oneOf", "$ref", "required", "x"]
)
schemas = st.recursive(
    st.dictionaries(schema_keys, json_values, max_size=4),
    lambda inner: st.dictionaries(
        schema_keys, inner | st.dictionaries(st.text(max_size=6), inner), max_size=4
    ),
    max_leaves=20,
)


@PROPERTY
@given(schemas)
def test_any_schema_renders_as_one_bounded_line(schema: dict[str, Any]) -> None:
    signature = compact_signature(schema)
    assert signature.startswith("(")
    assert "\n" not in signature
    assert len(signature.encode()) <= 600


def test_the_catalogue_lists_tools_with_one_line_descriptions_and_unavailable_servers() -> None:
    text = catalogue_text(
        [
            ServerCatalogue(name="docs-1", tools=(READ,)),
            ServerCatalogue(name="time", error="MCP server 'time' failed to start: command not found: uvx"),
        ]
    )
    assert text.splitlines() == [
        "MCP servers. Call their tools with call_mcp_tool(server, tool, arguments); "
        "list_mcp_tools(server, tool) shows a tool's full input schema.",
        "server docs-1 (1 tools):",
        f"- read{compact_signature(READ.input_schema)} - Read a document.",
        "server time: unavailable (MCP server 'time' failed to start: command not found: uvx)",
    ]
    assert catalogue_text([]) == ""


def test_valid_arguments_pass() -> None:
    validate_arguments(
        READ, "docs-1", {"path": "a.md", "limit": 3, "mode": "raw", "range": {"start": 1, "end": None}}
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "'path' is a required property"),
        ({"path": 3}, "3 is not of type 'string' at 'path'"),
        ({"path": "a", "limit": 0}, "0 is less than the minimum of 1 at 'limit'"),
        ({"path": "a", "mode": "fast"}, "'fast' is not one of ['text', 'raw'] at 'mode'"),
        ({"path": "a", "range": {"end": 2}}, "'start' is a required property at 'range'"),
        ({"path": "a", "extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
    ],
)
def test_invalid_arguments_name_the_violation_and_the_expected_shape(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(McpError) as caught:
        validate_arguments(READ, "docs-1", arguments)
    text = str(caught.value)
    assert text.startswith("invalid arguments for docs-1.read: ")
    assert message in text
    assert text.endswith(f"expected {compact_signature(READ.input_schema)}")


def test_a_schema_the_validator_cannot_read_is_left_to_the_server() -> None:
    broken = McpTool("odd", "", {"type": "object", "properties": {"a": {"type": 12}}})
    validate_arguments(broken, "s", {"a": "anything"})


@PROPERTY
@given(json_values)
def test_arguments_are_an_object_or_a_json_object_string(value: Any) -> None:
    if isinstance(value, dict):
        assert parse_arguments(value) == value
        assert parse_arguments(json.dumps(value)) == value
    elif value is None or (isinstance(value, str) and not value.strip()):
        assert parse_arguments(value) == {}
    else:
        for given_value in (value, json.dumps(value)):
            with pytest.raises(McpError, match="'arguments' must be"):
                parse_arguments(given_value)
