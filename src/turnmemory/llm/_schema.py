"""A small JSON Schema checker for tool-call arguments.

It covers what tool schemas use in practice: ``type`` (one name or a list), ``enum``, ``const``,
``required``, ``properties``, ``additionalProperties`` (a boolean or a schema), ``items``, and
``anyOf`` / ``oneOf`` / ``allOf``. Keywords it does not know are ignored, so an unusual schema never
rejects a call that a full validator would accept because of a keyword this module skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_problem"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list, tuple),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_problem(schema: Mapping[str, Any], value: Any, path: str = "arguments") -> str | None:
    """The first way ``value`` breaks ``schema``, as one readable sentence, or ``None`` if it fits."""
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if names and not any(_has_type(value, name) for name in names):
            return f"{path} must be {' or '.join(names)}, got {_type_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        return f"{path} must be one of {choices}, got {_preview(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{path} must be {json.dumps(schema['const'])}, got {_preview(value)}"
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if (
            isinstance(options, list)
            and options
            and all(
                schema_problem(option, value, path) is not None
                for option in options
                if isinstance(option, Mapping)
            )
        ):
            return f"{path} matches none of the allowed forms"
    for option in schema.get("allOf") or ():
        if isinstance(option, Mapping) and (problem := schema_problem(option, value, path)) is not None:
            return problem
    if isinstance(value, dict):
        return _object_problem(schema, value, path)
    if isinstance(value, list | tuple) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            if (problem := schema_problem(schema["items"], item, f"{path}[{index}]")) is not None:
                return problem
    return None


def _object_problem(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> str | None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for name in schema.get("required") or ():
        if name not in value:
            return f"{path}.{name} is required"
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        sub = properties.get(name)
        if isinstance(sub, Mapping):
            if (problem := schema_problem(sub, item, f"{path}.{name}")) is not None:
                return problem
        elif extra is False:
            allowed = ", ".join(properties) or "none"
            return f"{path}.{name} is not an allowed property (allowed: {allowed})"
        elif (
            isinstance(extra, Mapping)
            and (problem := schema_problem(extra, item, f"{path}.{name}")) is not None
        ):
            return problem
    return None


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    types = _TYPES.get(name)
    return types is None or isinstance(value, types)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    for name, types in _TYPES.items():
        if isinstance(value, types):
            return name
    return type(value).__name__


def _preview(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
