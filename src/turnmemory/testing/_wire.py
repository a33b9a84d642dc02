"""What every protocol module shares: the protocol base class, the answer types and the per-request context.

A protocol turns a script item into either a JSON answer or a list of stream frames; the server
writes them. Frames are tagged so the server can cut a stream after its N-th content delta
(``Reply.break_after``) or after the partial content of a mid-stream failure.
"""

from __future__ import annotations

import base64
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import unquote

from turnmemory.testing._script import Failure, Reply, StreamEdit, ToolCall

__all__ = [
    "Exchange",
    "Frame",
    "FramePart",
    "JsonAnswer",
    "Route",
    "WireProtocol",
    "apply_edits",
    "cut_point",
    "error_kind",
]

FramePart = Literal["opening", "content", "other"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One encoded stream event; ``part`` says whether it opens the stream or carries content."""

    data: bytes
    part: FramePart = "other"


@dataclass(frozen=True, slots=True)
class JsonAnswer:
    """A complete (non-stream) HTTP answer with a JSON body."""

    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Route:
    """A matched request path: whether it streams (``None``: the body's ``stream`` flag decides)."""

    stream: bool | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    """The request a script item answers: its per-server number, model and JSON body."""

    number: int
    model: str
    body: Mapping[str, Any]

    def id(self, prefix: str, index: int | None = None) -> str:
        """A deterministic id such as ``toolu_003_1``: unique per server, prefix and index."""
        base = f"{prefix}_{self.number:03d}"
        return base if index is None else f"{base}_{index}"

    def call_id(self, call: ToolCall, index: int, prefix: str) -> str:
        """The scripted tool call id, or a generated one."""
        return call.id if call.id is not None else self.id(prefix, index)

    def signature(self, what: str) -> str:
        """A deterministic base64 token standing for a provider's opaque signature."""
        return base64.b64encode(f"fake-{what}-{self.number:03d}".encode()).decode()


class WireProtocol(ABC):
    """One provider's wire format, as the server drives it.

    What every wire does the same way is here; a wire's module subclasses it with what is special
    about that wire: its name and routes, the headers it takes for credentials, its words for stop
    reasons and for a context overflow, and its answers.
    """

    name: ClassVar[str]
    routes: ClassVar[re.Pattern[str]]
    """The wire's request paths (without query). A ``model`` group names the model, and then a
    ``stream`` group matches on the streaming route only; without them the body's ``stream`` flag
    decides."""
    credentials: ClassVar[tuple[str, ...]] = ("authorization",)
    """The request headers (lower case) the real API would look at for a credential."""
    stream_content_type: ClassVar[str] = "text/event-stream"
    stop_reasons: ClassVar[Mapping[str, str]] = {}
    """The wire's words for the provider-neutral stop reasons; any other is sent verbatim."""
    context_overflow: ClassVar[str]
    """The wire's context-length error message."""

    def route(self, path: str) -> Route | None:
        """Whether the request path (without query) is this protocol's, and what it says."""
        match = self.routes.fullmatch(path)
        if match is None:
            return None
        if "model" not in self.routes.groupindex:
            return Route()
        return Route(stream=match["stream"] is not None, model=unquote(match["model"]))

    def authorized(self, headers: Mapping[str, str], query: str) -> bool:
        """Whether the request carries a credential the real API would look at."""
        return any(name in headers for name in self.credentials)

    def stop_reason(self, reply: Reply) -> str:
        """The reply's stop reason in the wire's words."""
        return self.stop_reasons.get(reply.stop_reason, reply.stop_reason)

    def failure_message(self, failure: Failure) -> str:
        """The message of a failure: the wire's own for a context overflow."""
        return self.context_overflow if failure.context_overflow else failure.message

    @abstractmethod
    def error(self, failure: Failure) -> JsonAnswer:
        """The provider's HTTP error answer for a failure."""

    @abstractmethod
    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        """The provider's complete (non-stream) response body for a reply."""

    @abstractmethod
    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        """The provider's whole stream for a reply."""

    @abstractmethod
    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        """The provider's in-stream error event(s), following ``sent`` frames already written."""


def cut_point(frames: list[Frame], contents: int | None) -> int:
    """How many frames to send before a break: through the ``contents``-th content frame.

    ``None`` means through the last content frame. With no content to send, only the opening
    frames go out.
    """
    content_indices = [i for i, frame in enumerate(frames) if frame.part == "content"]
    wanted = len(content_indices) if contents is None else min(contents, len(content_indices))
    if wanted == 0:
        openings = 0
        while openings < len(frames) and frames[openings].part == "opening":
            openings += 1
        return openings
    return content_indices[wanted - 1] + 1


def _garbled(data: bytes) -> bytes:
    """An SSE frame with its ``data:`` JSON cut in half, or any other frame with a byte flipped."""
    head, marker, rest = data.partition(b"data: ")
    if marker:
        payload, newline, tail = rest.partition(b"\n")
        return head + marker + payload[: len(payload) // 2] + newline + tail
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :] if data else data


def apply_edits(frames: list[Frame], edits: Sequence[StreamEdit]) -> tuple[list[Frame], bool]:
    """The frames after ``edits``, and whether the stream ends normally (no ``cut``)."""
    frames = list(frames)
    for edit in edits:
        if not frames:
            break
        if edit.at is not None:
            targets = [edit.at % len(frames)]
        else:
            assert edit.match is not None
            needle = edit.match.encode()
            targets = [i for i, frame in enumerate(frames) if needle in frame.data]
        if edit.op == "cut":
            return frames[: targets[0]] if targets else frames, not targets
        for index in reversed(targets):
            frame = frames[index]
            if edit.op == "drop":
                del frames[index]
            elif edit.op == "repeat":
                frames.insert(index, frame)
            elif edit.op == "garble":
                frames[index] = Frame(_garbled(frame.data), frame.part)
            elif edit.op == "insert":
                frames.insert(index, Frame(edit.data.encode()))
            elif index + 1 < len(frames):
                frames[index], frames[index + 1] = frames[index + 1], frame
    return frames, True


def error_kind(failure: Failure, by_status: Mapping[int, str], client: str, server: str) -> str:
    """The provider's error type for a failure: ``kind``, the status's own, or the class default."""
    if failure.kind is not None and not failure.context_overflow:
        return failure.kind
    return by_status.get(failure.status, client if failure.status < 500 else server)
