"""``@path`` in a prompt: the mentioned files' text, attached to that turn's request.

Only regular text files are read, each up to :data:`MAX_FILE_BYTES` (and all of them up to
:data:`MAX_TOTAL_BYTES`); a file outside the workspace is read only when the read permission grants
it (asked, or by a rule). Each attached file is confirmed with its size; a mention that looks like a
path (``@notes.txt``, ``@src/x``) but names no file says so; other mentions (``@someone``) are left
as the words they are.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Protocol

from turnmemory.agent.permissions import Access, Permissions, resolve_path
from turnmemory.agent.tools._base import ToolError, open_regular

__all__ = ["MAX_FILE_BYTES", "MAX_TOTAL_BYTES", "attach_mentions", "mentions"]

MAX_FILE_BYTES = 100_000
MAX_TOTAL_BYTES = 250_000
_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING = ",.;:!?)]}'\""


class _Session(Protocol):
    workspace: str
    permissions: Permissions


def mentions(text: str) -> list[str]:
    """The paths ``text`` mentions with ``@``, in order, each once (trailing punctuation dropped)."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path and path not in found:
            found.append(path)
    return found


def attach_mentions(text: str, session: _Session) -> tuple[str, list[str]]:
    """The attachment text for the files ``text`` mentions, and one note per file: attached (its size),
    cut, or not attached and why."""
    blocks: list[str] = []
    notes: list[str] = []
    room = MAX_TOTAL_BYTES
    for raw in mentions(text):
        real, inside = resolve_path(raw, session.workspace)
        try:
            mode = os.stat(real).st_mode
        except OSError as error:
            if "/" in raw or "." in raw:  # else an @handle or a decorator, not a file name
                notes.append(f"@{raw} not attached: {error.strerror or error}")
            continue
        if stat.S_ISDIR(mode):
            notes.append(f"@{raw} is a directory: not attached")
            continue
        if not stat.S_ISREG(mode):
            notes.append(f"@{raw} is not a regular file: not attached")
            continue
        if not inside:
            decision = session.permissions.decide(Access("read", real, outside=True, attachment=True))
            if not decision.allowed:
                notes.append(
                    f"@{raw} not attached: {'denied' if decision.how == 'deny' else decision.reason}"
                )
                continue
        if room <= 0:
            notes.append(f"@{raw} not attached: the attachments reached {MAX_TOTAL_BYTES:,} bytes")
            continue
        block, note = _read(raw, real, min(MAX_FILE_BYTES, room))
        if block:
            blocks.append(block)
            room -= len(block.encode())
        notes.append(note)
    return "\n\n".join(blocks), notes


def _read(raw: str, real: str, limit: int) -> tuple[str, str]:
    try:
        with open_regular(real, f"@{raw}") as handle:
            data = handle.read(limit + 1)
            size = os.fstat(handle.fileno()).st_size
    except ToolError as error:
        return "", f"@{raw} not attached: {error}"
    if b"\0" in data[:8192]:
        return "", f"@{raw} looks binary: not attached"
    note = f"@{raw} attached ({len(data):,} bytes)"
    if len(data) > limit:
        data = data[:limit]
        note = f"@{raw}: attached its first {limit:,} of {size:,} bytes"
    text = data.decode("utf-8", "replace")
    return f'<file path="{raw}">\n{text}\n</file>', note
