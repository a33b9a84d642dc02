"""The in-turn reducer: before each request of a turn, make it fit the model's context window.

A long agentic turn carries every tool call and result of the turn so far. When the estimated
request would exceed the window minus the output reserve, the reducer rewrites, in the turn's trace
(the pending state of an earlier incomplete turn, then this turn's own items):

1. the contents of the oldest tool results, with a short note saying that the tool can be run again
   (keeping what TurnMemory keeps of a result: its exit code, changed file, failed command), at least
   ``clear_at_least`` tokens at a time so that the cached prompt prefix changes rarely;
2. if still needed, the large values (over 256 bytes) inside the largest call arguments, such as
   written file bodies, except in responses that carry signed reasoning (thinking signatures,
   encrypted reasoning, thought signatures), which are never edited;
3. when the cleared trace itself no longer fits, the earliest sealed iterations are *folded* into
   their TurnMemory record, as the turn boundary renders them: their prose stays, each call gets its
   placeholder arguments and each result the status-aware placeholder (``{"status": "success"}``, a
   changed file, a failed command and its exit code), again ``clear_at_least`` tokens at a time;
4. only when nothing older is left to clear or fold (a single round's results alone exceed the
   window), the results of the latest tool round, which the model has not read yet: their note says
   the output does not fit and asks for less of it at a time, not to run the tool again.

Ids, pairing, names and error status stay. The reduced items replace the originals in the trace, so
cleared and folded items stay so for the rest of the turn (and in the pending state it may leave):
later requests extend the same prefix. Which parts of a provider-native item are results or
arguments is the wire format's knowledge (``pieces`` and ``replace`` of each provider module); the
reducer only picks and measures.
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
from turnmemory.providers._tools import parse_output
from turnmemory.replay import ArgumentPolicy, historical_arguments, historical_result
from turnmemory.retention import retain

__all__ = ["CLEARED", "Reducer", "Reduction", "cleared_note"]

CLEARED = "[cleared to fit the context window"
"""How every note the reducer writes begins."""

_LARGE_VALUE = 256
"""Argument values whose compact JSON is larger than this many bytes are cleared."""

_KEPT_FIELDS = ("file_changed", "failed_command", "exit_code")
"""The fields of a JSON result that stay when its output is cleared: what TurnMemory keeps of it."""

_FACT_BYTES = 200
"""A kept string field longer than this many bytes is dropped with the output."""

_FAILED = "failed"
"""A folded failed result's content: the wire marks it failed as it did before."""

_ROUNDS = 8
"""Reductions tried per request before giving up (each re-measures the trace)."""

Edit = tuple[Piece, "str | dict[str, Any]", int]
"""One planned edit: the piece, its new content and the raw tokens it saves."""


def cleared_note(what: str, tokens: int, name: str = "", *, unread: bool = False) -> str:
    """The note that replaces a cleared result (``what="output"``; ``unread``: one the model has not
    seen yet) or argument value."""
    tool = name or "the tool"
    if what == "output" and unread:
        return (
            f"{CLEARED}: the output of {tool} (~{tokens} tokens) does not fit. Ask for less of it at a time.]"
        )
    if what == "output":
        return f"{CLEARED}; run {tool} again if you need it]"
    return f"{CLEARED}: ~{tokens} tokens removed]"


@dataclass(frozen=True, slots=True)
class Reduction:
    """What one reduction did: the new trace, what it cleared, folded and freed, and whether it fits.

    ``tokens`` is the calibrated estimate of the whole request afterwards; ``freed`` the calibrated
    tokens it saved; ``pending`` whether items before ``len(injected)`` changed; ``folded`` how many
    calls became their TurnMemory record.
    """

    items: list[Item]
    results: int
    arguments: int
    freed: int
    tokens: int
    fits: bool
    pending: bool
    folded: int = 0

    @property
    def changed(self) -> bool:
        """Whether anything was rewritten."""
        return bool(self.results or self.arguments or self.folded)

    def summary(self) -> str:
        """One line for the user."""

        def many(n: int, word: str) -> str:
            return f"{n} {word}{'s' if n != 1 else ''}"

        parts = [
            *([f"cleared {many(self.results, 'tool result')}"] if self.results else []),
            *([f"cleared the arguments of {many(self.arguments, 'call')}"] if self.arguments else []),
            *(
                [f"folded {many(self.folded, 'earlier call')} into their TurnMemory record"]
                if self.folded
                else []
            ),
        ]
        return f"{'; '.join(parts) or 'cleared nothing'} (~{self.freed} tokens) to fit the context window"


class Reducer:
    """Measures a turn's requests and reduces their trace (one reducer per turn: it memoizes items).

    ``arguments`` is the replay's argument policy: what a folded call's placeholder arguments hold.
    ``images`` are the tokens of the images sent with the requests measured, which are measured
    without them (their base64 is no measure of what they cost).
    """

    def __init__(
        self, wire: Wire, accounting: Accounting, *, arguments: ArgumentPolicy = "empty", images: int = 0
    ) -> None:
        self._wire = wire
        self.accounting = accounting
        self._policy: ArgumentPolicy = arguments
        self._images = images
        self._sizes: dict[int, tuple[object, int]] = {}

    @property
    def budget(self) -> int:
        """The most (calibrated) tokens a request may carry."""
        return self.accounting.limits.budget

    def measure(self, request: Mapping[str, Any], items_key: str, tools: Sequence[ToolSpec]) -> int:
        """The raw estimate of ``request`` plus the definitions of ``tools`` (uncalibrated)."""
        total = sum(self._size(value) for key, value in request.items() if key != items_key)
        total += self.tokens(request[items_key]) + self._images
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
        return sum(len(text.encode("utf-8")) for text in texts) + self._images

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
        counts = {"results": 0, "arguments": 0, "folded": 0}
        changed: set[int] = set()
        for _ in range(_ROUNDS):
            size = other + self.tokens(trace)
            if self.fits(size):
                break
            step = self._step(trace, size)
            if step is None:
                break
            trace, done, touched = step
            for key, count in done.items():
                counts[key] += count
            changed |= touched
        after = other + self.tokens(trace)
        return Reduction(
            items=trace,
            results=counts["results"],
            arguments=counts["arguments"],
            folded=counts["folded"],
            freed=max(self.accounting.scaled(raw) - self.accounting.scaled(after), 0),
            tokens=self.accounting.scaled(after),
            fits=self.fits(after),
            pending=any(index < len(injected) for index in changed),
        )

    def _step(self, trace: list[Item], raw: int) -> tuple[list[Item], dict[str, int], set[int]] | None:
        """One pass: the new trace, what it cleared (``results``, ``arguments``) and ``folded``, and the
        touched item indices. The latest round is cleared only when nothing older is left to reduce."""
        accounting = self.accounting
        need = raw - accounting.raw(self.budget)
        chunk = max(need, accounting.raw(accounting.limits.clear_at_least))
        pieces = [piece for piece in self._wire.pieces(trace) if piece.kind in ("call", "result")]
        names = {piece.call_id: piece.name for piece in pieces if piece.kind == "call"}
        latest = _latest_round(pieces)
        older = [p for p in pieces[:latest] if p.kind == "result"]
        calls = [p for p in pieces if p.kind == "call" and p.editable and p.arguments]
        calls.sort(key=lambda piece: -len(compact_json(piece.arguments)))
        kind = "results"
        edits = self._take([self._clear(p, names, unread=False) for p in older], chunk)
        if not edits:
            kind, edits = "arguments", self._take([self._clear(p, names, unread=False) for p in calls], need)
        if not edits:
            kind, edits = "folded", self._fold(pieces[:latest], chunk)
        if not edits:
            newest = [p for p in pieces[latest:] if p.kind == "result"]
            kind, edits = "results", self._take([self._clear(p, names, unread=True) for p in newest], need)
        if not edits:
            return None
        reduced = list(trace)
        for piece, content, _ in edits:
            reduced[piece.item] = self._wire.replace(reduced[piece.item], piece, content)
        count = sum(1 for piece, _, _ in edits if piece.kind == ("call" if kind == "arguments" else "result"))
        return reduced, {kind: count}, {piece.item for piece, _, _ in edits}

    @staticmethod
    def _take(candidates: Sequence[Edit | None], goal: int) -> list[Edit]:
        """The first worthwhile edits of ``candidates``, until they save ``goal`` raw tokens."""
        taken: list[Edit] = []
        freed = 0
        for edit in candidates:
            if freed >= goal:
                break
            if edit is not None and edit[2] > 0:
                taken.append(edit)
                freed += edit[2]
        return taken

    def _fold(self, pieces: Sequence[Piece], goal: int) -> list[Edit]:
        """The edits that fold the earliest iterations of ``pieces`` into their TurnMemory record, whole
        iterations at a time, until they save ``goal`` raw tokens."""
        edits: list[Edit] = []
        freed = 0
        for iteration in _iterations(pieces):
            if freed >= goal:
                break
            for call, result in iteration:
                for edit in self._folded(call, result):
                    if edit[2] > 0:
                        edits.append(edit)
                        freed += edit[2]
        return edits

    def _folded(self, call: Piece, result: Piece) -> list[Edit]:
        """The edits that turn ``call`` and its ``result`` into their placeholders (none already are)."""
        count = self.accounting.counter
        outcome = parse_output(result.text, is_error=result.error)
        activity = retain(0, call.name, call.arguments, output=outcome.output, error=outcome.error)
        # A failure keeps the wire's error flag (or ``{"error": ...}``), so its placeholder is one word.
        placeholder = _FAILED if result.error else compact_json(historical_result(activity))
        edits: list[Edit] = []
        if result.text != placeholder:
            edits.append((result, placeholder, count.text(result.text) - count.text(placeholder)))
        arguments = historical_arguments(activity, self._policy)
        if call.editable and call.arguments is not None and dict(call.arguments) != arguments:
            edits.append((call, arguments, count.value(dict(call.arguments)) - count.value(arguments)))
        return edits

    def _clear(self, piece: Piece, names: Mapping[str, str], *, unread: bool) -> Edit | None:
        """The edit that clears ``piece`` (a result's output, or a call's large argument values)."""
        count = self.accounting.counter
        if piece.kind == "result":
            if CLEARED in piece.text:
                return None
            name = piece.name or names.get(piece.call_id, "")
            size = count.text(piece.text)
            note = cleared_note("output", self.accounting.scaled(size), name, unread=unread)
            content = note if piece.error else _with_facts(piece.text, note)
            return piece, content, size - count.text(content)
        arguments = dict(piece.arguments or {})
        saved = 0
        for key, value in arguments.items():
            text = compact_json(value)
            if len(text.encode("utf-8")) > _LARGE_VALUE:
                size = count.text(text)
                note = cleared_note("arguments", self.accounting.scaled(size))
                arguments[key] = note
                saved += size - count.value(note)
        return piece, arguments, saved

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
    """``note``, keeping beside it what TurnMemory keeps of a JSON object result (an exit code, a
    changed file, a failed command)."""
    try:
        value = json.loads(text)
    except ValueError:
        return note
    if not isinstance(value, dict):
        return note
    facts = {
        key: value[key]
        for key in _KEPT_FIELDS
        if isinstance(value.get(key), int)
        or (isinstance(value.get(key), str) and len(value[key].encode("utf-8")) <= _FACT_BYTES)
    }
    return compact_json({**facts, "cleared": note}) if facts else note


def _iterations(pieces: Sequence[Piece]) -> list[list[tuple[Piece, Piece]]]:
    """The calls of ``pieces`` paired with their results, one list per iteration (a response's calls
    and the results that answer them); a result pairs by id, or by name with the first open call."""
    iterations: list[list[tuple[Piece, Piece]]] = []
    open_calls: dict[str, Piece] = {}
    previous = ""
    for piece in pieces:
        if piece.kind == "call":
            if previous != "call":
                iterations.append([])
                open_calls = {}
            open_calls[piece.call_id or f"\x00{len(open_calls)}"] = piece
        else:
            key = piece.call_id if piece.call_id in open_calls else None
            if key is None:
                key = next((k for k, call in open_calls.items() if call.name == piece.name), None)
            call = open_calls.pop(key, None) if key is not None else None
            if call is not None and iterations:
                iterations[-1].append((call, piece))
        previous = piece.kind
    return iterations


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
