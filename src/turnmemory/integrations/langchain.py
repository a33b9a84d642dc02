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

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from turnmemory.integrations._compact import Compactor, ResultParser
from turnmemory.replay import ArgumentPolicy, IdStyle
from turnmemory.retention import DEFAULT_RULES, ToolRule

__all__ = ["TurnMemoryMiddleware", "compact_messages"]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in parts
        if isinstance(part, str) or (isinstance(part, Mapping) and part.get("type") == "text")
    )


def _as_chat(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as an OpenAI Chat message (only what TurnMemory reads)."""
    if isinstance(message, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": _content_text(message.content)}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for call in message.tool_calls
            ]
        return out
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": _content_text(message.content),
            "status": message.status,
        }
    return {"role": "user" if isinstance(message, HumanMessage) else "system", "content": message.text}


def _from_chat(items: Sequence[Mapping[str, Any]], kept: Iterator[BaseMessage]) -> list[BaseMessage]:
    """Compacted OpenAI Chat items as LangChain messages; user and system items are the ``kept`` originals."""
    out: list[BaseMessage] = []
    names: dict[str, str] = {}
    for item in items:
        role = item["role"]
        if role == "assistant":
            calls = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "type": "tool_call",
                }
                for call in item.get("tool_calls", ())
            ]
            names.update((call["id"], call["name"]) for call in calls)
            out.append(AIMessage(content=item.get("content") or "", tool_calls=calls))
        elif role == "tool":
            call_id = item["tool_call_id"]
            out.append(ToolMessage(content=item["content"], tool_call_id=call_id, name=names.get(call_id)))
        else:
            out.append(next(kept))
    return out


def compact_messages(messages: Sequence[AnyMessage], compactor: Compactor) -> list[AnyMessage]:
    """``messages`` with every turn before the last ``HumanMessage`` replaced by its TurnMemory replay.

    ``compactor`` is an ``openai_chat`` :class:`~turnmemory.integrations.Compactor` (one per
    conversation pays only for new turns). Human and system messages, and every message after the last
    human message, are the very objects given.
    """
    last = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)), None)
    if last is None:
        return list(messages)
    prefix = messages[: last + 1]
    items = compactor.compact([_as_chat(message) for message in prefix])
    kept = (m for m in prefix if not isinstance(m, AIMessage | ToolMessage))
    return [*_from_chat(items, kept), *messages[last + 1 :]]


class TurnMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Send the model each completed turn as its TurnMemory record instead of the raw tool trace.

    Options as for :func:`turnmemory.integrations.compact`: ``rules`` (what each tool keeps; add a
    :class:`~turnmemory.retention.ToolRule` for your own tools), ``result_parser``, ``workspace`` (paths
    become relative to it), ``arguments`` (``"empty"``, or ``"target"`` to replay the bounded target
    as the call's argument) and ``id_style``. ``replace_history=True`` also compacts the graph state at
    each new turn (the full trace is then gone from the checkpoint, not only from the requests).
    """

    def __init__(
        self,
        *,
        rules: Mapping[str, ToolRule] = DEFAULT_RULES,
        result_parser: ResultParser | None = None,
        workspace: str | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle = "historical",
        replace_history: bool = False,
    ) -> None:
        super().__init__()
        self.compactor = Compactor(
            "openai_chat",
            rules=rules,
            result_parser=result_parser,
            workspace=workspace,
            arguments=arguments,
            id_style=id_style,
        )
        self.replace_history = replace_history

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """With ``replace_history``, compact the stored conversation as the new turn starts."""
        if not self.replace_history:
            return None
        messages = state["messages"]
        compacted = compact_messages(messages, self.compactor)
        if len(compacted) == len(messages) and all(a is b for a, b in zip(compacted, messages, strict=True)):
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted]}

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the compacted messages."""
        return handler(request.override(messages=compact_messages(request.messages, self.compactor)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Call the model with the compacted messages."""
        return await handler(request.override(messages=compact_messages(request.messages, self.compactor)))
