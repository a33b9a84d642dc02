"""What the model knows of MCP servers: name normalization, schemas in one line, argument validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnmemory.agent.mcp import McpError, compact_signature
from turnmemory.agent.mcp._catalogue import (
    DESCRIPTION_BYTES,
    SERVER_PROMPT_BYTES,
    TOOL_NAME,
    McpTool,
    ServerCatalogue,
    accepted_tools,
    catalogue_notes,
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


hostile_names = st.text(max_size=80) | st.from_regex(r"[A-Za-z0-9_.-]{1,70}", fullmatch=True)
listings = st.lists(
    st.tuples(hostile_names, st.none() | st.text(max_size=300), st.just({"type": "object"})), max_size=60
)


@PROPERTY
@given(listings, st.integers(min_value=0, max_value=3000))
def test_a_servers_catalogue_is_bounded_whatever_it_lists(
    listed: list[tuple[str, str | None, dict[str, Any]]], padding: int
) -> None:
    listed = [*listed, *((f"pad_{n}", "d" * 300, {"type": "object"}) for n in range(padding // 10))]
    tools, rejected = accepted_tools(listed)
    assert all(TOOL_NAME.fullmatch(tool.name) for tool in tools)
    assert len({tool.name for tool in tools}) == len(tools) == len(listed) - rejected
    assert all(len(tool.description.encode()) <= DESCRIPTION_BYTES for tool in tools)
    server = ServerCatalogue(name="s", tools=tools, rejected=rejected)
    lines = catalogue_text([server]).splitlines()[1:]
    tool_lines = [line for line in lines if line.startswith("- ") and not line.startswith("- ... ")]
    assert sum(len(line.encode()) + 1 for line in tool_lines) <= SERVER_PROMPT_BYTES
    assert all("\n" not in line and "\x9b" not in line for line in lines)
    left = len(tools) - len(tool_lines)
    more = [line for line in lines if line.startswith("- ... ")]
    assert more == (
        [f'- ... {left} more tools, not listed here: list_mcp_tools(server="s") lists them all']
        if left
        else []
    )
    notes = catalogue_notes([server])
    assert len(notes) == bool(left) + bool(rejected)
    assert all(note.startswith("MCP server 's'") for note in notes)


def test_ten_thousand_tools_add_a_bounded_section_and_one_line_about_the_rest() -> None:
    tools, rejected = accepted_tools(
        [(f"tool_{n:05d}", f"Tool number {n}.", {"type": "object"}) for n in range(10_000)]
        + [("x" * (1 << 20), "a mebibyte of name", {}), ("csi\u009bred", "", {}), ("tool_00001", "again", {})]
    )
    assert (len(tools), rejected) == (10_000, 3)
    text = catalogue_text([ServerCatalogue(name="many", tools=tools, rejected=rejected)])
    assert len(text.encode()) < SERVER_PROMPT_BYTES + 1024
    assert text.count("more tools, not listed here") == 1
    assert (
        "(3 more tools left out: names that are not 1-64 letters, digits, '_', '.' or '-', or repeated)"
        in text
    )
    assert catalogue_notes([ServerCatalogue(name="many", tools=tools, rejected=rejected)])[0].startswith(
        "MCP server 'many' offers 10000 tools; the system prompt lists "
    )
