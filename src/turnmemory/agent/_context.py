"""``/context``: what the next request carries, layer by layer, in bytes and tokens."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm import Client, ToolSpec
from turnmemory.memory import Message

__all__ = ["ContextLayer", "context_layers"]


@dataclass(frozen=True, slots=True)
class ContextLayer:
    """One layer of the next request: its size in UTF-8 bytes of the provider's JSON, and in tokens
    (the client's estimate, calibrated by the usage the provider reported)."""

    name: str
    size: int
    tokens: int = 0


def context_layers(
    provider: str, client: Client, history: Sequence[Message], tools: Sequence[ToolSpec]
) -> list[ContextLayer]:
    """The layers of the next request of ``client`` (a ``provider`` client): ``history`` (the system
    prompt first), ``tools`` and the client's pending state, each as the client estimates it."""
    pending = client.pending or []
    accounting = client.accounting

    def layer(name: str, text: str, minus: str = "") -> ContextLayer:
        tokens = accounting.counter.text(text) - (accounting.counter.text(minus) if minus else 0)
        return ContextLayer(name, max(_size(text) - _size(minus), 0), accounting.scaled(max(tokens, 0)))

    layers = [
        layer("system", history[0].content),
        layer("tool definitions", json.dumps([spec.schema() for spec in tools])),
        layer("user", "\n".join(m.content for m in history if m.role == "user")),
        layer("assistant prose", "\n".join(m.content for m in history if m.role == "assistant")),
    ]
    formatter = _formatter(provider)
    if formatter is not None:
        bare = [Message(role=m.role, content=m.content) for m in history]
        layers.append(
            layer("historical tool blocks", compact_json(formatter(history)), compact_json(formatter(bare)))
        )
    layers.append(layer("pending", compact_json(pending) if pending else ""))
    return layers


def _formatter(provider: str) -> Callable[[Sequence[Message]], Any] | None:
    try:
        module = importlib.import_module(f"turnmemory.providers.{provider}")
    except ModuleNotFoundError:
        return None
    to_request: Callable[[Sequence[Message]], Any] = module.to_request
    return to_request


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
