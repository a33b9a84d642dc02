"""What every wire module shares, made once per wire from what is special about that wire.

A :class:`WireFormat` holds one wire's specifics: the request key of its item list, how it lays out
messages (a :class:`~turnmemory.providers._build.TurnFormat` for the turn formats, a renderer for the
item formats), its reader, its placeholder tool definition and where its system texts go. From them it
gives what every wire does the same way: the requests (``to_request`` and ``Formatter``), the tool
names a request replays and the placeholder definitions a caller must add. Each provider module makes
one (its ``WIRE``) and binds its public names to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import (
    IncrementalFormatter,
    RequestCache,
    TurnFormat,
    item_request,
    turn_request,
)
from turnmemory.providers._read import Piece, call_names
from turnmemory.providers._render import Item, Options, list_at, missing_names
from turnmemory.replay import ArgumentPolicy, IdStyle

__all__ = ["Reader", "Render", "Shape", "WireFormat"]

Render = Callable[[Message, int, Options, set[str]], Sequence[Item]]
"""How an item format renders one message: ``(message, index, options, taken ids) -> items``."""

Reader = Callable[[Sequence[Mapping[str, Any]]], list[Piece]]
"""How a wire reads native items back: their prose, reasoning, calls and results, in order."""

Shape = Callable[[list[str], list[Item]], dict[str, Any]]
"""How a wire lays out a request: its system texts and its item list as the request's keys."""


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One wire's specifics, and what every wire does the same way with them."""

    items: str
    """The request key of the item list (``messages``, ``input``, ``contents``)."""
    layout: TurnFormat | Render
    """How messages become items: merged into alternating turns (a turn format) or rendered one by one."""
    read: Reader
    """The wire's reader (``pieces``)."""
    placeholder: Callable[[str], dict[str, Any]]
    """The wire's minimal tool definition for a replayed name (``placeholder_tool``)."""
    shape: Shape | None = None
    """Where the system texts go beside the items; ``None`` where system messages are items (Chat)."""

    def to_request(
        self,
        messages: Sequence[Message],
        *,
        pending: Sequence[Item] | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle = "historical",
    ) -> dict[str, Any]:
        """The request for ``messages``, as the wire's SDK takes it: ``pending`` (provider-native items of
        an interrupted turn) goes before the final user message; ``arguments`` and ``id_style`` choose how
        historical calls are replayed."""
        return self.build(messages, None, pending=pending, arguments=arguments, id_style=id_style)

    def build(
        self,
        messages: Sequence[Message],
        cache: RequestCache | None,
        /,
        *,
        pending: Sequence[Item] | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle = "historical",
    ) -> dict[str, Any]:
        """:meth:`to_request`, resuming ``cache`` when given (what a ``Formatter`` builds with)."""
        return self.request(*self.assemble(messages, pending, Options(arguments, id_style), cache))

    def formatter(self) -> IncrementalFormatter[...]:
        """:meth:`to_request` for one conversation, built incrementally (each historical message is
        rendered once; the same keywords give the same requests)."""
        return IncrementalFormatter(self.build)

    def assemble(
        self,
        messages: Sequence[Message],
        pending: Sequence[Item] | None,
        options: Options,
        cache: RequestCache | None,
    ) -> tuple[list[str], list[Item]]:
        """The system texts and the items of a request, resuming ``cache`` when given."""
        if isinstance(self.layout, TurnFormat):
            return turn_request(self.layout, messages, pending, options, cache)
        return item_request(messages, pending, options, self.layout, self.read, cache)

    def request(self, systems: list[str], items: list[Item]) -> dict[str, Any]:
        """The request laid out from its system texts and its items."""
        return {self.items: items} if self.shape is None else self.shape(systems, items)

    def replayed_tool_names(self, request: Mapping[str, Any]) -> list[str]:
        """The names of the calls a request (or wire body) holds, in order, once each."""
        return call_names(self.read(list_at(request, self.items)))

    def placeholder_tools(self, request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
        """Placeholder definitions for every name the request replays that ``offered`` lacks."""
        return [self.placeholder(name) for name in missing_names(self.replayed_tool_names(request), offered)]
