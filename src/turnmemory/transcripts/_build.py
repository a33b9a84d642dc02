"""What every importer shares: tolerant reading, problem reports, and the turn builder."""

from __future__ import annotations

import json
import math
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypeVar

from turnmemory.transcripts._model import (
    ImportedEvent,
    ImportedSession,
    ImportedTurn,
    IterationEnd,
    Prose,
    Reasoning,
    ToolCall,
    ToolResult,
)

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "MAX_PROBLEMS",
    "SessionBuilder",
    "document_builder",
    "mapping",
    "open_regular",
    "parse_time",
    "read_json",
    "read_jsonl",
    "read_lines",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line read from a line-based log; longer lines are skipped without being held in memory."""

MAX_DOCUMENT_BYTES = 512 * 1024 * 1024
"""The largest JSON document read whole."""

MAX_PROBLEMS = 20
"""Problem lines kept per file; the rest are only counted (``skipped["malformed"]``)."""

_MAX_TIME_TEXT = 64
_LATEST_TIME = 1e11  # seconds since the epoch, in the year 5138: later values are not timestamps

_Record = TypeVar("_Record")


class SessionBuilder:
    """Collects turns, skip counts and problem lines while an importer walks a file.

    Events before the first user turn are dropped (counted as ``before_first_turn``); duplicate
    call ids and results without a call are dropped and counted too, so a replay never fails.

    Times: an importer notes each record's timestamp with :meth:`time` after handling the record
    (:meth:`timed` does it for a stream of records). A request goes out at the start of a turn and
    after every :class:`IterationEnd`; it is given the latest time noted before its first output
    (prose, reasoning or a call) when a time was noted since the request before it, else ``None``, so
    a log that gives times only now and then never stretches an old time over later requests. A turn
    without output gets its time when the next turn starts; an iteration end that no output of its
    turn follows gets none (no request of the turn follows it).
    """

    def __init__(self, path: Path, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self.workspace: str | None = None
        self.skipped: Counter[str] = Counter()
        self.problems: list[str] = []
        self.lines = 0
        self._turns: list[tuple[str, list[ImportedEvent]]] = []
        self._started: list[float | None] = []
        self._calls: set[str] = set()
        self._results: set[str] = set()
        self._clock: float | None = None
        self._fresh = False  # a time was noted since the last request was given one
        self._waiting: int | None = (
            None  # the request awaiting its time: -1 a turn's first, else an IterationEnd's index
        )

    def problem(self, where: str | int, message: str) -> None:
        """Report a malformed line or record (one readable line) and count it as skipped."""
        self.skipped["malformed"] += 1
        if len(self.problems) < MAX_PROBLEMS:
            location = (
                f"{self.path.name}:{where}" if isinstance(where, int) else f"{self.path.name} ({where})"
            )
            self.problems.append(f"{location}: {message}")

    def skip(self, kind: str) -> None:
        """Count one record that is deliberately not imported."""
        self.skipped[kind] += 1

    def time(self, value: object, *, scale: float = 1.0) -> None:
        """Note a timestamp the log gives: ISO 8601 text, or a number of seconds times ``scale``.

        Anything else (and any time out of range) is ignored: times are only ever a refinement.
        """
        moment = parse_time(value, scale=scale)
        if moment is not None:
            self._clock = moment if self._clock is None else max(self._clock, moment)
            self._fresh = True

    def timed(self, records: Iterable[tuple[int, _Record]], key: str) -> Iterator[tuple[int, _Record]]:
        """``records`` as they are; each record's ``key`` is noted as its time once the caller has
        handled it (when the caller asks for the next record)."""
        for number, record in records:
            yield number, record
            if isinstance(record, Mapping):
                self.time(record.get(key))

    def user(self, text: str) -> None:
        """Start a new user turn."""
        self._close_turn()
        self._turns.append((text, []))
        self._started.append(None)
        self._waiting = -1

    @property
    def in_turn(self) -> bool:
        """Whether a user turn has started."""
        return bool(self._turns)

    def prose(self, text: str) -> None:
        """Append a chunk of assistant prose to the current turn."""
        self.add(Prose(text))

    def reasoning(self, text: str) -> None:
        """Append reasoning text to the current turn."""
        self.add(Reasoning(text))

    def end_iteration(self) -> None:
        """Note that one provider request of the tool loop finished (an :class:`IterationEnd`)."""
        self.add(IterationEnd())

    def add(self, event: ImportedEvent) -> None:
        """Append an event to the current turn."""
        if not self._turns:
            self.skip("before_first_turn")
            return
        if isinstance(event, ToolCall):
            if event.call_id in self._calls:
                self.skip("duplicate_tool_call")
                return
            self._calls.add(event.call_id)
        elif isinstance(event, ToolResult):
            if event.call_id not in self._calls or event.call_id in self._results:
                self.skip("orphan_tool_result")
                return
            self._results.add(event.call_id)
        events = self._turns[-1][1]
        if isinstance(event, Prose | Reasoning | ToolCall):
            self._stamp()
        elif isinstance(event, IterationEnd) and self._waiting != -1:  # not before the turn's first output
            self._waiting = len(events)
        events.append(event)

    def _stamp(self) -> None:
        """Give the request awaiting its time the latest time noted since the request before it."""
        if self._waiting is None:
            return
        moment = self._clock if self._fresh else None
        self._fresh = False
        if self._waiting < 0:
            self._started[-1] = moment
        else:
            self._turns[-1][1][self._waiting] = IterationEnd(ended=moment)
        self._waiting = None

    def _close_turn(self) -> None:
        if self._waiting == -1:
            self._stamp()
        self._waiting = None

    def nothing(self, why: str) -> ImportedSession:
        """The session of a document that holds nothing to import, its one problem saying ``why``."""
        self.problem("document", f"{why}; nothing imported")
        return self.build()

    def build(self) -> ImportedSession:
        """The finished session."""
        self._close_turn()
        return ImportedSession(
            path=str(self.path),
            format=self.format,
            workspace=self.workspace,
            turns=tuple(
                ImportedTurn(user, tuple(events), started)
                for (user, events), started in zip(self._turns, self._started, strict=True)
            ),
            skipped=self.skipped,
            problems=tuple(self.problems),
            lines=self.lines,
        )


def open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading; a ``ValueError`` when it is not a regular file.

    The open never blocks (a FIFO opens without waiting for a writer) and follows symlinks, so a link
    to a device or a pipe is refused like the device or pipe itself.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(f"{path.name}: cannot open ({error.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path.name}: not a regular file ({_kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line)`` for every line of ``handle``; ``None`` for a line over :data:`MAX_LINE_BYTES`.

    Memory stays bounded by the line limit whatever the file holds.
    """
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield number, None
            continue
        yield number, raw


def read_jsonl(path: Path, builder: SessionBuilder) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every line that is a JSON object; others are reported.

    ``builder.lines`` counts the non-blank lines, so a report can say how much of the file was read.
    """
    with open_regular(path) as handle:
        for number, raw in read_lines(handle):
            if raw is None:
                builder.lines += 1
                builder.problem(number, f"line longer than {MAX_LINE_BYTES:,} bytes; skipped")
                continue
            if not raw.strip():
                continue
            builder.lines += 1
            try:
                record = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as error:
                builder.problem(number, f"not valid JSON ({_short(error)}); line skipped")
                continue
            except RecursionError:
                builder.problem(number, "JSON nested too deeply; line skipped")
                continue
            if not isinstance(record, dict):
                builder.problem(number, f"expected a JSON object, got {type(record).__name__}; line skipped")
                continue
            yield number, record


def document_builder(path: Path, fmt: str, document: Any) -> tuple[SessionBuilder, Any]:
    """A builder for the JSON document at ``path``, and the document: ``document`` when the caller
    has parsed it already, else the file as :func:`read_json` reads it."""
    return SessionBuilder(path, fmt), read_json(path) if document is None else document


def read_json(path: Path) -> Any:
    """The JSON document at ``path``; a ``ValueError`` says in one line what is wrong with it."""
    with open_regular(path) as handle:
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{path.name}: larger than {MAX_DOCUMENT_BYTES >> 20} MiB; not read")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path.name}: not valid JSON ({_short(error)})") from None
    except RecursionError:
        raise ValueError(f"{path.name}: JSON nested too deeply") from None


def parse_time(value: object, *, scale: float = 1.0) -> float | None:
    """Seconds since the epoch of a log's timestamp: ISO 8601 text (UTC when it names no zone) or a
    number of seconds times ``scale``; ``None`` for anything else or out of range."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            moment = float(value) * scale
        elif isinstance(value, str) and len(value) <= _MAX_TIME_TEXT:
            parsed = datetime.fromisoformat(value.strip())
            moment = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment if math.isfinite(moment) and 0 < moment < _LATEST_TIME else None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _short(error: Exception) -> str:
    return str(error).splitlines()[0][:120]
