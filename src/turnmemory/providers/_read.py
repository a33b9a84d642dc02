"""The reading direction every wire shares: native items read back as pieces, and pieces recorded.

Each provider module reads its own items into :class:`Piece` values (``pieces(items)``): the
assistant's prose, its reasoning, each tool call and each tool result, in order, with where they
stand. The in-turn reducer edits items at those places; :func:`record` feeds pieces into a
:class:`~turnmemory.TurnRecorder`, which is how the pending-state replay and ``compact()`` turn
native items back into a turn's message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory._text import compact_json
from turnmemory.providers._tools import ToolResult
from turnmemory.segments import TurnRecorder

__all__ = ["Piece", "PieceKind", "as_string", "as_text", "call_names", "piece_ids", "prose_text", "record"]

PieceKind = Literal["prose", "reasoning", "call", "result"]


@dataclass(frozen=True, slots=True)
class Piece:
    """One thing read from native items: assistant prose, reasoning, a tool call or a tool result.

    ``item`` is the index of its item in the list read and ``slot`` its place inside the item (the
    wire's own numbering: a block or part index, 0 where an item holds one piece). ``text`` is the
    prose or reasoning, or a result's content as the model reads it. A ``call`` has its ``call_id``,
    ``name``, ``arguments`` (``None`` when they are not an object), ``raw`` (the arguments as the
    wire carries them) and ``editable`` (false in a response with signed reasoning, which is never
    edited, and for arguments that are not an object). A ``result`` has the ``call_id`` it answers
    (empty where the wire pairs by name and order, as Gemini may), the tool's ``name`` where the wire
    repeats it, and ``error`` when the wire marks it failed.
    """

    item: int
    slot: int
    kind: PieceKind
    call_id: str = ""
    name: str = ""
    text: str = ""
    arguments: Mapping[str, Any] | None = None
    raw: str = ""
    error: bool = False
    editable: bool = True

    @classmethod
    def object_call(
        cls, item: int, slot: int, call_id: object, name: object, arguments: object, *, signed: bool
    ) -> Piece:
        """A call whose wire carries its arguments as an object: editable when they are one and its
        response carries no ``signed`` reasoning."""
        is_object = isinstance(arguments, dict)
        return cls(
            item,
            slot,
            "call",
            as_string(call_id),
            as_string(name),
            arguments=arguments if isinstance(arguments, dict) else None,
            editable=is_object and not signed,
        )

    @classmethod
    def answer(
        cls, item: int, slot: int, call_id: object, text: str, *, error: bool, name: object = ""
    ) -> Piece:
        """A result: the call it answers, its text as the model reads it, whether it failed."""
        return cls(item, slot, "result", as_string(call_id), as_string(name), text=text, error=error)


def as_string(value: object) -> str:
    """``value`` when it is a string (an id or a name in a request body may be anything), else ``""``."""
    return value if isinstance(value, str) else ""


def as_text(content: Any) -> str:
    """Text of a message or result content: a string, or text blocks joined (images as ``[image]``,
    JSON blocks as their compact JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return "" if content is None else compact_json(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping):
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
            elif block.get("type") in ("image", "image_url", "input_image"):
                parts.append("[image]")
            elif isinstance(block.get("json"), Mapping | list):  # a Bedrock json result block
                parts.append(compact_json(block["json"]))
            elif "content" in block:
                parts.append(as_text(block["content"]))
    return "\n".join(parts)


def prose_text(content: Any) -> str:
    """The text of an assistant message's content: a string, or its text parts joined as they streamed."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, Mapping)
        and part.get("type", "text") in ("text", "output_text", "input_text")
        and isinstance(part.get("text"), str)
    )


def call_names(pieces: Iterable[Piece]) -> list[str]:
    """The names of the calls among ``pieces``, in order, once each."""
    return list(dict.fromkeys(piece.name for piece in pieces if piece.kind == "call"))


def piece_ids(pieces: Iterable[Piece]) -> Iterator[str]:
    """Every call and result id the pieces carry."""
    return (piece.call_id for piece in pieces if piece.kind in ("call", "result") and piece.call_id)


def record(
    pieces: Iterable[Piece], recorder: TurnRecorder, result: Callable[[Piece, Piece], ToolResult]
) -> None:
    """Feed ``pieces`` to ``recorder`` in order: prose, reasoning, each call and its result.

    ``result(call, answer)`` reads what a result piece means for its call. A result without an id
    answers the first open call of its name. A call without a name or with an id seen before, and a
    result that answers no open call, are skipped, and a call never answered is not recorded (as for
    any unfinished call), so reading never fails. Output that follows results starts a new response
    (the recorder seals).
    """
    open_calls: dict[str, Piece] = {}
    seen: set[str] = set()
    answered = False
    for piece in pieces:
        if piece.kind == "result":
            key = piece.call_id or next(
                (key for key, call in open_calls.items() if call.name == piece.name), ""
            )
            call = open_calls.pop(key, None)
            if call is not None:
                outcome = result(call, piece)
                recorder.tool_end(key, output=outcome.output, error=outcome.error)
                answered = True
            continue
        if answered:
            recorder.seal()
            answered = False
        if piece.kind == "prose":
            recorder.text(piece.text)
        elif piece.kind == "reasoning":
            recorder.reasoning(piece.text)
        elif piece.name and piece.call_id not in seen:
            key = piece.call_id or f"\x00{len(seen)}"
            seen.add(key)
            open_calls[key] = piece
            recorder.tool_start(key, piece.name, dict(piece.arguments or {}))
