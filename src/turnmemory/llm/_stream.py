"""What the server-sent-event adapters share: the events of a raw response stream, and one tool call's
arguments as they stream.

The SDKs' own stream objects build a model object per event (and their helpers re-parse a call's whole
argument text at each fragment), which makes a long argument cost far more than its size. The adapters
instead read the response bytes the SDK client hands back, decode each event's JSON once, and keep
each call's argument as its fragments, joined once when the response ends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["Arguments", "StreamError", "sse_events"]


class StreamError(Exception):
    """An error event inside a response stream; ``body`` is its decoded data."""

    def __init__(self, body: Any) -> None:
        super().__init__(str(body))
        self.body = body


def sse_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """The server-sent events of a byte stream: ``(event name or "", data)`` per event, its data decoded
    from JSON (``[DONE]`` stays text). Lines end in LF or CRLF; an event left unfinished is dropped."""
    event = ""
    data: list[bytes] = []
    for line in _lines(chunks):
        if not line:
            if data:
                payload = b"\n".join(data)
                yield event, "[DONE]" if payload.startswith(b"[DONE]") else json.loads(payload)
            event, data = "", []
        elif line.startswith(b"data:"):
            data.append(line[6:] if line.startswith(b"data: ") else line[5:])
        elif line.startswith(b"event:"):
            event = line[6:].strip().decode("utf-8", "replace")


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream (without their ending), however the chunks cut them: a line longer
    than a chunk is joined once, never rebuilt chunk by chunk."""
    partial: list[bytes] = []
    for chunk in chunks:
        lines = chunk.split(b"\n")
        if len(lines) == 1:
            partial.append(chunk)
            continue
        partial.append(lines[0])
        yield b"".join(partial).removesuffix(b"\r")
        for line in lines[1:-1]:
            yield line.removesuffix(b"\r")
        partial = [lines[-1]]


class Arguments:
    """One tool call's argument text as it streams, up to ``cap`` UTF-8 bytes.

    Fragments are kept and joined once (:meth:`text`); once the text passes ``cap`` bytes it is
    dropped and only its size is counted on, so an argument of any length costs bounded memory.
    """

    __slots__ = ("_pieces", "cap", "size")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.size = 0
        """UTF-8 bytes streamed so far."""
        self._pieces: list[str] = []

    def add(self, piece: str) -> None:
        """Append one streamed fragment."""
        self.size += len(piece.encode("utf-8", "surrogatepass"))
        if self.size > self.cap:
            self._pieces.clear()
        else:
            self._pieces.append(piece)

    @property
    def dropped(self) -> bool:
        """Whether the text passed ``cap`` and was dropped."""
        return self.size > self.cap

    def text(self) -> str:
        """The whole text (empty once dropped)."""
        return "".join(self._pieces)
