"""``read_file``, ``write_file`` and ``edit_file``.

Paths are resolved against the workspace with symlinks and ``..`` followed, so the access a call asks
for names the file it will really touch. Writes and edits report ``file_changed`` (the absolute path)
only when the file's content changed.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory.agent.permissions import Access
from turnmemory.agent.tools._base import Action, Tool, ToolContext, ToolError, int_argument

__all__ = ["EDIT_FILE", "READ_FILE", "WRITE_FILE", "unified_diff"]

MAX_READ_BYTES = 100_000
"""The most text one ``read_file`` call returns; ``offset`` pages through the rest."""
DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
_SNIFF_BYTES = 8192


def _read_text(path: str, shown: str) -> str:
    """The whole file as text (line endings kept); :class:`ToolError` for missing, directory, binary."""
    if not os.path.exists(path):
        raise ToolError(f"file not found: {shown}")
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory: use glob to list it")
    data = Path(path).read_bytes()
    if b"\0" in data[:_SNIFF_BYTES]:
        raise ToolError(
            f"{shown} is a binary file ({len(data)} bytes); only text files can be read or edited"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(f"{shown} is not UTF-8 text (invalid byte at {error.start})") from None


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
    if not os.path.exists(path):
        raise ToolError(f"file not found: {shown}")
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory: use glob to list it")
    numbered: list[str] = []
    size = total = 0
    truncated = False
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        if b"\0" in head:
            raise ToolError(
                f"{shown} is a binary file ({os.path.getsize(path)} bytes); read_file reads text only"
            )
        handle.seek(0)
        for total, raw in enumerate(handle, start=1):
            if total < offset or truncated:
                continue
            if len(numbered) >= limit:
                truncated = True
                continue
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line truncated]"
            entry = f"{total:6}\t{line}"
            size += len(entry.encode("utf-8")) + 1
            if size > MAX_READ_BYTES and numbered:
                truncated = True
                continue
            numbered.append(entry)
    if offset > max(total, 1):
        raise ToolError(f"offset {offset} is past the end of {shown} ({total} lines)")
    output: dict[str, Any] = {
        "path": path,
        "content": "\n".join(numbered),
        "offset": offset,
        "lines_read": len(numbered),
        "total_lines": total,
        "truncated": truncated,
    }
    if truncated:
        output["next_offset"] = offset + len(numbered)
    return output


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file. Returns line-numbered content (`<line>\\t<text>`), at most 2000 lines or "
        "100 KB per call; use offset (1-based line) and limit to page through longer files. Binary files are refused."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "File path, relative to the workspace or absolute.",
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to read (1-based). Default 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Number of lines to read. Default 2000.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    prepare=_prepare_read,
)


# -- write_file -----------------------------------------------------------------------------------


def _prepare_write(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    path, inside = ctx.resolve(arguments["path"])
    shown = ctx.relative(path)
    content: str = arguments["content"]
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory")
    old = _read_text(path, shown) if os.path.exists(path) else None

    def run() -> dict[str, Any]:
        created = not os.path.exists(path)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        output: dict[str, Any] = {
            "path": path,
            "bytes_written": len(content.encode("utf-8")),
            "created": created,
        }
        if created or old != content:
            output["file_changed"] = path
        return output

    return Action(
        run=run, access=Access("write", path, not inside), diff=unified_diff(old or "", content, shown)
    )


WRITE_FILE = Tool(
    name="write_file",
    description="Create or overwrite a text file with the given content (parent directories are created).",
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "File path, relative to the workspace or absolute.",
            },
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    prepare=_prepare_write,
)


# -- edit_file ------------------------------------------------------------------------------------


def _prepare_edit(arguments: Mapping[str, Any], ctx: ToolContext) -> Action:
    path, inside = ctx.resolve(arguments["path"])
    shown = ctx.relative(path)
    old_string: str = arguments["oldString"]
    new_string: str = arguments["newString"]
    replace_all = bool(arguments.get("replaceAll", False))
    if not old_string:
        raise ToolError("oldString must not be empty: use write_file to create or replace a whole file")
    if old_string == new_string:
        raise ToolError("oldString and newString are identical: nothing to change")
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

    def run() -> dict[str, Any]:
        if _read_text(path, shown) != old:
            raise ToolError(f"{shown} changed since the edit was prepared: read it again and redo the edit")
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(new)
        output: dict[str, Any] = {"path": path, "replacements": count if replace_all else 1}
        if new != old:
            output["file_changed"] = path
        return output

    return Action(run=run, access=Access("edit", path, not inside), diff=unified_diff(old, new, shown))


EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace an exact string in a text file. oldString must match the file exactly (whitespace included) "
        "and be unique unless replaceAll is true. Read the file first."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "File path, relative to the workspace or absolute.",
            },
            "oldString": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
            "newString": {"type": "string", "description": "The replacement text."},
            "replaceAll": {"type": "boolean", "description": "Replace every occurrence. Default false."},
        },
        "required": ["path", "oldString", "newString"],
        "additionalProperties": False,
    },
    prepare=_prepare_edit,
)
