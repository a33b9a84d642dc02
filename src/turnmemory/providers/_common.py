"""What the wire formats share: replay steps fit for a request, request assembly, and checking helpers.

Rendering is split in two so that historical messages, which never change, can be rendered once:
``render(message, message_index, options)`` is a pure function giving that message's provider pieces,
and the assembly step only concatenates (and, for turn-based formats, merges adjacent same-role turns),
inserting the pending provider state before the final user message.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import count, product
from typing import Any

from turnmemory.memory import Message
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle, Step, historical_steps, result_json

__all__ = [
    "PLACEHOLDER_DESCRIPTION",
    "Block",
    "Exchange",
    "Options",
    "TurnFormat",
    "adjacent_pairing",
    "compact_json",
    "duplicates",
    "is_blank",
    "is_json_text",
    "item_request",
    "json_object",
    "missing_names",
    "replay_steps",
    "tool_name",
    "turn_request",
]

Block = dict[str, Any]
"""One JSON-ready piece of a request: a content block, part, message or input item."""

PLACEHOLDER_DESCRIPTION = "A tool used in earlier turns that is not available now. Do not call it."
"""The description of a placeholder definition declared for a replayed tool the caller does not offer."""

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


@dataclass(frozen=True, slots=True)
class Options:
    """The replay options of one request, as ``to_request`` takes them."""

    arguments: ArgumentPolicy = "empty"
    id_style: IdStyle = "historical"


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or whitespace only."""
    return not text.strip()


@lru_cache(maxsize=1024)
def tool_name(name: str) -> str:
    """``name`` as every provider accepts it: ``[A-Za-z0-9_-]{1,64}`` (other characters become ``_``)."""
    return _INVALID_NAME_CHARS.sub("_", name)[:_MAX_NAME] or "_"


def compact_json(value: Mapping[str, Any]) -> str:
    """The compact JSON text of flat placeholder arguments or a result (they repeat, so it is cached)."""
    try:
        return _compact_json(tuple(value.items()))
    except TypeError:  # an unhashable value: not worth caching
        return result_json(value)


@lru_cache(maxsize=4096)
def _compact_json(items: tuple[tuple[str, Any], ...]) -> str:
    return result_json(dict(items))


def replay_steps(message: Message, message_index: int, options: Options, taken: set[str]) -> list[Step]:
    """The message's replay steps, ready to render.

    Every step text is either empty or holds non-whitespace: a whitespace-only stretch between two
    batches is prepended to the next non-blank text (or appended to the previous one at the end of the
    prose), so no whitespace is lost unless the whole prose is whitespace. Synthetic ids found in
    ``taken`` (ids of the pending state) are renamed deterministically, and renamed ids join ``taken``.
    """
    steps = historical_steps(message, message_index, arguments=options.arguments, id_style=options.id_style)
    texts = _attach_whitespace([step.text for step in steps])
    return [
        Step(
            text,
            tuple(_reserve(call, options.id_style, taken) for call in step.calls) if taken else step.calls,
        )
        for text, step in zip(texts, steps, strict=True)
    ]


def _attach_whitespace(texts: list[str]) -> list[str]:
    out: list[str] = []
    carry = ""
    for text in texts:
        if is_blank(text):
            carry += text
            out.append("")
        else:
            out.append(carry + text)
            carry = ""
    if carry:
        last = max((i for i, text in enumerate(out) if text), default=None)
        if last is not None:
            out[last] += carry
    return out


def _reserve(call: HistoricalCall, id_style: IdStyle, taken: set[str]) -> HistoricalCall:
    if call.id not in taken:
        return call
    candidates = _compact_variants(call.id) if id_style == "compact" else (f"{call.id}_{k}" for k in count(1))
    fresh = next(candidate for candidate in candidates if candidate not in taken)
    taken.add(fresh)
    return replace(call, id=fresh)


def _compact_variants(call_id: str) -> Iterator[str]:
    # Synthetic compact ids start with "h"; a variant never does, so it cannot meet another synthetic id.
    alphabet = string.digits + string.ascii_letters
    for width in range(1, len(call_id)):
        for prefix in product(alphabet, repeat=width):
            if prefix[0] != "h":
                yield "".join(prefix) + call_id[width:]


def _checked(messages: Sequence[Message], pending: Sequence[Block] | None) -> list[Block]:
    """``pending`` as a list, after a clear ``TypeError`` for anything that is not a message or an object."""
    for i, message in enumerate(messages):
        if not isinstance(message, Message):
            raise TypeError(f"messages[{i}]: expected a turnmemory.Message, got {type(message).__name__}")
    if isinstance(pending, str | bytes | Mapping):
        raise TypeError(f"pending: expected a sequence of provider messages, got {type(pending).__name__}")
    items = list(pending or ())
    for j, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"pending[{j}]: expected an object (a provider-native message), got {type(item).__name__}"
            )
    return items


def _final_user(messages: Sequence[Message]) -> int:
    """Where pending state goes: the index of the final user message, or ``len(messages)``."""
    return len(messages) - 1 if messages and messages[-1].role == "user" else len(messages)


def item_request(
    messages: Sequence[Message],
    pending: Sequence[Block] | None,
    options: Options,
    render: Callable[[Message, int, Options, set[str]], Sequence[Block]],
    pending_ids: Callable[[Sequence[Block]], Iterable[str]],
) -> list[Block]:
    """The item list of a format without role merging (OpenAI Chat, Responses)."""
    pending = _checked(messages, pending)
    taken = set(pending_ids(pending))
    final = _final_user(messages)
    items: list[Block] = []
    for index, message in enumerate(messages):
        if index == final:
            items.extend(pending)
        items.extend(render(message, index, options, taken))
    if final == len(messages):
        items.extend(pending)
    return items


@dataclass(frozen=True, slots=True)
class TurnFormat:
    """How a turn-based wire (Anthropic, Gemini, Bedrock) spells roles, prose, calls and results."""

    assistant_role: str
    content_key: str
    text: Callable[[str], Block]
    call: Callable[[HistoricalCall, bool], Block]
    """A call block; the flag is true for the first call of its batch."""
    result: Callable[[HistoricalCall], Block]
    pending_ids: Callable[[Sequence[Block]], Iterable[str]]
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


class _Turns:
    """The turns of a request being assembled; adjacent same-role turns merge into one."""

    def __init__(self, content_key: str) -> None:
        self._key = content_key
        self._roles: list[str] = []
        self._blocks: list[list[Block] | Sequence[Block]] = []
        self._verbatim: list[Block | None] = []

    def add(self, role: str, blocks: Sequence[Block], verbatim: Block | None = None) -> None:
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

    def add_pending(self, message: Block, text: Callable[[str], Block]) -> None:
        content = message.get(self._key)
        blocks = [text(content)] if isinstance(content, str) else content if isinstance(content, list) else []
        self.add(str(message.get("role")), blocks, message)

    def strip_end(self, assistant_role: str, text: Callable[[str], Block]) -> None:
        """Drop trailing whitespace from a final assistant text block."""
        if not self._roles or self._roles[-1] != assistant_role:
            return
        blocks = self._blocks[-1]
        tail = blocks[-1].get("text")
        if isinstance(tail, str) and tail != tail.rstrip():
            self._blocks[-1] = [*blocks[:-1], text(tail.rstrip())]
            self._verbatim[-1] = None

    def messages(self) -> list[Block]:
        return [
            verbatim if verbatim is not None else {"role": role, self._key: list(blocks)}
            for role, blocks, verbatim in zip(self._roles, self._blocks, self._verbatim, strict=True)
        ]


def turn_request(
    fmt: TurnFormat, messages: Sequence[Message], pending: Sequence[Block] | None, options: Options
) -> tuple[list[str], list[Block]]:
    """System texts and alternating turns of a turn-based format.

    Blank user and system messages are left out (these formats reject blank text). A conversation must
    open with the user, so assistant messages before the first non-blank user message are left out too,
    with their calls; pending state is kept verbatim (merged into a neighbouring turn of the same role).
    """
    pending = _checked(messages, pending)
    taken = set(fmt.pending_ids(pending))
    final = _final_user(messages)
    systems: list[str] = []
    turns = _Turns(fmt.content_key)
    opened = False
    for index, message in enumerate(messages):
        if index == final:
            for item in pending:
                turns.add_pending(item, fmt.text)
        if message.role == "system":
            if not is_blank(message.content):
                systems.append(message.content)
            continue
        if message.role == "assistant" and not opened:
            continue
        rendered = fmt.render(message, index, options, taken)
        opened = opened or bool(rendered)
        for role, blocks in rendered:
            turns.add(role, blocks)
    if final == len(messages):
        for item in pending:
            turns.add_pending(item, fmt.text)
    if fmt.strip_final and not pending:
        turns.strip_end(fmt.assistant_role, fmt.text)
    return systems, turns.messages()


def missing_names(replayed: Iterable[str], offered: Iterable[str]) -> list[str]:
    """The replayed names not in ``offered``, in order, once each."""
    have = set(offered)
    out: list[str] = []
    for name in replayed:
        if name not in have:
            have.add(name)
            out.append(name)
    return out


def duplicates(ids: Iterable[tuple[str, str]], what: str) -> list[str]:
    """Problems for every id seen before, given ``(where, id)`` pairs in request order."""
    first: dict[str, str] = {}
    out: list[str] = []
    for where, value in ids:
        if value in first:
            out.append(f"{where}: {what} id {value!r} already used at {first[value]}")
        else:
            first[value] = where
    return out


@dataclass(frozen=True, slots=True)
class Exchange:
    """The calls and results found in one message, as ``(where, id)`` pairs."""

    calls: tuple[tuple[str, str], ...] = ()
    results: tuple[tuple[str, str], ...] = ()


def adjacent_pairing(exchanges: Sequence[Exchange], *, call: str, result: str) -> list[str]:
    """Problems with calls that must be answered, each exactly once, in the very next message."""
    out: list[str] = []
    open_calls: dict[str, str] = {}
    for exchange in exchanges:
        answered: set[str] = set()
        for where, result_id in exchange.results:
            if result_id in answered:
                out.append(f"{where}: second {result} for {result_id!r}")
            elif result_id not in open_calls:
                out.append(
                    f"{where}: {result} for {result_id!r} does not answer a {call} in the previous message"
                )
            else:
                answered.add(result_id)
        out.extend(
            f"{where}: {call} {call_id!r} has no {result} in the next message"
            for call_id, where in open_calls.items()
            if call_id not in answered
        )
        open_calls = {call_id: where for where, call_id in exchange.calls}
    out.extend(
        f"{where}: {call} {call_id!r} has no {result}: no message follows"
        for call_id, where in open_calls.items()
    )
    return out


def json_object(value: object) -> bool:
    """Whether ``value`` is a JSON object (a mapping with string keys)."""
    return isinstance(value, Mapping) and all(isinstance(key, str) for key in value)


def is_json_text(value: object) -> bool:
    """Whether ``value`` is a string holding JSON."""
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True
