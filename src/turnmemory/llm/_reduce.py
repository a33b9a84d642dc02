"""The in-turn reducer: before each request of a turn, make it fit the model's context window.

A long agentic turn carries every tool call and result of the turn so far. When the estimated
request would exceed the window minus the output reserve, the reducer replaces, in the turn's trace
(the pending state of an earlier incomplete turn, then this turn's own items):

1. the contents of the oldest tool results, with a short note saying what was removed and that the
   tool can be run again (a JSON object result keeps its short scalar fields, such as an exit code), at least ``clear_at_least`` tokens at a time so that the cached prompt
   prefix changes rarely;
2. if still needed, the large values (over 256 bytes) inside the largest call arguments, such as
   written file bodies, except in responses that carry signed reasoning (thinking signatures,
   encrypted reasoning, thought signatures), which are never edited;
3. as a last resort, the results of the latest tool round (which the model has not read yet: their
   note says the output does not fit and asks for less of it at a time, not to run the tool again).

Ids, pairing, names and error status stay. The reduced items replace the originals in the trace, so
cleared items stay cleared for the rest of the turn (and in the pending state it may leave): later
requests extend the same prefix. Which parts of a provider-native item are results or arguments is
the wire format's knowledge (``pieces`` and ``replace`` of each provider module); the reducer only
picks and measures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._tokens import Accounting
from turnmemory.llm._tools import ToolSpec
from turnmemory.providers import Wire
from turnmemory.providers._read import Piece
from turnmemory.providers._render import Item

__all__ = ["CLEARED", "Reducer", "Reduction", "cleared_note"]

CLEARED = "[cleared to fit the context window"
"""How every note the reducer writes begins."""

_LARGE_VALUE = 256
"""Argument values whose compact JSON is larger than this many bytes are cleared."""

_FACT_BYTES = 80
"""String fields of a JSON result up to this size stay when its output is cleared."""

_ROUNDS = 4
"""Reductions tried per request before giving up (each re-measures the trace)."""


def cleared_note(what: str, tokens: int, name: str = "", *, unread: bool = False) -> str:
    """The note that replaces a cleared result (``what="output"``; ``unread``: one the model has not
    seen yet) or argument value."""
    tool = name or "the tool"
    if what == "output" and unread:
        return (
            f"{CLEARED}: the output of {tool} (~{tokens} tokens) does not fit. Ask for less of it at a time.]"
        )
    if what == "output":
        return (
            f"{CLEARED}: the output of {tool} (~{tokens} tokens) was removed. "
            "Run the tool again if you still need it.]"
        )
    return f"{CLEARED}: ~{tokens} tokens removed]"


@dataclass(frozen=True, slots=True)
class Reduction:
    """What one reduction did: the new trace, what it cleared and freed, and whether it fits now.

    ``tokens`` is the calibrated estimate of the whole request afterwards; ``freed`` the calibrated
    tokens it saved; ``pending`` whether items before ``len(injected)`` changed.
    """

    items: list[Item]
    results: int
    arguments: int
    freed: int
    tokens: int
    fits: bool
    pending: bool

    def summary(self) -> str:
        """One line for the user."""
        parts = []
        if self.results:
            parts.append(f"{self.results} tool result{'s' if self.results != 1 else ''}")
        if self.arguments:
            parts.append(f"the arguments of {self.arguments} call{'s' if self.arguments != 1 else ''}")
        cleared = " and ".join(parts) or "nothing"
        return f"cleared {cleared} (~{self.freed} tokens) to fit the context window"


class Reducer:
    """Measures a turn's requests and reduces their trace (one reducer per turn: it memoizes items)."""

    def __init__(self, wire: Wire, accounting: Accounting) -> None:
        self._wire = wire
        self.accounting = accounting
        self._sizes: dict[int, tuple[object, int]] = {}

    @property
    def budget(self) -> int:
        """The most (calibrated) tokens a request may carry."""
        return self.accounting.limits.budget

    def measure(self, request: Mapping[str, Any], items_key: str, tools: Sequence[ToolSpec]) -> int:
        """The raw estimate of ``request`` plus the definitions of ``tools`` (uncalibrated)."""
        total = sum(self._size(value) for key, value in request.items() if key != items_key)
        total += self.tokens(request[items_key])
        return total + sum(self._size(spec, _definition) for spec in tools)

    def tokens(self, items: Sequence[Any]) -> int:
        """The raw estimate of ``items``."""
        return sum(self._size(item) for item in items)

    def fits(self, raw: int) -> bool:
        """Whether a request estimated at ``raw`` fits the budget."""
        return self.accounting.scaled(raw) <= self.budget

    def bound(self, request: Mapping[str, Any], tools: Sequence[ToolSpec]) -> int | None:
        """An upper bound on :meth:`measure` taken without the tokenizer, or ``None`` once it is loaded
        (counting is cheap then): the UTF-8 bytes of the compact JSON of ``request`` and the definitions
        of ``tools``, since no tokenizer counts more tokens than bytes."""
        if self.accounting.counter.loaded:
            return None
        texts = (compact_json(dict(request)), compact_json([_definition(spec) for spec in tools]))
        return sum(len(text.encode("utf-8")) for text in texts)

    def overflow_message(self, raw: int) -> str:
        """Why a request estimated at ``raw`` cannot be sent, in one line."""
        limits = self.accounting.limits
        return (
            f"context overflow: the request needs about {self.accounting.scaled(raw)} tokens, more than the "
            f"{self.budget} a {limits.window}-token window allows after {limits.reserve} for the output "
            "and a 5% margin, and no tool result or argument is left to clear"
        )

    def reduce(self, raw: int, injected: Sequence[Item], turn: Sequence[Item]) -> Reduction:
        """Reduce the trace ``injected + turn`` of a request estimated at ``raw`` until it fits."""
        trace = [*injected, *turn]
        other = raw - self.tokens(trace)
        results = arguments = 0
        changed: set[int] = set()
        for _ in range(_ROUNDS):
            size = other + self.tokens(trace)
            if self.fits(size):
                break
            step = self._step(trace, size)
            if step is None:
                break
            trace, cleared_results, cleared_arguments, touched = step
            results += cleared_results
            arguments += cleared_arguments
            changed |= touched
        after = other + self.tokens(trace)
        return Reduction(
            items=trace,
            results=results,
            arguments=arguments,
            freed=max(self.accounting.scaled(raw) - self.accounting.scaled(after), 0),
            tokens=self.accounting.scaled(after),
            fits=self.fits(after),
            pending=any(index < len(injected) for index in changed),
        )

    def _step(self, trace: list[Item], raw: int) -> tuple[list[Item], int, int, set[int]] | None:
        """One pass of clearing: the new trace, results and calls cleared, touched item indices."""
        accounting = self.accounting
        need = raw - accounting.raw(self.budget)
        chunk = max(need, accounting.raw(accounting.limits.clear_at_least))
        pieces = [piece for piece in self._wire.pieces(trace) if piece.kind in ("call", "result")]
        names = {piece.call_id: piece.name for piece in pieces if piece.kind == "call"}
        latest = _latest_round(pieces)
        older = [p for i, p in enumerate(pieces) if p.kind == "result" and i < latest]
        newest = [p for i, p in enumerate(pieces) if p.kind == "result" and i >= latest]
        calls = [p for p in pieces if p.kind == "call" and p.editable and p.arguments]
        calls.sort(key=lambda piece: -len(compact_json(piece.arguments)))
        edits: list[tuple[Piece, str | dict[str, Any]]] = []
        freed = 0
        for stage, goal in ((older, chunk), (calls, need), (newest, need)):
            for piece in stage:
                if freed >= goal:
                    break
                name = piece.name or names.get(piece.call_id, "")
                content, saved = self._clear(piece, name, unread=stage is newest)
                if saved > 0:
                    edits.append((piece, content))
                    freed += saved
        if not edits:
            return None
        reduced = list(trace)
        for piece, content in edits:
            reduced[piece.item] = self._wire.replace(reduced[piece.item], piece, content)
        results = sum(1 for piece, _ in edits if piece.kind == "result")
        return reduced, results, len(edits) - results, {piece.item for piece, _ in edits}

    def _clear(self, piece: Piece, name: str, *, unread: bool) -> tuple[str | dict[str, Any], int]:
        """The replacement for ``piece`` and the raw tokens it saves (0 or less: not worth it)."""
        count = self.accounting.counter
        if piece.kind == "result":
            if CLEARED in piece.text:
                return "", 0
            size = count.text(piece.text)
            note = cleared_note("output", self.accounting.scaled(size), name, unread=unread)
            content = note if piece.error else _with_facts(piece.text, note)
            return content, size - count.text(content)
        arguments = dict(piece.arguments or {})
        saved = 0
        for key, value in arguments.items():
            text = compact_json(value)
            if len(text.encode("utf-8")) > _LARGE_VALUE:
                size = count.text(text)
                note = cleared_note("arguments", self.accounting.scaled(size))
                arguments[key] = note
                saved += size - count.value(note)
        return arguments, saved

    def _size(self, value: object, render: Callable[[Any], object] | None = None) -> int:
        """The raw estimate of ``value`` (as ``render`` shows it), memoized by identity (the value is
        kept alive meanwhile, so its id is not reused)."""
        found = self._sizes.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        size = self.accounting.counter.value(render(value) if render is not None else value)
        self._sizes[id(value)] = (value, size)
        return size


def _with_facts(text: str, note: str) -> str:
    """``note``, keeping the short scalar fields of a JSON object result (an exit code, a path)."""
    try:
        value = json.loads(text)
    except ValueError:
        return note
    if not isinstance(value, dict):
        return note
    facts = {
        key: item
        for key, item in value.items()
        if item is None
        or isinstance(item, bool | int | float)
        or (isinstance(item, str) and len(item.encode("utf-8")) <= _FACT_BYTES)
    }
    return compact_json({**facts, "cleared": note}) if facts else note


def _latest_round(pieces: Sequence[Piece]) -> int:
    """The index in ``pieces`` where the latest round of calls (and their results) begins."""
    start = 0
    for index in range(1, len(pieces)):
        if pieces[index].kind == "call" and pieces[index - 1].kind == "result":
            start = index
    return start


def _definition(spec: ToolSpec) -> object:
    """A tool definition as counted: its name, description and schema."""
    return [spec.name, spec.description, spec.schema()]
