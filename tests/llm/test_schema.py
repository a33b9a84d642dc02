"""The argument checker: what it accepts, what it rejects, and how it says so."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnmemory.llm._schema import schema_problem
from turnmemory.llm._tools import ToolSpec, call_problem
from turnmemory.providers._tools import Call

EDIT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "mode": {"enum": ["replace", "append"]},
        "lines": {"type": "array", "items": {"type": "integer"}},
        "options": {
            "type": "object",
            "properties": {"dry": {"type": "boolean"}},
            "additionalProperties": False,
        },
        "count": {"type": ["integer", "null"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"path": "a"}, None),
        ({"path": "a", "mode": "append", "lines": [1, 2], "options": {"dry": True}, "count": None}, None),
        ({"path": "a", "count": 3.0}, None),
        ({}, "arguments.path is required"),
        ({"path": 1}, "arguments.path must be string, got integer"),
        ({"path": "a", "mode": "delete"}, 'arguments.mode must be one of "replace", "append", got "delete"'),
        ({"path": "a", "lines": [1, "2"]}, "arguments.lines[1] must be integer, got string"),
        (
            {"path": "a", "options": {"wet": 1}},
            "arguments.options.wet is not an allowed property (allowed: dry)",
        ),
        (
            {"path": "a", "extra": 1},
            "arguments.extra is not an allowed property (allowed: path, mode, lines, options, count)",
        ),
        ({"path": "a", "count": True}, "arguments.count must be integer or null, got boolean"),
        ([], "arguments must be object, got array"),
    ],
)
def test_problems_name_the_path_and_the_expectation(value: Any, problem: str | None) -> None:
    assert schema_problem(EDIT, value) == problem


def test_combinators_and_unknown_keywords() -> None:
    either = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}
    assert (
        schema_problem(either, "x") is None and schema_problem(either, -5) is None
    )  # minimum is not checked
    assert schema_problem(either, 1.5) == "arguments matches none of the allowed forms"
    assert schema_problem({"allOf": [{"type": "object", "required": ["a"]}]}, {}) == "arguments.a is required"
    assert schema_problem({"const": 3}, 4) == "arguments must be 3, got 4"
    assert schema_problem({"format": "uri", "pattern": "^x"}, "anything") is None


@given(json_values)
def test_a_value_fits_a_schema_of_its_own_type_and_enum(value: Any) -> None:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    name = "null" if value is None else kind[type(value)]
    assert schema_problem({"type": name}, value) is None
    assert schema_problem({"enum": [value]}, value) is None
    assert schema_problem({}, value) is None


@given(json_values, json_values)
def test_a_problem_is_one_line_and_never_crashes(value: Any, other: Any) -> None:
    for schema in (
        {"type": "object", "required": ["x"]},
        {"enum": [other]},
        {"type": "array", "items": {"type": "string"}},
    ):
        problem = schema_problem(schema, value)
        assert problem is None or (problem.startswith("arguments") and "\n" not in problem)


def test_call_problems_tell_the_model_what_to_do() -> None:
    tools = {"edit": ToolSpec("edit", "Edit.", EDIT), "read": ToolSpec("read")}
    assert call_problem(Call("1", "edit", {"path": "a"}), tools) is None
    assert call_problem(Call("1", "write", {}), tools) == "Unknown tool 'write'. Available tools: edit, read."
    problem = call_problem(Call("1", "edit", {"path": 2}), tools)
    assert problem is not None and problem.startswith(
        "Invalid arguments for edit: arguments.path must be string"
    )
    assert json.dumps(EDIT, separators=(",", ":")) in problem
    broken = call_problem(Call("1", "edit", None, raw_arguments='{"path": '), tools)
    assert broken is not None and "not a JSON object" in broken and "'{\"path\": '" in broken
