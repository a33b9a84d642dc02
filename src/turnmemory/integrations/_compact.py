"""TurnMemory for a provider-format message history: every completed turn becomes its compact replay.

A history is read with the provider module's own reader (``pieces``: prose, reasoning, tool calls and
their results, in order) and each completed turn recorded through a :class:`TurnRecorder`, as the
pending-state replay does; the resulting messages are formatted by the provider's own formatter. User
and system messages are kept as they were given (an Anthropic, Bedrock or Gemini user message that
also answers calls keeps only its other blocks: its results belong to the turn before), and so is
everything after the last user message (the turn in progress).

When a turn is compacted follows the boundary policy of :mod:`turnmemory.boundary`, as in the client
and the agent: ``"every_turn"`` (the spec, the default) compacts every completed turn;
``"when_it_pays"`` sends the turns since the last compaction as they were given until compacting them
pays for its cache rewrite; ``"never"`` sends them all as given. A message list carries no clock, so
the decision at each new user message uses what this side can know: the seconds since the previous
:meth:`Compactor.compact` call (the previous request) against ``cache_ttl``, the sizes of the raw and
the compacted turns (bytes of their compact JSON: the decision compares the two, so the unit
cancels), and the most requests a turn of the history took. A user message seen for the first time
together with later ones (the first call, or :func:`compact`) is decided without a pause.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, Unpack

from turnmemory._text import compact_json
from turnmemory.boundary import (
    BOUNDARY_POLICIES,
    DEFAULT_CACHE_TTL,
    DEFAULT_POLICY,
    Boundary,
    BoundaryPolicy,
    should_compact,
)
from turnmemory.memory import Message
from turnmemory.providers import PROVIDERS, Provider, Wire, wire
from turnmemory.providers._build import TurnFormat
from turnmemory.providers._read import Piece, record
from turnmemory.providers._render import Item
from turnmemory.providers._tools import ToolResult
from turnmemory.replay import ArgumentPolicy, IdStyle
from turnmemory.retention import DEFAULT_RULES, ToolRule
from turnmemory.segments import TurnRecorder
from turnmemory.transcripts import tool_outcome

__all__ = [
    "CompactOptions",
    "Compactor",
    "CompactorOptions",
    "Provider",
    "ResultParser",
    "compact",
    "last_index",
    "parse_result",
]

ResultParser = Callable[[str, Mapping[str, Any], str, bool], "tuple[Mapping[str, Any] | None, bool]"]
"""``(tool name, call arguments, result text, error flag) -> (outcome, failed)``.

The outcome is the output mapping the retention rules read (``{"file_changed": path}``,
``{"exit_code": n}``); ``failed`` marks a call that did not run (its activity gets status ``error``).
"""


class CompactOptions(TypedDict, total=False):
    """The keyword options of :func:`compact` besides ``model``.

    ``rules`` (what each tool keeps: :data:`~turnmemory.retention.DEFAULT_RULES` plus a
    :class:`~turnmemory.retention.ToolRule` for each of your own tools), ``result_parser``,
    ``workspace`` (paths become relative to it), ``arguments`` (``"empty"``, or ``"target"`` to replay
    the bounded target as the call's argument), ``id_style`` and ``boundary`` (when completed turns
    give way to their TurnMemory); :func:`compact` says more of each.
    """

    rules: Mapping[str, ToolRule]
    result_parser: ResultParser | None
    workspace: str | None
    arguments: ArgumentPolicy
    id_style: IdStyle | None
    boundary: BoundaryPolicy


class CompactorOptions(CompactOptions, total=False):
    """:class:`CompactOptions` and ``cache_ttl`` (the provider's cache lifetime in seconds, for
    ``"when_it_pays"``): the options of a framework adapter, which it passes to its :class:`Compactor`."""

    cache_ttl: float | None


_T = TypeVar("_T")

_PLACEHOLDER = "\u2063"  # stands for a kept user message while the formatter lays out the request
_EXIT_STATUS = re.compile(r"(?:\A|\n)(?:Error: )?exit status (-?\d+)\s*\Z")
_ERROR_PREFIXES = ("Error:", "Error executing tool", "An error occurred while running the tool")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code")


def parse_result(
    name: str,
    arguments: Mapping[str, Any],
    text: str,
    is_error: bool,
    *,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
) -> tuple[Mapping[str, Any] | None, bool]:
    """The default :data:`ResultParser`: common conventions of tool results.

    A JSON object result is the tool's output mapping (``exit_code``/``returncode``, ``file_changed``;
    a non-empty ``error`` string, ``is_error: true`` or ``status: "error"`` marks a failure), which
    also reads TurnMemory's own replayed results back unchanged. A text result of a command
    states its exit code as ``Exit code: 1``, ``Process exited with code 1``, ``<returncode>1``,
    ``exit status 1``, ...; a text result starting with ``Error:`` is a failure. What the result means
    for the call follows the tool's rule, exactly as the transcript importers read logs: a command
    that states an exit code ran, a write or edit that did not fail changed its ``path`` argument.
    """
    rule = rules.get(name)
    kind = rule.outcome if rule is not None else "none"
    path = _path(rule, arguments)
    data = _json_object(text)
    if data is not None:
        failed = (
            is_error
            or data.get("is_error") is True
            or data.get("status") == "error"
            or _non_empty(data.get("error"))
        )
        metadata = data.get(
            "metadata"
        )  # Codex's `shell` results: {"output": ..., "metadata": {"exit_code": n}}
        found = [data, *([metadata] if isinstance(metadata, dict) else [])]
        code = next((part[key] for part in found for key in _EXIT_KEYS if _is_int(part.get(key))), None)
        if kind == "exit_code" and code is not None:
            return {**data, "exit_code": code}, False
        if kind == "file_change" and not failed and "file_changed" not in data:
            return ({**data, "file_changed": path} if path else data), False
        return (None, True) if failed else (data, False)
    is_error = is_error or text.lstrip().startswith(_ERROR_PREFIXES)
    status = _EXIT_STATUS.search(text[-256:])
    return tool_outcome(kind, path, text, is_error, int(status.group(1)) if status else None)


def last_index(items: Sequence[_T], predicate: Callable[[_T], bool]) -> int | None:
    """The index of the last of ``items`` that ``predicate`` holds for, or ``None``."""
    return next((i for i in range(len(items) - 1, -1, -1) if predicate(items[i])), None)


def _path(rule: ToolRule | None, arguments: Mapping[str, Any]) -> str | None:
    if rule is None or rule.outcome != "file_change" or rule.target is None:
        return None
    return rule.target(arguments, None)


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_empty(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _checked(messages: Sequence[Any], provider: str) -> list[Mapping[str, Any]]:
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}; got {provider!r}")
    if isinstance(messages, str | bytes | Mapping):
        raise TypeError(f"messages: expected a list of {provider} messages, got {type(messages).__name__}")
    out = list(messages)
    for i, message in enumerate(out):
        if not isinstance(message, Mapping):
            raise TypeError(f"messages[{i}]: expected an object, got {type(message).__name__}")
    return out


@dataclass(frozen=True, slots=True)
class _Start:
    """A user message that starts a turn: its index in the given messages, and how many messages of the
    history stand before the next turn (its placeholder last)."""

    index: int
    history: int


@dataclass(frozen=True, slots=True)
class _Kept:
    """A message kept as given (a user or system message), at ``index`` of the given messages."""

    index: int
    message: Mapping[str, Any]


class Compactor:
    """:func:`compact` for one conversation, incremental: each completed turn is read and rendered once.

    Keep one per conversation and call :meth:`compact` before every model call. While the history only
    grows, the request prefix it returns never changes (a prompt cache keeps hitting) except where a
    boundary policy other than ``"every_turn"`` compacts deferred turns; a history that does not
    extend the previous one is compacted from scratch.
    """

    def __init__(
        self,
        provider: Provider = "openai_chat",
        *,
        rules: Mapping[str, ToolRule] = DEFAULT_RULES,
        result_parser: ResultParser | None = None,
        workspace: str | None = None,
        arguments: ArgumentPolicy = "empty",
        id_style: IdStyle | None = None,
        model: str | None = None,
        boundary: BoundaryPolicy = DEFAULT_POLICY,
        cache_ttl: float | None = DEFAULT_CACHE_TTL,
    ) -> None:
        _checked((), provider)
        if boundary not in BOUNDARY_POLICIES:
            raise ValueError(f"boundary must be one of {', '.join(BOUNDARY_POLICIES)}; got {boundary!r}")
        if cache_ttl is not None and not cache_ttl >= 0:
            raise ValueError(f"cache_ttl: expected seconds (at least 0) or None, got {cache_ttl!r}")
        self.provider: Provider = provider
        self.rules = rules
        self.workspace = workspace
        self.arguments: ArgumentPolicy = arguments
        self.id_style = id_style
        self.model = model
        self.boundary: BoundaryPolicy = boundary
        """When completed turns give way to their TurnMemory (:mod:`turnmemory.boundary`)."""
        self.cache_ttl = cache_ttl
        """The provider's cache lifetime in seconds (``None``: it never expires), for ``when_it_pays``."""
        self._parse: ResultParser = (
            result_parser
            if result_parser is not None
            else lambda name, args, text, error: parse_result(name, args, text, error, rules=rules)
        )
        self._wire: Wire = wire(provider)
        self._formatter = self._wire.Formatter()
        self._last_call: float | None = None
        self._reset()

    def _reset(self) -> None:
        self._read: list[Mapping[str, Any]] = []
        self._history: list[Message] = []
        self._kept: list[Any] = []
        self._starts: list[_Start] = []
        self._cut = 0  # the turns before self._starts[self._cut] are compacted
        self._longest = 1  # the most requests a completed turn took

    def compact(self, messages: Sequence[Any]) -> list[Item]:
        """``messages`` with the turns before the last user message replaced by their TurnMemory replay
        (under ``"every_turn"`` all of them; otherwise those the policy compacted so far)."""
        given = _checked(messages, self.provider)
        now = time.monotonic()
        idle, self._last_call = (None if self._last_call is None else now - self._last_call), now
        last = last_index(given, self._user_turn)
        if last is None:
            return [dict(message) for message in given]
        prefix = given[: last + 1]
        if len(prefix) < len(self._read) or any(
            a is not b and a != b for a, b in zip(self._read, prefix, strict=False)
        ):
            self._reset()
        seen = len(self._starts)
        self._extend(prefix[len(self._read) :], len(self._read))
        self._read = prefix
        if self.boundary == "every_turn" or not self._starts:
            end, history = last, self._history
        else:
            for n in range(max(seen, 1), len(self._starts)):
                self._decide(given, n, idle if n == len(self._starts) - 1 else None)
            cut = self._starts[self._cut]
            end, history = cut.index, self._history[: cut.history]
        if self.provider == "openai_chat":
            request = self._formatter.to_request(
                history, arguments=self.arguments, id_style=self.id_style, model=self.model
            )
        else:
            request = self._formatter.to_request(
                history, arguments=self.arguments, id_style=self.id_style or "historical"
            )
        items = request[self._wire.ITEMS]
        turns = self._wire.TURNS
        laid_out = _kept(items, self._kept) if turns is None else _turn_kept(turns, items, self._kept)
        return [*laid_out, *(dict(message) for message in given[end + 1 :])]

    def _decide(self, given: list[Mapping[str, Any]], n: int, idle: float | None) -> None:
        """Move the cut to the user message of ``self._starts[n]`` when the policy compacts there."""
        cut, start = self._starts[self._cut], self._starts[n]
        users = {s.index for s in self._starts[self._cut : n + 1]}
        raw = sum(_size(given[i]) for i in range(cut.index + 1, start.index) if i not in users)
        compacted = sum(
            _size(m.to_dict())
            for m in self._history[cut.history : start.history]
            if m.content != _PLACEHOLDER
        )
        decision = Boundary(raw, compacted, idle=idle, ttl=self.cache_ttl, requests_ahead=self._longest)
        if should_compact(decision, self.boundary):
            self._cut = n

    def _extend(self, messages: list[Mapping[str, Any]], offset: int) -> None:
        parts = _parts(self._wire, self.provider, messages)
        for part in parts[:-1]:  # the last part is the (empty) turn after the last user message
            if isinstance(part, tuple):
                self._longest = max(self._longest, _requests(part))
                if part or (self._kept and self._user_turn(self._kept[-1])):
                    self._history.append(self._replay(part))
                continue
            self._history.append(Message("user", _PLACEHOLDER))
            self._kept.append(part.message)
            if self._user_turn(part.message):
                self._starts.append(_Start(offset + part.index, len(self._history)))

    def _replay(self, pieces: Sequence[Piece]) -> Message:
        recorder = TurnRecorder(workspace=self.workspace, rules=self.rules)
        record(pieces, recorder, self._result)
        return recorder.finish()

    def _result(self, call: Piece, answer: Piece) -> ToolResult:
        outcome, failed = self._parse(call.name, call.arguments or {}, answer.text, answer.error)
        return ToolResult(output=outcome, error=(answer.text or "error") if failed else None)

    def _user_turn(self, message: Mapping[str, Any]) -> bool:
        """Whether ``message`` starts a user turn (a user message that is not only results)."""
        if message.get("role") != "user":
            return False
        if self._wire.TURNS is None:
            return bool(message.get("type", "message") == "message")
        results = {piece.slot for piece in self._wire.pieces([message]) if piece.kind == "result"}
        blocks = _blocks(self._wire.TURNS, message)
        return any(isinstance(block, Mapping) and slot not in results for slot, block in enumerate(blocks))


def _size(value: Any) -> int:
    """The size the boundary policy compares: UTF-8 bytes of the compact JSON."""
    return len(compact_json(value).encode("utf-8"))


def _requests(turn: Sequence[Piece]) -> int:
    """The requests a completed turn took: the first, and one after each run of tool results."""
    runs = sum(
        1
        for i, piece in enumerate(turn)
        if piece.kind == "result" and (i == 0 or turn[i - 1].kind != "result")
    )
    return 1 + runs


def _parts(
    wire: Wire, provider: str, messages: Sequence[Mapping[str, Any]]
) -> list[_Kept | tuple[Piece, ...]]:
    """``messages`` as kept messages (user and system messages, as given) and the pieces of the
    completed turns between them, in order.

    The last part is the turn after the last kept message (empty when that message is a user turn).
    """
    by_item: dict[int, list[Piece]] = {}
    for piece in wire.pieces(messages):
        by_item.setdefault(piece.item, []).append(piece)
    parts: list[_Kept | tuple[Piece, ...]] = []
    turn: list[Piece] = []
    for index, message in enumerate(messages):
        found = by_item.get(index, [])
        kept = _kept_part(wire, provider, message, found)
        turn.extend(piece for piece in found if kept is None or piece.kind == "result")
        if kept is not None:
            parts += [tuple(turn), _Kept(index, kept)]
            turn = []
    return [*parts, tuple(turn)]


def _kept_part(
    wire: Wire, provider: str, message: Mapping[str, Any], found: Sequence[Piece]
) -> Mapping[str, Any] | None:
    """What of ``message`` is kept as given (``None``: it is the assistant's work, or only results)."""
    role, turns = message.get("role"), wire.TURNS
    if turns is None:
        own = role in ("assistant", "tool") or message.get("type", "message") != "message"
        return None if own else message
    if role == turns.assistant_role:
        return None
    if role != "user":
        raise ValueError(
            f"{provider} messages: role must be 'user' or {turns.assistant_role!r}, got {role!r}"
        )
    results = {piece.slot for piece in found if piece.kind == "result"}
    rest = [
        block
        for slot, block in enumerate(_blocks(turns, message))
        if isinstance(block, Mapping) and slot not in results
    ]
    if not rest:
        return None
    content = message.get(turns.content_key)
    return {**message, turns.content_key: content if isinstance(content, str) else rest}


def _blocks(fmt: TurnFormat, message: Mapping[str, Any]) -> list[Any]:
    content = message.get(fmt.content_key)
    if isinstance(content, str):
        return [fmt.text(content)]
    return content if isinstance(content, list) else []


def _kept(items: list[Item], kept: list[Any]) -> list[Item]:
    """Item formats: the k-th user item laid out by the formatter is the k-th kept message."""
    originals = iter(kept)
    return [dict(next(originals)) if item.get("role") == "user" else item for item in items]


def _turn_kept(fmt: TurnFormat, turns: list[Item], kept: list[Any]) -> list[Item]:
    """Turn-based formats: each placeholder text block of a user turn stands for the next kept message.

    The formatter merges adjacent user turns; here each kept message stays a message of its own, as
    given, except that the results answering the calls of the turn before it come first in it.
    """
    key, placeholder = fmt.content_key, fmt.text(_PLACEHOLDER)
    originals = iter(kept)
    out: list[Item] = []
    for turn in turns:
        if turn.get("role") != "user":
            out.append(turn)
            continue
        results: list[Any] = []
        for block in turn[key]:
            if block != placeholder:
                results.append(block)
                continue
            original = next(originals)
            if not results:
                out.append(dict(original))
                continue
            content = original.get(key)
            blocks = [fmt.text(content)] if isinstance(content, str) else list(content)
            out.append({"role": "user", key: [*results, *blocks]})
            results = []
        if results:
            out.append({"role": "user", key: results})
    return out


def compact(
    messages: Sequence[Any],
    provider: Provider = "openai_chat",
    *,
    model: str | None = None,
    **options: Unpack[CompactOptions],
) -> list[Item]:
    """``messages`` (an OpenAI Chat, Anthropic, OpenAI Responses, Gemini or Bedrock list) with TurnMemory applied.

    Every turn before the last user message is replaced by its TurnMemory replay in the same format:
    the prose in place, each tool call replayed with ``{}`` arguments (``arguments="target"``: its
    bounded target) and answered by its status and outcomes. User and system messages, and everything
    after the last user message (the turn in progress), are returned as given. Tool results that only
    answer calls (Anthropic ``tool_result`` blocks, ``tool`` messages) do not start a user turn.

    ``rules`` says what each tool keeps (:data:`~turnmemory.retention.DEFAULT_RULES` plus your own
    :class:`~turnmemory.retention.ToolRule`\\ s); ``result_parser`` reads outcomes from results (default
    :func:`parse_result`); ``workspace`` makes paths relative; ``id_style`` (``"historical"``, or
    ``"compact"`` 9-character ids) and, for OpenAI Chat, ``model`` (the served model: the form its chat
    template needs, as :func:`turnmemory.providers.openai_chat.to_request` applies it). ``boundary``
    (``"every_turn"``, the default; ``"when_it_pays"``; ``"never"``) says which completed turns are
    compacted; one call knows no pause, so ``"when_it_pays"`` compacts only where the saving on the
    requests ahead exceeds the rewrite. The result is a pure function of the arguments, and a longer
    history of the same conversation starts with the same messages; under ``"every_turn"``
    compacting it again changes nothing. Keep a :class:`Compactor` per conversation to pay only for new turns (and, under
    ``"when_it_pays"``, to compact when the cache has gone cold).
    """
    return Compactor(provider, model=model, **options).compact(messages)
