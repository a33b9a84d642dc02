"""Provider-native replay: one pure, dependency-free module per wire format, owning that wire both ways.

Each module has ``to_request(messages, *, pending=None, arguments="empty", id_style="historical")``
(``openai_chat`` also ``model=``, the served model, whose family's chat template may need another form)
returning plain JSON-ready dicts for the official SDK, and ``Formatter()`` for the same requests built
incrementally; ``replayed_tool_names(request)`` and ``placeholder_tool(name)`` /
``placeholder_tools(request, offered)``; and the reading direction: ``pieces(items)`` (the prose,
reasoning, calls and results of native items), ``replace(item, piece, content)`` and
``tool_results(calls, results)``; and the images a user attaches to a turn: ``with_images(message,
images)`` (the wire's image parts before a user message's text), ``IMAGE_TYPES``, ``MAX_IMAGE_BYTES`` and
``image_tokens(image)`` (see :mod:`turnmemory.providers._images`). Every module satisfies :class:`Wire`.
A module holds only what is special about its wire; what every wire does alike with it (the requests,
the replayed tool names, the placeholder definitions) is written once, in
:class:`~turnmemory.providers._wire.WireFormat`. The :mod:`turnmemory.providers.check` package holds
each wire's rules and checks any request body against them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from turnmemory.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.providers._build import IncrementalFormatter, TurnFormat
from turnmemory.providers._images import Image
from turnmemory.providers._read import Piece
from turnmemory.providers._render import Item
from turnmemory.providers._tools import Call, ToolResult

__all__ = [
    "PROVIDERS",
    "Provider",
    "Wire",
    "anthropic",
    "bedrock",
    "gemini",
    "openai_chat",
    "openai_responses",
    "wire",
]

Provider = Literal["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"]
"""A provider (wire format) name."""

PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")
"""The provider (wire format) names, as every layer knows them."""


class Wire(Protocol):
    """What every provider module provides: its wire format, both ways."""

    @property
    def ITEMS(self) -> str:
        """The request key of the item list (``messages``, ``input``, ``contents``)."""

    @property
    def TURNS(self) -> TurnFormat | None:
        """How a turn format spells roles and blocks; ``None`` for item formats (Chat, Responses)."""

    @property
    def Formatter(self) -> Callable[[], IncrementalFormatter[...]]:
        """An incremental ``to_request`` for one conversation."""

    def pieces(self, items: Sequence[Mapping[str, Any]]) -> list[Piece]:
        """The prose, reasoning, calls and results of native ``items``, in order."""

    def replace(self, item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
        """A copy of ``item`` with the result or arguments of ``piece`` replaced by ``content``."""

    def tool_results(self, calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
        """The native item(s) carrying ``results`` for ``calls``, in order."""

    def replayed_tool_names(self, request: Mapping[str, Any]) -> list[str]:
        """Every tool name that ``request`` carries calls of, in order, once each."""

    @property
    def IMAGE_TYPES(self) -> tuple[str, ...]:
        """The media types of the images the wire takes."""

    @property
    def MAX_IMAGE_BYTES(self) -> int:
        """The largest image the wire takes, in bytes."""

    def image_tokens(self, image: Image) -> int:
        """The input tokens ``image`` costs on this wire (the provider's formula)."""

    def with_images(self, message: Item, images: Sequence[Image]) -> Item:
        """A copy of the user ``message`` with the wire's image parts for ``images`` before its text."""


_WIRES: dict[str, Wire] = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
}


def wire(provider: str) -> Wire:
    """The module of ``provider``; a ``ValueError`` naming the known providers for any other name."""
    found = _WIRES.get(provider)
    if found is None:
        raise ValueError(f"provider: expected one of {', '.join(PROVIDERS)}, got {provider!r}")
    return found
