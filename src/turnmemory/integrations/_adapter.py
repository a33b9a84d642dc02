"""What the framework adapters share: the error of a missing extra, and the OpenAI Chat items they speak.

LangChain and pydantic-ai messages are compacted as OpenAI Chat items holding only what TurnMemory
reads (an assistant item's prose and calls, a tool item's text and status), and the compacted items
are translated back into the framework's messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Call", "assistant", "call_names", "calls", "missing_extra", "tool"]

Call = tuple[str | None, str, Mapping[str, Any]]
"""A tool call as ``(id, name, arguments)`` (a LangChain call may have no id)."""


def missing_extra(module: str, needs: str, extra: str, error: ImportError) -> ImportError:
    """The one-line error of the adapter ``module`` imported without the framework it ``needs``."""
    return ImportError(
        f"turnmemory.integrations.{module} needs {needs}: pip install 'turnmemory[{extra}]' ({error})"
    )


def assistant(text: str, made: Iterable[Call]) -> dict[str, Any]:
    """An assistant item: its prose, and its calls when it made any."""
    item: dict[str, Any] = {"role": "assistant", "content": text}
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for call_id, name, arguments in made
    ]
    if tool_calls:
        item["tool_calls"] = tool_calls
    return item


def tool(call_id: str, content: str, status: str) -> dict[str, Any]:
    """A tool item: the result text of the call ``call_id`` and whether it succeeded."""
    return {"role": "tool", "tool_call_id": call_id, "content": content, "status": status}


def calls(item: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The calls of an assistant item as ``(id, name, arguments)``."""
    return [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
        for call in item.get("tool_calls", ())
    ]


def call_names(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The tool name of every call the assistant items of ``items`` make, by call id."""
    return {
        call["id"]: call["function"]["name"]
        for item in items
        if item["role"] == "assistant"
        for call in item.get("tool_calls", ())
    }
