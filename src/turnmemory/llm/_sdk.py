"""What the turn loop needs from one provider besides its wire format: the SDK half.

A provider's wire format (rendering history, writing results, reading native items) is its module in
:mod:`turnmemory.providers`; its SDK half, one class per provider in this package, opens the official
SDK client, streams a request into events and one :class:`Completion`, and classifies the SDK's errors.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from turnmemory.llm._retry import RequestFailure
from turnmemory.llm._tools import ToolSpec
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import Wire
from turnmemory.providers._render import Item
from turnmemory.providers._tools import Call
from turnmemory.replay import ArgumentPolicy, IdStyle, nine_alphanumerics

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "CallIds",
    "Completion",
    "Endpoint",
    "Query",
    "Sdk",
    "Settings",
    "StreamInterrupted",
    "given",
    "sdk_client",
]

DEFAULT_TIMEOUT = 300.0
"""Seconds without a byte of a response before a request fails (long reasoning can be silent for minutes)."""
DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection."""


class StreamInterrupted(ConnectionError):
    """The response stream ended before the provider said it was complete."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Request settings every provider reads.

    A provider ignores what it has no counterpart for (``reasoning_effort`` outside OpenAI,
    ``thinking`` on OpenAI, ``session_id`` outside OpenAI); Anthropic rejects ``temperature``.
    """

    model: str
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: int | None = None
    reasoning_effort: str | None = None
    session_id: str | None = None
    arguments: ArgumentPolicy = "empty"
    id_style: IdStyle | None = None
    """``None``: the Chat Completions wire chooses by the model's family, the others ``"historical"``."""
    single_calls: bool | None = None
    """Chat Completions: one call per assistant message (``None``: as the model's family needs)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How an SDK reaches its provider: SDK client options, or a ready SDK ``client``."""

    base_url: str | None = None
    api_key: str | None = None
    client: Any = None
    timeout: float = DEFAULT_TIMEOUT
    """Seconds to wait for the next bytes of a response (an SDK's read timeout)."""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """Seconds to wait for a connection."""
    region: str | None = None


def sdk_client(make: Callable[..., Any], endpoint: Endpoint) -> Any:
    """An Anthropic or OpenAI SDK client for ``endpoint``, the SDK's retries off: its ready ``client``,
    or a new one (``make``, the SDK's client class) with its key, base URL and timeouts."""
    if endpoint.client is not None:
        return endpoint.client.with_options(max_retries=0)
    import httpx2

    return make(
        api_key=endpoint.api_key,
        base_url=endpoint.base_url,
        max_retries=0,
        timeout=httpx2.Timeout(endpoint.timeout, connect=endpoint.connect_timeout),
    )


def given(**fields: Any) -> dict[str, Any]:
    """The ``fields`` that are set (not ``None``): a request's optional fields, from the settings."""
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Query:
    """One request of a turn as its SDK half sends it (each attempt sends the same).

    ``body`` is the formatter's request; ``turn_start`` the index in ``body[wire.ITEMS]`` where this
    turn's own items begin. Arguments longer than ``max_argument_bytes`` are counted, not kept: their
    call carries only their size (``Call.dropped_bytes``) and the response's items an empty object in
    their place, so memory stays bounded and none of their text reaches a later request.
    """

    body: Mapping[str, Any]
    tools: Sequence[ToolSpec]
    turn_start: int
    max_argument_bytes: int
    taken_ids: frozenset[str]
    """The call ids ``body`` holds, which no call of the response may take again."""


class CallIds:
    """The ids of one response's calls: each call's own where the wire takes it (``accepts``, the wire
    module's ``is_call_id``) and neither the request nor an earlier call of the response holds it, else
    a fresh one (``c`` and eight base-62 digits, which every wire takes). A model's id is echoed back
    within the turn, so an id the wire refuses, or one used twice, would make every later request of
    the turn fail; an id the wire takes is kept as the model made it (templates that show ids, as Kimi
    K2's ``functions.<name>:<n>``, pair calls and results by it)."""

    def __init__(self, taken: Iterable[str], accepts: Callable[[str], bool]) -> None:
        self._taken = set(taken)
        self._accepts = accepts
        self._next = 0

    def conform(self, call_id: str | None) -> str:
        """``call_id``, or a fresh id in its place; either is taken from now on."""
        kept = call_id if call_id and self._accepts(call_id) and call_id not in self._taken else None
        while kept is None or kept in self._taken:
            kept = nine_alphanumerics("c", self._next)
            self._next += 1
        self._taken.add(kept)
        return kept


@dataclass(frozen=True, slots=True)
class Completion:
    """One complete response: the native items to append, its tool calls, text, usage and stop."""

    items: tuple[Item, ...]
    calls: tuple[Call, ...]
    text: str
    usage: Usage
    stop: Reason = "stop"


class Sdk(Protocol):
    """One provider's SDK half. Implementations never mutate their arguments."""

    wire: Wire
    """The provider's module in :mod:`turnmemory.providers`."""

    settings: Settings

    max_tokens_stops: ClassVar[frozenset[str]] = frozenset()
    """The provider's stop reasons that say the output reached its token limit."""

    def reason(self, stop: str | None) -> Reason:
        """How the turn reads the provider's stop reason ``stop``."""
        return "max_tokens" if stop in self.max_tokens_stops else "stop"

    def options(self) -> dict[str, Any]:
        """The formatter keywords for these settings (Chat Completions adds the model's family form)."""
        return {"arguments": self.settings.arguments, "id_style": self.settings.id_style or "historical"}

    def injected(self, pending: list[Item]) -> list[Item]:
        """The pending items of an earlier turn as this provider sends them again."""
        return pending

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        """Send ``query``; yield text and reasoning events as they stream, then one ``Completion``.

        Raises the SDK's error (or :class:`StreamInterrupted`) when the request fails.
        """

    def failure(self, error: Exception) -> RequestFailure | None:
        """Classify an error raised by :meth:`stream`; ``None`` when it is not a provider failure."""
