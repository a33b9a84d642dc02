"""TurnMemory for LangChain v1 agents: a middleware for ``create_agent``.

::

    from langchain.agents import create_agent
    from turnmemory.integrations.langchain import TurnMemoryMiddleware

    agent = create_agent(model, tools=[...], middleware=[TurnMemoryMiddleware(workspace="/repo")])

Before every model call the middleware replaces each completed turn of the request (everything before
the last ``HumanMessage``) by its TurnMemory replay: the ``AIMessage`` prose in place, each tool call
with ``{}`` arguments, each ``ToolMessage`` the call's status and outcomes. The turn in progress is
sent as it is, so the agent's tools run with full fidelity. The graph state keeps the full trace; with
``replace_history=True`` the state itself is compacted when a new turn starts (at the agent's start).
Needs ``pip install 'turnmemory[langchain]'``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Unpack

from turnmemory.integrations import _adapter

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as error:  # pragma: no cover - only without the extra
    raise _adapter.missing_extra("langchain", "langchain", "langchain", error) from None

from turnmemory.integrations._compact import Compactor, CompactorOptions, last_index

__all__ = ["TurnMemoryMiddleware"]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in parts
        if isinstance(part, str) or (isinstance(part, Mapping) and part.get("type") == "text")
    )


def _as_chat(message: AnyMessage) -> dict[str, Any]:
    """A LangChain message as an OpenAI Chat message (only what TurnMemory reads)."""
    if isinstance(message, AIMessage):
        made = [(call["id"], call["name"], call["args"]) for call in message.tool_calls]
        return _adapter.assistant(_content_text(message.content), made)
    if isinstance(message, ToolMessage):
        return _adapter.tool(message.tool_call_id, _content_text(message.content), message.status)
    return {"role": "user" if isinstance(message, HumanMessage) else "system", "content": message.text}


def _from_chat(item: Mapping[str, Any], names: Mapping[str, str]) -> AnyMessage:
    """A compacted OpenAI Chat assistant or tool item as a LangChain message."""
    if item["role"] == "tool":
        call_id = item["tool_call_id"]
        return ToolMessage(content=item["content"], tool_call_id=call_id, name=names.get(call_id))
    calls = [
        {"id": call_id, "name": name, "args": arguments, "type": "tool_call"}
        for call_id, name, arguments in _adapter.calls(item)
    ]
    return AIMessage(content=item.get("content") or "", tool_calls=calls)


class _Memo:
    """The conversions of the previous call, by object identity (graph state messages and the
    formatter's historical items are the same objects from one call to the next)."""

    def __init__(self) -> None:
        self.previous: dict[int, tuple[object, Any]] = {}
        self.current: dict[int, tuple[object, Any]] = {}

    def get(self, key: object, convert: Callable[[], Any]) -> Any:
        hit = self.previous.get(id(key))
        value = hit[1] if hit is not None and hit[0] is key else convert()
        self.current[id(key)] = (key, value)
        return value

    def done(self) -> None:
        self.previous, self.current = self.current, {}


class TurnMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Send the model each completed turn as its TurnMemory record instead of the raw tool trace.

    ``options`` go to its :class:`~turnmemory.integrations.Compactor` (:class:`~turnmemory.integrations.CompactorOptions`).
    ``replace_history=True`` also compacts the graph state at each new turn (the full trace is then
    gone from the checkpoint, not only from the requests).
    """

    def __init__(self, *, replace_history: bool = False, **options: Unpack[CompactorOptions]) -> None:
        super().__init__()
        self.compactor = Compactor("openai_chat", **options)
        self.replace_history = replace_history
        self._to_chat = _Memo()
        self._from_chat = _Memo()

    def compact(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """``messages`` with every turn before the last ``HumanMessage`` replaced by its TurnMemory replay.

        Human and system messages, and every message after the last human message, are the very
        objects given. Only what is new since the previous call is converted and compacted.
        """
        last = last_index(messages, lambda message: isinstance(message, HumanMessage))
        if last is None:
            return list(messages)
        prefix = messages[: last + 1]
        items = self.compactor.compact([self._to_chat.get(m, functools.partial(_as_chat, m)) for m in prefix])
        self._to_chat.done()
        kept = iter([m for m in prefix if not isinstance(m, AIMessage | ToolMessage)])
        names = _adapter.call_names(items)
        out = [
            self._from_chat.get(item, functools.partial(_from_chat, item, names))
            if item["role"] in ("assistant", "tool")
            else next(kept)
            for item in items
        ]
        self._from_chat.done()
        return [*out, *messages[last + 1 :]]

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """With ``replace_history``, compact the stored conversation as the new turn starts."""
        if not self.replace_history:
            return None
        messages = state["messages"]
        compacted = self.compact(messages)
        if len(compacted) == len(messages) and all(a is b for a, b in zip(compacted, messages, strict=True)):
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted]}

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the compacted messages."""
        return handler(request.override(messages=self.compact(request.messages)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Call the model with the compacted messages."""
        return await handler(request.override(messages=self.compact(request.messages)))
