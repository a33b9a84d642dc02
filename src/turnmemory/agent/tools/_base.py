"""What every tool is made of: a JSON schema, a ``prepare`` step and an ``Action`` to run.

``prepare`` checks the arguments (the LLM loop has validated them against the schema already), resolves
paths and works out what the call would do without doing it: the access it needs and, for writes and
edits inside the workspace, the diff. The agent shows the diff, asks for the access, and only then calls
``Action.run``. A call on a path outside the workspace reads nothing before its access is granted: its
action is *staged*, and the agent prepares the rest (the diff) only after the grant. Failures a model can
act on are raised as :class:`ToolError`, whose message is what the model sees.

The helpers here are how tools touch files and time: :func:`open_regular` opens only regular files
(never a FIFO, device or socket, never through a symlink swapped in after the path was checked),
:func:`iter_lines` streams lines with bounded memory, and :class:`Deadline` bounds a tool's run time.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from turnmemory.agent.bash import Sandbox
from turnmemory.agent.permissions import Access, resolve_path

__all__ = [
    "READ_CHUNK",
    "Action",
    "Authorizer",
    "Deadline",
    "Tool",
    "ToolContext",
    "ToolError",
    "check_opened",
    "int_argument",
    "iter_lines",
    "open_regular",
    "refuse_special",
]

READ_CHUNK = 64 * 1024
"""How much a tool reads from a file at a time."""


class ToolError(Exception):
    """A tool call failed; the message (one line where possible) is returned to the model."""


Authorizer = Callable[[Access], "str | None"]
"""Decides an access a running tool discovers (a redirect's host): ``None`` when granted, else the reason."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where tools run: the real workspace path, the directory for spilled full outputs, and who grants
    the accesses a tool discovers while it runs (none: every such access is refused)."""

    workspace: str
    spill_dir: str
    authorizer: Authorizer | None = None
    sandbox: Sandbox | None = None
    """The OS sandbox bash commands run in (none: they run on the host)."""

    def resolve(self, raw: str) -> tuple[str, bool]:
        """``(real path, inside the workspace)`` for a path argument."""
        return resolve_path(raw, self.workspace)

    def relative(self, path: str) -> str:
        """``path`` relative to the workspace when inside it, else unchanged."""
        prefix = self.workspace.rstrip(os.sep) + os.sep
        return path[len(prefix) :] if path.startswith(prefix) else path

    def spill_path(self, stem: str) -> str:
        """A fresh file path under the spill directory (created on demand)."""
        Path(self.spill_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        return os.path.join(self.spill_dir, f"{uuid.uuid4().hex[:12]}-{stem}")

    def authorize(self, access: Access) -> None:
        """Ask for an access found while running; :class:`ToolError` (``permission denied: ...``) if refused."""
        reason = (
            self.authorizer(access)
            if self.authorizer is not None
            else f"nobody can grant {access.summary()} here"
        )
        if reason is not None:
            raise ToolError(f"permission denied: {reason}")


@dataclass(frozen=True, slots=True)
class Action:
    """A prepared call: what it needs (``access``), what it would change (``diff``), and how to run it.

    ``staged`` is set when nothing could be read before the access is granted (a path outside the
    workspace): it prepares the complete action (with its diff) and is called only after the grant.
    ``run`` of a staged action stages and runs in one go.
    """

    run: Callable[[], dict[str, Any]]
    access: Access | None = None
    diff: str | None = None
    staged: Callable[[], Action] | None = None
    changes: str | None = None
    """The file ``run`` writes (``write_file``, ``edit_file``), for the checkpoints rewind restores."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: its name, description and JSON schema, and how to prepare a call."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    prepare: Callable[[Mapping[str, Any], ToolContext], Action]


def int_argument(
    arguments: Mapping[str, Any], name: str, default: int, minimum: int, maximum: int | None = None
) -> int:
    """An integer argument within bounds (the loop checks types; the bounds are checked here)."""
    value = arguments.get(name, default)
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ToolError(f"{name} must be {bounds}, got {value!r}")
    return number


class Deadline:
    """A point in time a tool must stop by."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(self._end - time.monotonic(), 0.0)

    @property
    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return time.monotonic() >= self._end

    def check(self, what: str) -> None:
        """:class:`ToolError` saying that ``what`` ran out of time, once the deadline has passed."""
        if self.expired:
            raise ToolError(f"{what} stopped after {self.seconds:g} s (its time limit)")


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def refuse_special(mode: int, shown: str) -> None:
    """:class:`ToolError` when ``mode`` is not a regular file's or a directory's (FIFO, device, socket, link)."""
    for test, kind in _SPECIAL:
        if test(mode):
            raise ToolError(f"{shown} is {kind}, not a regular file: refused")


def open_regular(path: str, shown: str) -> BinaryIO:
    """Open the regular file at the real path ``path`` for reading, never blocking and never following a link.

    :class:`ToolError` for a missing file, a directory, a FIFO, device or socket, or a path that changed
    (a symlink swapped in) since it was resolved.
    """
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise ToolError(f"file not found: {shown}") from None
    if stat.S_ISDIR(before.st_mode):
        raise ToolError(f"{shown} is a directory: use glob to list it")
    refuse_special(before.st_mode, shown)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise ToolError(f"cannot open {shown}: {error.strerror or error}") from None
    try:
        check_opened(fd, path, shown, before)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_opened(fd: int, path: str, shown: str, before: os.stat_result | None) -> None:
    """:class:`ToolError` unless ``fd`` is a regular file, the one ``before`` described, at ``path``."""
    after = os.fstat(fd)
    refuse_special(after.st_mode, shown)
    if not stat.S_ISREG(after.st_mode):
        raise ToolError(f"{shown} is not a regular file: refused")
    changed = before is not None and (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino)
    with contextlib.suppress(OSError):  # without /proc the O_NOFOLLOW open and the inode check stand alone
        changed = changed or os.readlink(f"/proc/self/fd/{fd}") != path
    if changed:
        raise ToolError(f"{shown} changed while it was being opened: refused")


def iter_lines(handle: BinaryIO, max_bytes: int, more: Callable[[], bool]) -> Iterator[tuple[bytes, bool]]:
    """The lines of ``handle`` without their ``\\n``, each cut to ``max_bytes`` (``True`` when cut).

    Memory stays bounded whatever the line lengths: a cut line is yielded as soon as it is full and the
    rest of it is skipped. ``more`` is called before every chunk is read (a deadline check, a byte
    budget): the lines end there, the unfinished one left out, when it returns ``False``.
    """
    line = bytearray()
    skipping = False
    while more():
        chunk = handle.read(READ_CHUNK)
        if not chunk:
            if line and not skipping:
                yield bytes(line), False
            return
        *complete, tail = chunk.split(b"\n")
        for piece in complete:
            if not line and not skipping and len(piece) <= max_bytes:  # the common case, without copying
                yield piece, False
            elif not skipping:
                room = max_bytes - len(line)
                line += piece[:room]
                yield bytes(line), len(piece) > room
            line.clear()
            skipping = False
        if not skipping:
            room = max_bytes - len(line)
            line += tail[:room]
            if len(tail) > room:
                yield bytes(line), True
                line.clear()
                skipping = True
