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
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

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
    raise ImportError(
        f"turnmemory.integrations.pydantic_ai needs pydantic-ai: pip install 'turnmemory[pydantic-ai]' ({error})"
    ) from None

from turnmemory.boundary import DEFAULT_CACHE_TTL, DEFAULT_POLICY, BoundaryPolicy
from turnmemory.integrations._compact import Compactor, ResultParser
from turnmemory.replay import ArgumentPolicy, IdStyle
from turnmemory.retention import DEFAULT_RULES, ToolRule

__all__ = ["TurnMemoryProcessor", "turn_memory"]


def _user_text(part: UserPromptPart) -> str:
    content = part.content
    return content if isinstance(content, str) else "".join(c for c in content if isinstance(c, str))


def _request_items(message: ModelRequest, kept: list[tuple[ModelRequestPart, ModelRequest]]) -> Iterator[Any]:
    for part in message.parts:
        if isinstance(part, ToolReturnPart):
            status = "success" if part.outcome == "success" else "error"
            yield {
                "role": "tool",
                "tool_call_id": part.tool_call_id,
                "content": part.model_response_str(),
                "status": status,
            }
        elif isinstance(part, RetryPromptPart) and part.tool_name is not None:  # pyright: ignore[reportDeprecated]
            yield {
                "role": "tool",
                "tool_call_id": part.tool_call_id,
                "content": part.model_response(),
                "status": "error",
            }
        else:
            kept.append((part, message))
            role = "user" if isinstance(part, UserPromptPart) else "system"
            yield {"role": role, "content": _user_text(part) if isinstance(part, UserPromptPart) else ""}


def _response_item(message: ModelResponse) -> dict[str, Any]:
    text = "".join(part.content for part in message.parts if isinstance(part, TextPart))
    item: dict[str, Any] = {"role": "assistant", "content": text}
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": json.dumps(part.args_as_dict())},
        }
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    if calls:
        item["tool_calls"] = calls
    return item


class TurnMemoryProcessor:
    """A pydantic-ai history processor that replays completed runs as TurnMemory.

    Options as for :func:`turnmemory.integrations.compact`: ``rules`` (what each tool keeps; add a
    :class:`~turnmemory.retention.ToolRule` for your own tools), ``result_parser``, ``workspace``,
    ``arguments`` (``"empty"`` or ``"target"``), ``id_style``, and the boundary policy (``boundary``,
    ``cache_ttl``: when completed turns give way to their TurnMemory, :class:`~turnmemory.integrations.Compactor`). Use one per conversation for the
    incremental path; sharing one across conversations is correct, only slower.
    """

    def __init__(
        self,
        *,
        rules: Mapping[str, ToolRule] = DEFAULT_RULES,
        result_parser: ResultParser | None = None,
        workspace: str | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle = "historical",
        boundary: BoundaryPolicy = DEFAULT_POLICY,
        cache_ttl: float | None = DEFAULT_CACHE_TTL,
    ) -> None:
        self.compactor = Compactor(
            "openai_chat",
            rules=rules,
            result_parser=result_parser,
            workspace=workspace,
            arguments=arguments,
            id_style=id_style,
            boundary=boundary,
            cache_ttl=cache_ttl,
        )

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """``messages`` with every run before the last user prompt replaced by its TurnMemory replay."""
        last = next(
            (
                i
                for i in range(len(messages) - 1, -1, -1)
                if isinstance(messages[i], ModelRequest)
                and any(isinstance(part, UserPromptPart) for part in messages[i].parts)
            ),
            None,
        )
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


def _from_chat(
    items: Sequence[Mapping[str, Any]], kept: Iterator[tuple[ModelRequestPart, ModelRequest]]
) -> list[ModelMessage]:
    """Compacted OpenAI Chat items as pydantic-ai messages; user and system items are the kept parts."""
    out: list[ModelMessage] = []
    parts: list[ModelRequestPart] = []
    template: ModelRequest | None = None
    names: dict[str, str] = {}

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
            for call in item.get("tool_calls", ()):
                names[call["id"]] = call["function"]["name"]
                response.append(
                    ToolCallPart(
                        call["function"]["name"],
                        json.loads(call["function"]["arguments"]),
                        tool_call_id=call["id"],
                    )
                )
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


def turn_memory(
    *,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
    result_parser: ResultParser | None = None,
    workspace: str | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
    boundary: BoundaryPolicy = DEFAULT_POLICY,
    cache_ttl: float | None = DEFAULT_CACHE_TTL,
) -> ProcessHistory[Any]:
    """The capability for ``Agent(..., capabilities=[turn_memory()])``; options as :class:`TurnMemoryProcessor`."""
    return ProcessHistory(
        TurnMemoryProcessor(
            rules=rules,
            result_parser=result_parser,
            workspace=workspace,
            arguments=arguments,
            id_style=id_style,
            boundary=boundary,
            cache_ttl=cache_ttl,
        )
    )
