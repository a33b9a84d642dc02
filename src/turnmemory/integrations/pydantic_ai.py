"""TurnMemory for pydantic-ai agents: a history processor.

::

    from pydantic_ai import Agent
    from turnmemory.integrations.pydantic_ai import turn_memory

    agent = Agent("openai:gpt-5", capabilities=[turn_memory(workspace="/repo")])

``turn_memory`` is pydantic-ai's ``ProcessHistory`` capability (the current form of
``history_processors=``) around a :class:`TurnMemoryProcessor`, which is also usable on its own.

Before every model request the processor replaces each completed run (everything before the last
request holding a ``UserPromptPart``) by its TurnMemory replay: the ``TextPart`` prose in place, each
``ToolCallPart`` with ``{}`` arguments and its ``ToolReturnPart`` carrying the call's status and
outcomes, calls and returns paired. User and system prompt parts are kept as they are, and so is the
run in progress, whose tools run with full fidelity. pydantic-ai stores what a processor returns, so
the stored history becomes the compact one. Needs ``pip install 'turnmemory[pydantic-ai]'``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from turnmemory.integrations import _adapter

try:
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as error:  # pragma: no cover - only without the extra
    raise _adapter.missing_extra("pydantic_ai", "pydantic-ai", "pydantic-ai", error) from None

from turnmemory.integrations._compact import Compactor, CompactorOptions, last_index

__all__ = ["TurnMemoryProcessor", "turn_memory"]


def _user_text(part: UserPromptPart) -> str:
    content = part.content
    return content if isinstance(content, str) else "".join(c for c in content if isinstance(c, str))


def _request_items(message: ModelRequest, kept: list[tuple[ModelRequestPart, ModelRequest]]) -> Iterator[Any]:
    for part in message.parts:
        if isinstance(part, ToolReturnPart):
            status = "success" if part.outcome == "success" else "error"
            yield _adapter.tool(part.tool_call_id, part.model_response_str(), status)
        elif isinstance(part, RetryPromptPart) and part.tool_name is not None:  # pyright: ignore[reportDeprecated]
            yield _adapter.tool(part.tool_call_id, part.model_response(), "error")
        else:
            kept.append((part, message))
            role = "user" if isinstance(part, UserPromptPart) else "system"
            yield {"role": role, "content": _user_text(part) if isinstance(part, UserPromptPart) else ""}


def _response_item(message: ModelResponse) -> dict[str, Any]:
    text = "".join(part.content for part in message.parts if isinstance(part, TextPart))
    made = [
        (part.tool_call_id, part.tool_name, part.args_as_dict())
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    return _adapter.assistant(text, made)


class TurnMemoryProcessor:
    """A pydantic-ai history processor that replays completed runs as TurnMemory.

    ``options`` go to its :class:`~turnmemory.integrations.Compactor` (:class:`~turnmemory.integrations.CompactorOptions`).
    Use one per conversation for the incremental path; sharing one across conversations is correct,
    only slower.
    """

    def __init__(self, **options: Unpack[CompactorOptions]) -> None:
        self.compactor = Compactor("openai_chat", **options)

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """``messages`` with every run before the last user prompt replaced by its TurnMemory replay."""
        last = last_index(messages, _user_prompt)
        if last is None:
            return messages
        kept: list[tuple[ModelRequestPart, ModelRequest]] = []
        items: list[Any] = []
        for message in messages[: last + 1]:
            if isinstance(message, ModelRequest):
                items.extend(_request_items(message, kept))
            else:
                items.append(_response_item(message))
        return [*_from_chat(self.compactor.compact(items), iter(kept)), *messages[last + 1 :]]


def _user_prompt(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(
        isinstance(part, UserPromptPart) for part in message.parts
    )


def _from_chat(
    items: Sequence[Mapping[str, Any]], kept: Iterator[tuple[ModelRequestPart, ModelRequest]]
) -> list[ModelMessage]:
    """Compacted OpenAI Chat items as pydantic-ai messages; user and system items are the kept parts."""
    out: list[ModelMessage] = []
    parts: list[ModelRequestPart] = []
    template: ModelRequest | None = None
    names = _adapter.call_names(items)

    def close() -> None:
        nonlocal template
        if parts:
            out.append(
                dataclasses.replace(template, parts=list(parts))
                if template
                else ModelRequest(parts=list(parts))
            )
        parts.clear()
        template = None

    for item in items:
        if item["role"] == "assistant":
            close()
            response: list[Any] = [TextPart(item["content"])] if item.get("content") else []
            response += [
                ToolCallPart(name, arguments, tool_call_id=call_id)
                for call_id, name, arguments in _adapter.calls(item)
            ]
            out.append(ModelResponse(parts=response))
        elif item["role"] == "tool":
            call_id = item["tool_call_id"]
            parts.append(ToolReturnPart(names.get(call_id, ""), item["content"], tool_call_id=call_id))
        else:
            part, source = next(kept)
            template = template or source
            parts.append(part)
    close()
    return out


def turn_memory(**options: Unpack[CompactorOptions]) -> ProcessHistory[Any]:
    """The capability for ``Agent(..., capabilities=[turn_memory()])``; options as :class:`TurnMemoryProcessor`."""
    return ProcessHistory(TurnMemoryProcessor(**options))
