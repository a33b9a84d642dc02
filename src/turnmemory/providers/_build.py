"""Request assembly, and the incremental formatter that renders each historical message once.

A request is assembled from rendered messages: concatenated for item formats (Chat Completions,
Responses), merged into alternating turns for turn formats (Anthropic, Gemini, Bedrock), with the
pending provider state inserted before the final user message. Historical messages never change, so
the builder state after a conversation's history is kept (:class:`RequestCache`) and the next request
only renders what was appended: :class:`IncrementalFormatter` is one wire's ``to_request`` over its
build function, for one conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from turnmemory.memory import Message
from turnmemory.providers._read import Piece, piece_ids
from turnmemory.providers._render import Block, Item, Options, is_blank, replay_steps
from turnmemory.replay import HistoricalCall

__all__ = [
    "Build",
    "IncrementalFormatter",
    "ItemBuild",
    "RequestCache",
    "TurnBuild",
    "TurnFormat",
    "build_request",
    "item_request",
    "turn_request",
]


def _checked_pending(pending: Sequence[Item] | None) -> list[Item]:
    """``pending`` as a list, after a clear ``TypeError`` for anything that is not a sequence of objects."""
    if isinstance(pending, str | bytes | Mapping):
        raise TypeError(f"pending: expected a sequence of provider messages, got {type(pending).__name__}")
    items = list(pending or ())
    for j, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"pending[{j}]: expected an object (a provider-native message), got {type(item).__name__}"
            )
    return items


def _message(messages: Sequence[Message], index: int) -> Message:
    """``messages[index]``, after a clear ``TypeError`` when it is not a ``Message``."""
    message = messages[index]
    if not isinstance(message, Message):
        raise TypeError(f"messages[{index}]: expected a turnmemory.Message, got {type(message).__name__}")
    return message


def _final_user(messages: Sequence[Message]) -> int:
    """Where pending state goes: the index of the final user message, or ``len(messages)``."""
    return len(messages) - 1 if messages and messages[-1].role == "user" else len(messages)


class ItemBuild:
    """The items of a format without role merging (OpenAI Chat, Responses), built message by message.

    System messages become items like any other; their non-blank texts are also collected (Responses
    sends them as ``instructions``).
    """

    __slots__ = ("items", "render", "systems")

    def __init__(self, render: Callable[[Message, int, Options, set[str]], Sequence[Item]]) -> None:
        self.render = render
        self.items: list[Item] = []
        self.systems: list[str] = []

    def add(self, index: int, message: Message, options: Options, taken: set[str]) -> None:
        """Append one message's items."""
        if message.role == "system" and not is_blank(message.content):
            self.systems.append(message.content)
        self.items.extend(self.render(message, index, options, taken))

    def add_pending(self, pending: Sequence[Item]) -> None:
        """Append the pending provider state verbatim."""
        self.items.extend(pending)

    def tail(self) -> ItemBuild:
        """An empty builder for what follows this one; this one is left as it is."""
        return ItemBuild(self.render)

    def joined(self, tail: ItemBuild) -> tuple[list[str], list[Item]]:
        """System texts and items of this builder followed by ``tail``.

        Concatenated with ``+`` (as :meth:`TurnBuild.joined`): the list is allocated once at its size,
        where ``[*a, *b]`` allocates it for ``a`` and then grows it for ``b``, a reallocation that can
        copy the whole array of a long history again.
        """
        return self.systems + tail.systems, self.items + tail.items


@dataclass(frozen=True, slots=True)
class TurnFormat:
    """How a turn-based wire (Anthropic, Gemini, Bedrock) spells roles, prose, calls and results."""

    assistant_role: str
    content_key: str
    text: Callable[[str], Block]
    call: Callable[[HistoricalCall, bool], Block]
    """A call block; the flag is true for the first call of its batch."""
    result: Callable[[HistoricalCall], Block]
    pieces: Callable[[Sequence[Item]], list[Piece]]
    """The wire's reader (the ids of pending calls and results are read with it)."""
    strip_final: bool
    """Whether a request that ends with an assistant turn must not end in whitespace."""

    def render(
        self, message: Message, message_index: int, options: Options, taken: set[str]
    ) -> tuple[tuple[str, tuple[Block, ...]], ...]:
        """The message as ``(role, blocks)`` turns: a pure function of its arguments (and ``taken``)."""
        if message.role != "assistant":
            return () if is_blank(message.content) else (("user", (self.text(message.content),)),)
        turns: list[tuple[str, tuple[Block, ...]]] = []
        for step in replay_steps(message, message_index, options, taken):
            blocks = [self.text(step.text)] if step.text else []
            blocks.extend(self.call(call, n == 0) for n, call in enumerate(step.calls))
            if blocks:
                turns.append((self.assistant_role, tuple(blocks)))
            if step.calls:
                turns.append(("user", tuple(self.result(call) for call in step.calls)))
        return tuple(turns)


class TurnBuild:
    """The system texts and alternating turns of a turn-based format, built message by message.

    Adjacent same-role turns merge into one. Blank user and system messages are left out (these formats
    reject blank text). A conversation must open with the user, so assistant messages before the first
    non-blank user message are left out too, with their calls; pending state is kept verbatim (merged
    into a neighbouring turn of the same role). The wire dicts of turns that can no longer grow are built
    once and kept, so a resumed build only pays for what it adds.
    """

    __slots__ = ("_blocks", "_built", "_roles", "_verbatim", "fmt", "opened", "systems")

    def __init__(self, fmt: TurnFormat) -> None:
        self.fmt = fmt
        self.systems: list[str] = []
        self.opened = False
        self._roles: list[str] = []
        self._blocks: list[list[Block] | Sequence[Block]] = []
        self._verbatim: list[Item | None] = []
        self._built: list[Item] = []

    def add(self, index: int, message: Message, options: Options, taken: set[str]) -> None:
        """Add one conversation message."""
        if message.role == "system":
            if not is_blank(message.content):
                self.systems.append(message.content)
            return
        if message.role == "assistant" and not self.opened:
            return
        rendered = self.fmt.render(message, index, options, taken)
        self.opened = self.opened or bool(rendered)
        for role, blocks in rendered:
            self._add(role, blocks)

    def add_pending(self, pending: Sequence[Item]) -> None:
        """Add the pending provider state, each message verbatim unless it merges with a neighbour."""
        for message in pending:
            content = message.get(self.fmt.content_key)
            if isinstance(content, str):
                blocks: Sequence[Block] = [self.fmt.text(content)]
            else:
                blocks = content if isinstance(content, list) else []
            self._add(str(message.get("role")), blocks, message)

    def tail(self) -> TurnBuild:
        """A builder for what follows this one, holding a copy of the last turn (the only one that can grow).

        This one is left as it is, so a cached state can be continued by many requests.
        """
        self._build_closed()
        twin = TurnBuild(self.fmt)
        twin.opened = self.opened
        if self._roles:
            last = self._blocks[-1]
            twin._roles = [self._roles[-1]]
            twin._blocks = [list(last) if isinstance(last, list) else last]
            twin._verbatim = [self._verbatim[-1]]
        return twin

    def joined(self, tail: TurnBuild, *, strip_final: bool) -> tuple[list[str], list[Item]]:
        """System texts and wire turns of this builder's closed turns followed by ``tail``.

        With ``strip_final``, a final assistant text loses its trailing whitespace.
        """
        return self.systems + tail.systems, self._built + tail._messages(strip_final)

    def _messages(self, strip_final: bool) -> list[Item]:
        self._build_closed()
        last = len(self._roles) - 1
        if last < 0:
            return []
        tail = self._wire(last)
        if strip_final and self._roles[last] == self.fmt.assistant_role:
            blocks = self._blocks[last]
            text = blocks[-1].get("text") if blocks else None
            if isinstance(text, str) and text != text.rstrip():
                tail = {
                    "role": self._roles[last],
                    self.fmt.content_key: [*blocks[:-1], self.fmt.text(text.rstrip())],
                }
        return [*self._built, tail]

    def _add(self, role: str, blocks: Sequence[Block], verbatim: Item | None = None) -> None:
        if self._roles and self._roles[-1] == role:
            last = self._blocks[-1]
            if self._verbatim[-1] is not None or not isinstance(last, list):
                last = list(last)
                self._blocks[-1] = last
                self._verbatim[-1] = None
            last.extend(blocks)
            return
        self._roles.append(role)
        self._blocks.append(blocks)
        self._verbatim.append(verbatim)

    def _build_closed(self) -> None:
        """Build the wire dicts of every turn but the last (which may still merge with what follows)."""
        for i in range(len(self._built), len(self._roles) - 1):
            self._built.append(self._wire(i))

    def _wire(self, i: int) -> Item:
        verbatim = self._verbatim[i]
        return (
            verbatim
            if verbatim is not None
            else {"role": self._roles[i], self.fmt.content_key: list(self._blocks[i])}
        )


B = TypeVar("B", ItemBuild, TurnBuild)


def build_request(
    messages: Sequence[Message],
    pending: Sequence[Item] | None,
    options: Options,
    new: Callable[[], B],
    pieces: Callable[[Sequence[Item]], list[Piece]],
    cache: RequestCache | None = None,
) -> tuple[B, B]:
    """Feed a whole request into builders: one for the history, one (its ``tail``) for what follows.

    The history builder holds every message before the final user message; the tail holds the pending
    state (inserted right before the final user message, or at the end when the last message is not a
    user message) and that message. With a cache, the history builder is resumed from the previous
    request of the conversation and kept for the next one, so only the messages appended since are
    rendered.
    """
    items = _checked_pending(pending)
    taken = set(piece_ids(pieces(items)))
    if messages:
        _message(messages, len(messages) - 1)
    final = _final_user(messages)
    keep = cache if cache is not None and not _may_collide(taken, options) else None
    resumed = keep.take(messages, final, options) if keep is not None else None
    build, start = resumed if resumed is not None else (new(), 0)
    for index in range(start, final):
        build.add(index, _message(messages, index), options, taken)
    if keep is not None:
        keep.store(messages, final, options, build)
    tail = build.tail()
    tail.add_pending(items)
    if final < len(messages):
        tail.add(final, messages[final], options, taken)
    return build, tail


def item_request(
    messages: Sequence[Message],
    pending: Sequence[Item] | None,
    options: Options,
    render: Callable[[Message, int, Options, set[str]], Sequence[Item]],
    pieces: Callable[[Sequence[Item]], list[Piece]],
    cache: RequestCache | None = None,
) -> tuple[list[str], list[Item]]:
    """System texts and items of a format without role merging (OpenAI Chat, Responses)."""
    build, tail = build_request(messages, pending, options, lambda: ItemBuild(render), pieces, cache)
    return build.joined(tail)


def turn_request(
    fmt: TurnFormat,
    messages: Sequence[Message],
    pending: Sequence[Item] | None,
    options: Options,
    cache: RequestCache | None = None,
) -> tuple[list[str], list[Item]]:
    """System texts and alternating turns of a turn-based format (Anthropic, Gemini, Bedrock)."""
    build, tail = build_request(messages, pending, options, lambda: TurnBuild(fmt), fmt.pieces, cache)
    return build.joined(tail, strip_final=fmt.strip_final and not pending)


def _may_collide(taken: set[str], options: Options) -> bool:
    """Whether a pending id could equal a synthetic id (then rendering depends on the pending state)."""
    if options.id_style == "compact":
        return any(len(t) == 9 and t.startswith("h") for t in taken)
    return any(t.startswith("historical_") for t in taken)


class RequestCache:
    """The builder state of one conversation's last request, up to (not including) its final user message.

    The messages it covers are kept as a list that grows with the conversation, so neither checking a
    request against them nor keeping the next state copies the history: a request that extends the kept
    messages costs one pass of pointer comparisons (a list compares identical items without looking at
    them) and what it appends.
    """

    __slots__ = ("_build", "_messages", "_options")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._options: Options | None = None
        self._build: ItemBuild | TurnBuild | None = None

    def take(self, messages: Sequence[Message], final: int, options: Options) -> tuple[Any, int] | None:
        """The kept state and where to continue, when ``messages`` extends the kept prefix.

        The state is handed over, not copied: the cache holds no state until the caller stores the next one.
        """
        kept, build = self._messages, self._build
        self._build = None
        if build is None or options != self._options or len(kept) > final or not _starts_with(messages, kept):
            self._messages = []
            return None
        return build, len(kept)

    def store(
        self, messages: Sequence[Message], final: int, options: Options, build: ItemBuild | TurnBuild
    ) -> None:
        """Keep ``build`` as the state after ``messages[:final]``, which extend what :meth:`take` left kept
        (the caller must not change ``build`` afterwards)."""
        self._messages.extend(messages[len(self._messages) : final])
        self._options = options
        self._build = build


def _starts_with(messages: Sequence[Message], kept: list[Message]) -> bool:
    """Whether ``messages`` begins with the messages of ``kept``."""
    prefix = messages[: len(kept)]
    return (prefix if isinstance(prefix, list) else list(prefix)) == kept


P = ParamSpec("P")

Build = Callable[Concatenate[Sequence[Message], "RequestCache | None", P], dict[str, Any]]
"""A wire's build function: ``build(messages, cache, **keywords)``, its ``to_request`` with a cache."""


class IncrementalFormatter(Generic[P]):
    """A wire's ``to_request`` for one conversation, rendering each historical message once.

    Each provider module's ``Formatter()`` is one of these over its build function. Historical messages
    are immutable, so the rendering of the messages a request shares with the previous one (the same
    ``Message`` objects at the same positions) is reused: building the request for turn N+1 costs only
    what turn N added (and one copy of the returned list), and the result equals a cold ``to_request``.
    The returned request shares its historical blocks with later requests: treat it as read-only (copy
    a block before changing it).
    """

    __slots__ = ("_build", "_cache")

    def __init__(self, build: Build[P]) -> None:
        self._build = build
        self._cache = RequestCache()

    def to_request(self, messages: Sequence[Message], /, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        """The same request as the module's ``to_request`` (with the same keywords), built incrementally."""
        return self._build(messages, self._cache, *args, **kwargs)
