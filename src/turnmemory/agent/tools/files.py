"""``read_file``, ``write_file`` and ``edit_file``.

Paths are resolved against the workspace with symlinks and ``..`` followed, so the access a call asks
for names the file it will really touch. A write or edit outside the workspace reads nothing before
its access is granted (its action is staged: the file's content, the checks on it and the diff come
after the grant), so a denied call tells the model nothing about the file. Only regular files are
read or written: FIFOs, devices and sockets are refused without being opened for long, files are
opened without following a symlink swapped in, and reading is bounded in memory and time. Writes and
edits report ``file_changed`` (the absolute path) only when the file's content changed.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import (
    READ_CHUNK,
    Action,
    Deadline,
    Tool,
    ToolContext,
    ToolError,
    check_opened,
    int_argument,
    iter_lines,
    open_regular,
    refuse_special,
)
from turnmemory.agent.tools._schema import arguments, boolean, integer, string

__all__ = ["EDIT_FILE", "MAX_EDIT_BYTES", "READ_FILE", "WRITE_FILE", "unified_diff"]

MAX_READ_BYTES = 100_000
"""The most text one ``read_file`` call returns; ``offset`` pages through the rest."""
DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_EDIT_BYTES = 10_000_000
"""The largest file ``write_file`` replaces or ``edit_file`` edits (both hold it whole, with its diff)."""
COUNT_BYTES = 16 * 1024 * 1024
"""How far ``read_file`` reads past the lines it returns to count the file's lines."""
FILE_DEADLINE = 30.0
"""How long one file tool call may take."""
_SNIFF_BYTES = 8192
_PATH = string("File path, relative to the workspace or absolute.", non_empty=True)
"""The ``path`` argument of every file tool."""


def _read_text(path: str, shown: str) -> str:
    """The whole file as text (line endings kept); :class:`ToolError` for missing, not regular, binary, huge."""
    with open_regular(path, shown) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_EDIT_BYTES:
            raise ToolError(
                f"{shown} is {size} bytes, over the {MAX_EDIT_BYTES} bytes write_file and edit_file handle"
            )
        data = handle.read(MAX_EDIT_BYTES + 1)
    if len(data) > MAX_EDIT_BYTES:
        raise ToolError(f"{shown} grew past {MAX_EDIT_BYTES} bytes while it was read")
    if b"\0" in data[:_SNIFF_BYTES]:
        raise ToolError(
            f"{shown} is a binary file ({len(data)} bytes); only text files can be read or edited"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(f"{shown} is not UTF-8 text (invalid byte at {error.start})") from None


def _existing_text(path: str, shown: str) -> str | None:
    """The file's text, or ``None`` when nothing is at ``path``."""
    return _read_text(path, shown) if os.path.lexists(path) else None


def _write_text(path: str, shown: str, text: str) -> bool:
    """Write ``text`` to the regular file at ``path`` (created when absent); whether it was created.

    Never opens a FIFO or device (it could block or write somewhere else) or a symlink swapped in.
    """
    try:
        before: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        before = None
    if before is not None:
        if stat.S_ISDIR(before.st_mode):
            raise ToolError(f"{shown} is a directory")
        refuse_special(before.st_mode, shown)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as error:
        raise ToolError(f"cannot write {shown}: {error.strerror or error}") from None
    with os.fdopen(fd, "wb") as handle:
        check_opened(fd, path, shown, before)
        os.set_blocking(fd, True)
        handle.truncate(0)
        handle.write(text.encode("utf-8"))
    return before is None


@dataclass(frozen=True, slots=True)
class _Change:
    """What a write or edit would do to a file: its text before (``None``: no file) and after, and
    the call's output given whether the write created the file (``file_changed`` is added to it)."""

    old: str | None
    new: str
    output: Callable[[bool], dict[str, Any]]
    unchanged_since: bool = False
    """Refuse to write when the file no longer holds ``old`` (an edit applies to what it read)."""


def _prepare_change(
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    kind: Literal["write", "edit"],
    plan: Callable[[str, str], _Change],
) -> Action:
    """The action of a write or edit of ``arguments["path"]``; ``plan(path, shown)`` reads the file
    and works out the change: now inside the workspace, after the grant outside it."""
    path, inside = ctx.resolve(arguments["path"])
    shown = ctx.relative(path)
    access = Access(kind, path, not inside)

    def stage() -> Action:
        change = plan(path, shown)

        def run() -> dict[str, Any]:
            if change.unchanged_since and _read_text(path, shown) != change.old:
                raise ToolError(
                    f"{shown} changed since the edit was prepared: read it again and redo the edit"
                )
            created = _write_text(path, shown, change.new)
            output = change.output(created)
            if created or change.old != change.new:
                output["file_changed"] = path
            return output

        diff = unified_diff(change.old or "", change.new, shown)
        return Action(run=run, access=access, diff=diff, changes=path)

    if inside:
        return stage()
    return Action(run=lambda: stage().run(), access=access, staged=stage)


def unified_diff(old: str, new: str, shown: str) -> str:
    """The unified diff turning ``old`` into ``new`` for the file shown as ``shown``."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


# -- read_file ------------------------------------------------------------------------------------


def _prepare_read(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    path, inside = ctx.resolve(arguments["path"])
    offset = int_argument(arguments, "offset", 1, 1)
    limit = int_argument(arguments, "limit", DEFAULT_READ_LINES, 1)
    return Action(
        run=lambda: _read(path, ctx.relative(path), offset, limit), access=Access("read", path, not inside)
    )


def _read(path: str, shown: str, offset: int, limit: int) -> dict[str, Any]:
    deadline = Deadline(FILE_DEADLINE)

    def more() -> bool:
        deadline.check(f"reading {shown}")
        return True

    numbered: list[str] = []
    size = 0
    with open_regular(path, shown) as handle:
        if b"\0" in handle.read(_SNIFF_BYTES):
            raise ToolError(
                f"{shown} is a binary file ({os.fstat(handle.fileno()).st_size} bytes); read_file reads text only"
            )
        handle.seek(0)
        if _seek_line(handle, offset, more):
            lines = iter_lines(handle, MAX_LINE_CHARS * 4, more)
            for number, (raw, cut) in enumerate(lines, start=offset):
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if cut or len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + " [line truncated]"
                entry = f"{number:6}\t{line}"
                size += len(entry.encode("utf-8")) + 1
                if size > MAX_READ_BYTES and numbered:
                    break
                numbered.append(entry)
                if len(numbered) == limit:
                    break
        total = _count_lines(handle, handle.tell() + COUNT_BYTES, more)
    if total is not None and offset > max(total, 1):
        raise ToolError(f"offset {offset} is past the end of {shown} ({total} lines)")
    truncated = total is None or total > offset + len(numbered) - 1
    output: dict[str, Any] = {
        "path": path,
        "content": "\n".join(numbered),
        "offset": offset,
        "lines_read": len(numbered),
    }
    if total is not None:
        output["total_lines"] = total
    output["truncated"] = truncated
    if truncated:
        output["next_offset"] = offset + len(numbered)
    return output


def _seek_line(handle: BinaryIO, number: int, more: Callable[[], bool]) -> bool:
    """Move to the start of line ``number`` (1-based); ``False`` when the file has fewer lines."""
    position, newlines = 0, number - 1
    while newlines and more():
        chunk = handle.read(READ_CHUNK)
        if not chunk:
            return False
        found = chunk.count(b"\n")
        if found >= newlines:
            at = -1
            for _ in range(newlines):
                at = chunk.index(b"\n", at + 1)
            handle.seek(position + at + 1)
            return True
        newlines -= found
        position += len(chunk)
    return True


def _count_lines(handle: BinaryIO, end: int, more: Callable[[], bool]) -> int | None:
    """The file's number of lines, or ``None`` when it goes on past byte ``end``."""
    handle.seek(0)
    position = newlines = 0
    last = b""
    while more() and position <= end:
        chunk = handle.read(READ_CHUNK)
        if not chunk:
            return newlines + (1 if last not in (b"", b"\n") else 0)
        position += len(chunk)
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return None


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file. Returns line-numbered content (`<line>\\t<text>`), at most 2000 lines or "
        "100 KB per call; use offset (1-based line) and limit to page through longer files. Binary files are refused."
    ),
    input_schema=arguments(
        {
            "path": _PATH,
            "offset": integer("First line to read (1-based). Default 1.", 1),
            "limit": integer("Number of lines to read. Default 2000.", 1),
        },
        "path",
    ),
    prepare=_prepare_read,
)


# -- write_file -----------------------------------------------------------------------------------


def _prepare_write(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    content: str = arguments["content"]

    def plan(path: str, shown: str) -> _Change:
        return _Change(
            _existing_text(path, shown),
            content,
            lambda created: {"path": path, "bytes_written": len(content.encode("utf-8")), "created": created},
        )

    return _prepare_change(arguments, ctx, "write", plan)


WRITE_FILE = Tool(
    name="write_file",
    description="Create or overwrite a text file with the given content (parent directories are created).",
    input_schema=arguments(
        {"path": _PATH, "content": string("The complete new content of the file.")}, "path", "content"
    ),
    prepare=_prepare_write,
)


# -- edit_file ------------------------------------------------------------------------------------


def _prepare_edit(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    old_string: str = arguments["oldString"]
    new_string: str = arguments["newString"]
    replace_all = bool(arguments.get("replaceAll", False))
    if not old_string:
        raise ToolError("oldString must not be empty: use write_file to create or replace a whole file")
    if old_string == new_string:
        raise ToolError("oldString and newString are identical: nothing to change")

    def plan(path: str, shown: str) -> _Change:
        old = _read_text(path, shown)
        count = old.count(old_string)
        if count == 0:
            raise ToolError(f"oldString not found in {shown}: read the file again and copy the text exactly")
        if count > 1 and not replace_all:
            raise ToolError(
                f"oldString occurs {count} times in {shown}: add surrounding context to make it unique, "
                "or set replaceAll to replace every occurrence"
            )
        new = old.replace(old_string, new_string) if replace_all else old.replace(old_string, new_string, 1)
        replacements = count if replace_all else 1
        return _Change(old, new, lambda _: {"path": path, "replacements": replacements}, unchanged_since=True)

    return _prepare_change(arguments, ctx, "edit", plan)


EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace an exact string in a text file. oldString must match the file exactly (whitespace included) "
        "and be unique unless replaceAll is true. Read the file first."
    ),
    input_schema=arguments(
        {
            "path": _PATH,
            "oldString": string("The exact text to replace.", non_empty=True),
            "newString": string("The replacement text."),
            "replaceAll": boolean("Replace every occurrence. Default false."),
        },
        "path",
        "oldString",
        "newString",
    ),
    prepare=_prepare_edit,
)
