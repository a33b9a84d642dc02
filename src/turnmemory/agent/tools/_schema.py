"""The JSON schema of a tool's arguments: an object of the properties it names, and no others."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["arguments", "boolean", "integer", "string"]


def arguments(properties: Mapping[str, Mapping[str, Any]], *required: str) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: an object of ``properties``, the ``required`` ones
    required, and no others."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def string(description: str, *, non_empty: bool = False) -> dict[str, Any]:
    """A string property (at least one character long when ``non_empty``)."""
    return {"type": "string", **({"minLength": 1} if non_empty else {}), "description": description}


def integer(description: str, minimum: int, maximum: int | None = None) -> dict[str, Any]:
    """An integer property from ``minimum`` (to ``maximum``)."""
    bounds = {"minimum": minimum, **({} if maximum is None else {"maximum": maximum})}
    return {"type": "integer", **bounds, "description": description}


def boolean(description: str) -> dict[str, Any]:
    """A boolean property."""
    return {"type": "boolean", "description": description}
