"""OpenAI Chat Completions (and OpenAI-compatible servers): history as a ``messages`` list.

Each historical batch becomes one assistant message with ``tool_calls`` (``content`` only when prose
precedes the calls; ``arguments`` a compact JSON string) followed by one ``tool`` message per call
carrying the compact JSON result. System messages stay ``system`` messages in place. Use it as::

    client.chat.completions.create(model=..., tools=..., **openai_chat.to_request(history, model=...))

``model=`` (the served model's name) applies what that model family's chat template needs (see
:func:`family`): consecutive single-call exchanges instead of a batch for Llama 3.x, gpt-oss and
Phi-4-mini, 9-character alphanumeric ids and strict user/assistant alternation for the Mistral family.
``single_calls=`` and ``id_style=`` force either behaviour whatever the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import (
    IncrementalFormatter,
    RequestCache,
    item_request,
)
from turnmemory.providers._families import Family, family
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    Options,
    cached_json,
    missing_names,
    replay_steps,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "MAX_ID",
    "Family",
    "Formatter",
    "family",
    "placeholder_tool",
    "placeholder_tools",
    "replayed_tool_names",
    "to_request",
]

MAX_ID = 40
"""The longest ``tool_calls[].id`` OpenAI accepts."""


def _render(message: Message, message_index: int, options: Options, taken: set[str]) -> tuple[Block, ...]:
    """The message as Chat messages: a pure function of its arguments (and ``taken``)."""
    if message.role != "assistant":
        return ({"role": message.role, "content": message.content},)
    out: list[Block] = []
    for step in replay_steps(message, message_index, options, taken):
        text = step.text
        if text and (not step.calls or options.prose_apart):
            out.append({"role": "assistant", "content": text})
            text = ""
        batches = (
            [(call,) for call in step.calls] if options.single_calls else [step.calls] if step.calls else []
        )
        for calls in batches:
            out.append(_calls_message(text, calls, options))
            out.extend(
                {"role": "tool", "tool_call_id": call.id, "content": cached_json(call.result)}
                for call in calls
            )
            text = ""
    if options.alternating and (not out or out[-1]["role"] != "assistant"):
        out.append({"role": "assistant", "content": ""})
    return tuple(out)


def _calls_message(text: str, calls: Sequence[HistoricalCall], options: Options) -> Block:
    """An assistant message holding ``calls`` (and ``text``, when there is prose before them)."""
    assistant: Block = {"role": "assistant"}
    if text or options.alternating:
        assistant["content"] = text
    assistant["tool_calls"] = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": tool_name(call.name), "arguments": cached_json(call.arguments)},
        }
        for call in calls
    ]
    return assistant


def _pending_ids(pending: Sequence[Item]) -> Iterator[str]:
    for message in pending:
        if isinstance(message.get("tool_call_id"), str):
            yield message["tool_call_id"]
        for call in _tool_calls(message):
            if isinstance(call.get("id"), str):
                yield call["id"]


def _tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, Mapping)] if isinstance(calls, list) else []


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    single_calls: bool | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """``{"messages": [...]}`` for ``client.chat.completions.create``.

    ``model`` (the served model's name) chooses the wire form its family needs; ``id_style``
    (``"historical"`` or ``"compact"``) and ``single_calls`` override that choice when given.
    Without any of them, the spec's default form.
    """
    return _request(
        messages,
        None,
        pending=pending,
        arguments=arguments,
        id_style=id_style,
        single_calls=single_calls,
        model=model,
    )


def _options(
    arguments: ArgumentPolicy, id_style: IdStyle | None, single_calls: bool | None, model: str | None
) -> Options:
    """The replay options: the model family's form, with the explicit choices on top."""
    found: Family = family(model)
    single = found.single_calls if single_calls is None else single_calls
    return Options(
        arguments=arguments,
        id_style=found.id_style if id_style is None else id_style,
        single_calls=single,
        prose_apart=found.prose_apart and single,
        alternating=found.alternating,
    )


def _request(
    messages: Sequence[Message],
    cache: RequestCache | None,
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    single_calls: bool | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    options = _options(arguments, id_style, single_calls, model)
    _, items = item_request(messages, pending, options, _render, _pending_ids, cache)
    if (
        options.alternating
        and len(items) > 1
        and items[-1].get("role") == "user"
        and items[-2].get("role") == "tool"
    ):
        # Pending state that ends with results, then the new user message: close the assistant turn.
        items.insert(len(items) - 1, {"role": "assistant", "content": ""})
    return {"messages": items}


Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The function names of the ``tool_calls`` a request (or wire body) holds, in order, once each."""
    messages = request.get("messages")
    names = (
        call["function"]["name"]
        for message in (messages if isinstance(messages, list) else ())
        if isinstance(message, Mapping)
        for call in _tool_calls(message)
        if isinstance(call.get("function"), Mapping) and isinstance(call["function"].get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function tool definition for a replayed name the caller does not offer this turn."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": PLACEHOLDER_DESCRIPTION,
            "parameters": {"type": "object", "properties": {}},
        },
    }


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder definitions for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]
