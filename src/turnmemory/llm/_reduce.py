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
3. when the cleared trace itself no longer fits, runs of the earliest sealed iterations are *folded*
   into their TurnMemory record, rendered as the turn boundary renders a historical turn: one batch per
   run (their prose, then one placeholder call per call, then one status-aware result per call:
   ``{"status": "success"}``, a changed file, a failed command and its exit code), again
   ``clear_at_least`` tokens at a time. A run never crosses from the pending state into the turn;
4. only when a single round's results would not fit even in a request holding nothing else of the
   turn, the results of that latest round, which the model has not read yet: their note says the
   output does not fit and asks for less of it at a time, not to run the tool again. When the round
   would fit but the rest of the turn leaves it no room, nothing is cleared unread: the request
   overflows (the turn ends ``context_overflow``, its work kept as pending state).

Pairing, names and error status stay; ids stay, except that a folded batch's calls get short
synthetic ids unique in the request (the spec's historical calls keep no provider ids). The reduced
items replace the originals in the trace, so cleared and folded items stay so for the rest of the
turn (and in the pending state it may leave): later requests extend the same prefix. Which parts of
a provider-native item are results or arguments is the wire format's knowledge (``pieces`` and
``replace`` of each provider module, and its renderer for the folded batch); the reducer only picks
and measures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._tokens import Accounting
from turnmemory.llm._tools import ToolSpec
from turnmemory.memory import Message, TurnMemory
from turnmemory.providers import Wire
from turnmemory.providers._read import Piece, record
from turnmemory.providers._render import Item
from turnmemory.providers._tools import parse_output
from turnmemory.replay import ArgumentPolicy, historical_arguments, historical_result, nine_alphanumerics
from turnmemory.retention import retain
from turnmemory.segments import TurnRecorder

__all__ = ["CLEARED", "Reducer", "Reduction", "cleared_note"]

CLEARED = "[cleared to fit the context window"
"""How every note the reducer writes begins."""

_LARGE_VALUE = 256
"""Argument values whose compact JSON is larger than this many bytes are cleared."""

_KEPT_FIELDS = ("file_changed", "failed_command", "exit_code")
"""The fields of a JSON result that stay when its output is cleared: what TurnMemory keeps of it."""

_FACT_BYTES = 200
"""A kept string field longer than this many bytes is dropped with the output."""

_ROUNDS = 8
"""Reductions tried per request before giving up (each re-measures the trace)."""

_ID_KEYS = frozenset({"id", "tool_use_id", "tool_call_id", "call_id", "toolUseId"})
"""The keys under which the wires carry call ids (Anthropic, Chat, Responses, Gemini, Bedrock)."""


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
    tokens it saved; ``injected`` how many of ``items`` are the pending state (they go before the new
    user message); ``pending`` whether the pending state changed; ``folded`` how many calls became
    their TurnMemory record.
    """

    items: list[Item]
    results: int
    arguments: int
    freed: int
    tokens: int
    fits: bool
    pending: bool
    injected: int
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


@dataclass(slots=True)
class _Iteration:
    """One sealed iteration of a trace: a response (items ``first`` to its calls) and the results that
    answer its calls, up to item ``last``; ``pairs`` are its calls with their results."""

    first: int
    last: int
    pieces: list[Piece] = field(default_factory=list)
    pairs: list[tuple[Piece, Piece]] = field(default_factory=list)
    calls: int = 0
    whole: bool = True
    """Whether no other iteration shares its items."""


@dataclass(slots=True)
class _Step:
    """One pass of the reducer: the new trace and where its pending part ends, what it did, and
    whether it touched the pending part."""

    trace: list[Item]
    injected: int
    done: dict[str, int]
    pending: bool


class Reducer:
    """Measures a turn's requests and reduces their trace (one reducer per turn: it memoizes items).

    ``options`` are the formatter keywords of the requests (``sdk.options()``): how a folded batch is
    rendered, its placeholder arguments (``arguments``) and its id style (``id_style``). ``images`` are
    the tokens of the images sent with the requests measured, which are measured without them (their
    base64 is no measure of what they cost).
    """

    def __init__(
        self,
        wire: Wire,
        accounting: Accounting,
        *,
        options: Mapping[str, Any] | None = None,
        images: int = 0,
    ) -> None:
        self._wire = wire
        self.accounting = accounting
        self._options = dict(options or {})
        self._policy: ArgumentPolicy = self._options.get("arguments") or "empty"
        self._compact_ids = self._options.get("id_style") == "compact"
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
            "and a 5% margin, and no tool result or argument is left to clear or fold"
        )

    def reduce(
        self, raw: int, injected: Sequence[Item], turn: Sequence[Item], *, taken: Iterable[str] = ()
    ) -> Reduction:
        """Reduce the trace ``injected + turn`` of a request estimated at ``raw`` until it fits;
        ``taken`` holds the call ids the rest of the request carries (a folded call's id is new)."""
        trace = [*injected, *turn]
        split = len(injected)
        other = raw - self.tokens(trace)
        ids = {*taken, *(p.call_id for p in self._wire.pieces(trace) if p.call_id)}
        counts = {"results": 0, "arguments": 0, "folded": 0}
        pending = False
        for _ in range(_ROUNDS):
            size = other + self.tokens(trace)
            if self.fits(size):
                break
            step = self._step(trace, split, other, size, ids)
            if step is None:
                break
            trace, split = step.trace, step.injected
            pending = pending or step.pending
            for key, count in step.done.items():
                counts[key] += count
        after = other + self.tokens(trace)
        return Reduction(
            items=trace,
            results=counts["results"],
            arguments=counts["arguments"],
            folded=counts["folded"],
            freed=max(self.accounting.scaled(raw) - self.accounting.scaled(after), 0),
            tokens=self.accounting.scaled(after),
            fits=self.fits(after),
            pending=pending,
            injected=split,
        )

    def _step(self, trace: list[Item], split: int, other: int, raw: int, ids: set[str]) -> _Step | None:
        """One pass. The latest round is cleared only when nothing older is left to reduce and it would
        not fit even beside nothing else of the turn (``other``: the request without its trace)."""
        accounting = self.accounting
        need = raw - accounting.raw(self.budget)
        chunk = max(need, accounting.raw(accounting.limits.clear_at_least))
        every = self._wire.pieces(trace)
        pieces = [piece for piece in every if piece.kind in ("call", "result")]
        names = {piece.call_id: piece.name for piece in pieces if piece.kind == "call"}
        latest = _latest_round(pieces)
        older = [p for p in pieces[:latest] if p.kind == "result"]
        calls = [p for p in pieces if p.kind == "call" and p.editable and p.arguments]
        calls.sort(key=lambda piece: -len(compact_json(piece.arguments)))
        kind = "results"
        edits = self._take([self._clear(p, names, unread=False) for p in older], chunk)
        if not edits:
            kind, edits = "arguments", self._take([self._clear(p, names, unread=False) for p in calls], need)
        if not edits and latest > 0:
            sealed = [p for p in every if p.item < pieces[latest].item]
            folded = self._fold(trace, split, _iterations(sealed), chunk, ids)
            if folded is not None:
                return folded
        if not edits:
            newest = [p for p in pieces[latest:] if p.kind == "result"]
            alone = other + sum(accounting.counter.text(p.text) for p in newest)
            if self.fits(alone):
                return None  # the round fits a window: it is the rest of the turn that does not
            kind, edits = "results", self._take([self._clear(p, names, unread=True) for p in newest], need)
        if not edits:
            return None
        reduced = list(trace)
        for piece, content, _ in edits:
            reduced[piece.item] = self._wire.replace(reduced[piece.item], piece, content)
        count = sum(1 for piece, _, _ in edits if piece.kind == ("call" if kind == "arguments" else "result"))
        return _Step(reduced, split, {kind: count}, any(piece.item < split for piece, _, _ in edits))

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

    def _fold(
        self, trace: list[Item], split: int, iterations: list[_Iteration], goal: int, ids: set[str]
    ) -> _Step | None:
        """Fold the earliest iterations not yet folded, until they save ``goal`` raw tokens: each run of
        adjacent ones (on one side of the pending state's end) becomes one batch, its TurnMemory record."""
        runs: list[list[_Iteration]] = []
        freed = 0
        for iteration in iterations:
            if freed >= goal:
                break
            if not self._foldable(iteration) or (iteration.first < split <= iteration.last):
                runs.append([])
                continue
            saved = self.tokens(trace[iteration.first : iteration.last + 1]) - self.tokens(
                self._batch([iteration], set(ids))
            )
            if saved <= 0:
                runs.append([])
                continue
            run = runs[-1] if runs else None
            if (
                run
                and run[-1].last + 1 == iteration.first
                and (run[-1].last < split) == (iteration.last < split)
            ):
                run.append(iteration)
            else:
                runs.append([iteration])
            freed += saved
        runs = [run for run in runs if run]
        if not runs:
            return None
        reduced = list(trace)
        injected = split
        batches = [self._batch(run, ids) for run in runs]
        for run, batch in reversed(list(zip(runs, batches, strict=True))):  # earlier indices stay valid
            first, last = run[0].first, run[-1].last
            reduced[first : last + 1] = batch
            if last < split:
                injected -= last + 1 - first - len(batch)
        folded = sum(iteration.calls for run in runs for iteration in run)
        return _Step(reduced, injected, {"folded": folded}, runs[0][0].last < split)

    def _foldable(self, iteration: _Iteration) -> bool:
        """Whether ``iteration`` can be folded (every call answered) and is not folded already."""
        if not iteration.whole or not iteration.pairs or len(iteration.pairs) != iteration.calls:
            return False
        for call, result in iteration.pairs:
            activity = _activity(call, result)
            if result.text != compact_json(historical_result(activity)):
                return True
            if dict(call.arguments or {}) != historical_arguments(activity, self._policy):
                return True
        return False

    def _batch(self, run: Sequence[_Iteration], ids: set[str]) -> list[Item]:
        """The native items of ``run`` folded: its prose, then one placeholder call per call and one
        status-aware result per call, as the wire renders a historical turn; each call gets a short id
        not in ``ids`` (which it joins)."""
        recorder = TurnRecorder()
        record(
            [piece for iteration in run for piece in iteration.pieces],
            recorder,
            lambda call, result: parse_output(result.text, is_error=result.error),
        )
        message = recorder.finish()
        end = len(message.content.encode("utf-8"))
        memory = message.turn_memory or TurnMemory()
        message = Message(
            role="assistant",
            content=message.content,
            turn_memory=TurnMemory(tuple(replace(a, text_offset=end) for a in memory.tool_activity)),
        )
        opening = Message(role="user", content="Go on.")
        formatter = self._wire.Formatter()
        head = len(formatter.to_request([opening], **self._options)[self._wire.ITEMS])
        items: list[Item] = formatter.to_request([opening, message], **self._options)[self._wire.ITEMS][head:]
        synthetic = list(dict.fromkeys(p.call_id for p in self._wire.pieces(items) if p.call_id))
        fresh: dict[str, str] = {}
        n = 0
        for call_id in synthetic:
            while (candidate := self._fold_id(n)) in ids:
                n += 1
            fresh[call_id] = candidate
            ids.add(candidate)
        renamed: list[Item] = _renamed(items, fresh)
        return renamed

    def _fold_id(self, n: int) -> str:
        """The ``n``-th id of a folded call: ``f`` and ``n`` (or ``f`` and 8 base-62 digits: the nine
        alphanumerics of the compact style; synthetic history ids start with ``historical_`` or ``h``)."""
        return nine_alphanumerics("f", n) if self._compact_ids else f"f{n}"

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


def _iterations(pieces: Sequence[Piece]) -> list[_Iteration]:
    """The iterations of ``pieces``: a response's pieces and the results that follow them, with its
    calls paired to their results (by id, or by name with the first open call)."""
    iterations: list[_Iteration] = []
    open_calls: dict[str, Piece] = {}
    previous = "result"
    for piece in pieces:
        if piece.kind != "result" and previous == "result":
            shared = bool(iterations) and iterations[-1].last >= piece.item
            if shared:
                iterations[-1].whole = False  # two iterations share an item: neither is folded
            iterations.append(_Iteration(piece.item, piece.item, whole=not shared))
            open_calls = {}
        previous = piece.kind
        if not iterations:
            continue
        iteration = iterations[-1]
        iteration.pieces.append(piece)
        iteration.last = max(iteration.last, piece.item)
        if piece.kind == "call":
            iteration.calls += 1
            open_calls[piece.call_id or f"\x00{len(open_calls)}"] = piece
        elif piece.kind == "result":
            key = piece.call_id if piece.call_id in open_calls else None
            if key is None:
                key = next((k for k, call in open_calls.items() if call.name == piece.name), None)
            call = open_calls.pop(key, None) if key is not None else None
            if call is not None:
                iteration.pairs.append((call, piece))
    return iterations


def _activity(call: Piece, result: Piece) -> Any:
    """What TurnMemory keeps of ``call`` and its ``result``."""
    outcome = parse_output(result.text, is_error=result.error)
    return retain(0, call.name, call.arguments, output=outcome.output, error=outcome.error)


def _renamed(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` (native items) with every call id in ``ids`` replaced by its new id."""
    if isinstance(value, dict):
        return {
            key: ids.get(item, item) if key in _ID_KEYS and isinstance(item, str) else _renamed(item, ids)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_renamed(item, ids) for item in value]
    return value


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
