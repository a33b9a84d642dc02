"""Script items of the fake provider server: what each request gets answered with.

One item answers one HTTP request on whichever provider route it arrives, so the same script drives
all five wire protocols. Items are small frozen values; ``parse_script`` reads them from JSON. The
package exports them (its ``__all__`` lists them, once).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "content_filter")
"""Provider-neutral stop reasons that every protocol maps to its own wording."""


def _non_negative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _seconds(value: object) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts reported with a reply.

    ``input_tokens`` counts the whole prompt, cached part included; ``cached_tokens`` is the part
    read from the prompt cache and ``cache_write_tokens`` the part written to it. Protocols that
    report uncached input separately (Anthropic, Bedrock) send ``input_tokens - cached_tokens -
    cache_write_tokens`` as their input count; Gemini reports no writes.
    """

    input_tokens: int = 10
    output_tokens: int = 5
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"):
            if not _non_negative_int(getattr(self, name)):
                raise ValueError(f"Usage.{name}: expected a non-negative integer")
        if self.cached_tokens + self.cache_write_tokens > self.input_tokens:
            raise ValueError("Usage.cached_tokens + cache_write_tokens: cannot exceed input_tokens")

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens neither read from the cache nor written to it."""
        return self.input_tokens - self.cached_tokens - self.cache_write_tokens

    @property
    def total_tokens(self) -> int:
        """Prompt plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the fake model makes; ``id`` is generated per server when ``None``."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("ToolCall.name: expected a non-empty string")
        if not isinstance(self.arguments, Mapping):
            raise ValueError("ToolCall.arguments: expected an object")
        try:
            json.dumps(self.arguments)
        except (TypeError, ValueError) as err:
            raise ValueError(f"ToolCall.arguments: not JSON-serializable ({err})") from None
        if self.id is not None and (not isinstance(self.id, str) or not self.id):
            raise ValueError("ToolCall.id: expected a non-empty string or None")

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON text a model streams."""
        return json.dumps(self.arguments, ensure_ascii=False)


EditOp = Literal["drop", "repeat", "garble", "swap", "insert", "cut"]
EDIT_OPS: tuple[EditOp, ...] = get_args(EditOp)
"""What a :class:`StreamEdit` does to the frames of a stream."""


@dataclass(frozen=True, slots=True)
class StreamEdit:
    """One corruption of a reply's stream, applied to its encoded frames (events) before sending.

    The edit applies to the frame at index ``at`` (taken modulo the frame count, so any integer
    names a frame), or to every frame whose bytes contain ``match``:

    - ``drop``: leave the frame out; ``repeat``: send it twice;
    - ``garble``: an SSE frame's ``data:`` JSON is cut in half (``data: {"type":"conte``), any other
      frame (Bedrock's binary event-stream) gets a byte flipped;
    - ``swap``: exchange the frame with the next one;
    - ``insert``: send ``data`` (raw text, e.g. ``"data: {not json}\n\n"``) before the frame;
    - ``cut``: send the frames before it, then drop the connection (no terminating chunk).

    Edits apply in order, each to the frames the previous ones left.
    """

    op: EditOp
    at: int | None = None
    match: str | None = None
    data: str = ""

    def __post_init__(self) -> None:
        if self.op not in EDIT_OPS:
            raise ValueError(f"StreamEdit.op: expected one of {', '.join(EDIT_OPS)}")
        if (self.at is None) == (self.match is None):
            raise ValueError("StreamEdit: expected exactly one of at and match")
        if self.at is not None and (not isinstance(self.at, int) or isinstance(self.at, bool)):
            raise ValueError("StreamEdit.at: expected an integer")
        if self.match is not None and (not isinstance(self.match, str) or not self.match):
            raise ValueError("StreamEdit.match: expected a non-empty string")
        if not isinstance(self.data, str) or (self.op == "insert") != bool(self.data):
            raise ValueError("StreamEdit.data: expected text for insert, and only for insert")


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful model answer.

    Reasoning streams first, then text, then the tool calls. A reply with no text and no tool calls
    is each provider's empty response. ``stop`` is one of ``STOP_REASONS`` (mapped per provider) or
    any other string, sent verbatim; by default ``tool_use`` when there are tool calls, else
    ``end_turn``. ``usage`` defaults to ``Usage()``. ``break_after=N`` makes a stream deliver its
    first N content deltas (reasoning, text or argument fragments) and then drop the connection
    without the terminal event; a non-stream request with ``break_after`` set gets the connection
    closed without any response. ``edits`` corrupt the stream (see :class:`StreamEdit`); ``pace``
    waits that many seconds before each frame (a slow trickle).
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None
    stop: str | None = None
    break_after: int | None = None
    edits: Sequence[StreamEdit] = ()
    pace: float = 0.0

    def __post_init__(self) -> None:
        edits = tuple(self.edits)
        if not all(isinstance(edit, StreamEdit) for edit in edits):
            raise ValueError("Reply.edits: expected StreamEdit items")
        object.__setattr__(self, "edits", edits)
        if not _seconds(self.pace):
            raise ValueError("Reply.pace: expected a non-negative number of seconds")
        if not isinstance(self.text, str) or not isinstance(self.reasoning, str):
            raise ValueError("Reply.text and Reply.reasoning: expected strings")
        calls = tuple(self.tool_calls)
        if not all(isinstance(call, ToolCall) for call in calls):
            raise ValueError("Reply.tool_calls: expected ToolCall items")
        object.__setattr__(self, "tool_calls", calls)
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise ValueError("Reply.usage: expected a Usage or None")
        if self.stop is not None and (not isinstance(self.stop, str) or not self.stop):
            raise ValueError("Reply.stop: expected a non-empty string or None")
        if self.break_after is not None and not _non_negative_int(self.break_after):
            raise ValueError("Reply.break_after: expected a non-negative integer or None")

    @property
    def stop_reason(self) -> str:
        """The stop reason to report: ``stop`` or the default for this reply's content."""
        if self.stop is not None:
            return self.stop
        return "tool_use" if self.tool_calls else "end_turn"

    @property
    def token_usage(self) -> Usage:
        """``usage`` or the default counts."""
        return self.usage if self.usage is not None else Usage()


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed request.

    By default an HTTP error with the provider's own error body. ``kind`` replaces the provider's
    error type string (Anthropic ``error.type``, OpenAI ``error.type``, Gemini ``error.status``,
    Bedrock exception name); ``kind="context_overflow"`` sends each provider's real context-length
    error instead of ``message``. With ``mid_stream=True`` a streaming request gets a normal stream
    start, ``partial_text`` as text deltas, then the provider's in-stream error event (a non-stream
    request still gets the HTTP error). ``retry_after`` (seconds) adds a ``retry-after`` header.
    """

    status: int = 500
    message: str = "fake failure"
    kind: str | None = None
    mid_stream: bool = False
    retry_after: float | None = None
    partial_text: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.status, int) or isinstance(self.status, bool) or not 400 <= self.status <= 599:
            raise ValueError("Failure.status: expected an HTTP error status (400-599)")
        if not isinstance(self.message, str) or not isinstance(self.partial_text, str):
            raise ValueError("Failure.message and Failure.partial_text: expected strings")
        if self.kind is not None and (not isinstance(self.kind, str) or not self.kind):
            raise ValueError("Failure.kind: expected a non-empty string or None")
        if not isinstance(self.mid_stream, bool):
            raise ValueError("Failure.mid_stream: expected a boolean")
        if self.retry_after is not None and not _seconds(self.retry_after):
            raise ValueError("Failure.retry_after: expected a non-negative number or None")

    @property
    def context_overflow(self) -> bool:
        """Whether this failure stands for the provider's context-length error."""
        return self.kind == "context_overflow"


@dataclass(frozen=True, slots=True)
class Hang:
    """A request the server reads and never answers: no status line, no bytes, until it closes."""


ScriptItem: TypeAlias = Reply | Failure | Hang


def _fields_of(cls: type, data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"{where}: unknown field {unknown[0]!r} (expected some of {', '.join(sorted(known))})"
        )
    return dict(data)


def _build(cls: type[Any], data: object, where: str) -> Any:
    values = _fields_of(cls, data, where)
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None


def _reply(data: object, where: str) -> Reply:
    values = _fields_of(Reply, data, where)
    calls = values.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError(f"{where}.tool_calls: expected a list")
    values["tool_calls"] = [
        _build(ToolCall, call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)
    ]
    if values.get("usage") is not None:
        values["usage"] = _build(Usage, values["usage"], f"{where}.usage")
    edits = values.get("edits", [])
    if not isinstance(edits, list):
        raise ValueError(f"{where}.edits: expected a list")
    values["edits"] = [_build(StreamEdit, edit, f"{where}.edits[{i}]") for i, edit in enumerate(edits)]
    return _build(Reply, values, where)  # type: ignore[no-any-return]


def parse_script(data: object) -> list[ScriptItem]:
    """Read a JSON script: a list of ``{"reply": {...}}`` / ``{"failure": {...}}`` / ``{"hang": {}}`` objects.

    A ``ValueError`` names the first bad item and field.
    """
    if not isinstance(data, list):
        raise ValueError("script: expected a list of items")
    items: list[ScriptItem] = []
    for i, entry in enumerate(data):
        where = f"script[{i}]"
        if not isinstance(entry, Mapping) or len(entry) != 1 or not {"reply", "failure", "hang"} & set(entry):
            raise ValueError(
                f'{where}: expected {{"reply": {{...}}}}, {{"failure": {{...}}}} or {{"hang": {{}}}}'
            )
        if "reply" in entry:
            items.append(_reply(entry["reply"], f"{where}.reply"))
        elif "hang" in entry:
            items.append(_build(Hang, entry["hang"], f"{where}.hang"))
        else:
            items.append(_build(Failure, entry["failure"], f"{where}.failure"))
    return items


def load_script(path: str | Path) -> list[ScriptItem]:
    """Read a JSON script file (see ``parse_script``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: cannot read script ({err})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: invalid JSON ({err})") from None
    return parse_script(data)
