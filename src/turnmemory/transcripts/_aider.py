"""aider chat transcripts (``.aider.chat.history.md``, and aider's published example chats).

Markdown, one session or several (``# aider chat started at ...``, the only time aider logs: the
turn that follows a launch is given it, later turns have no time). ``#### `` lines are the user's
messages (consecutive ones form one message); ``> `` lines are aider's own output (confirmations,
``Applied edit to PATH``, ``Running CMD`` and the command's output, commit lines); everything else is
assistant prose. aider has no tool calls: the model edits files by writing SEARCH/REPLACE blocks
(``<<<<<<< SEARCH|ORIGINAL`` ... ``=======`` ... ``>>>>>>> REPLACE|UPDATED``) or whole files in
fenced blocks after the file name, and aider applies them once the reply is complete. The importer
recovers them as activity:

- each edit block becomes an ``edit_file`` call on its file, placed where the block stood in the
  prose; aider's ``Applied edit to PATH`` line after the reply is its result (``file_changed``), and
  a block the reply was interrupted in (no closing marker) is a failed call;
- ``> Running CMD`` (a shell command the model proposed and the user accepted) becomes a ``bash``
  call whose result is the quoted output that follows; a user's ``/run``/``/test`` command does too,
  at the start of its turn. aider does not log exit codes, so none is recovered.

The edit blocks are the calls' input (what the full trace carries), not prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from turnmemory.transcripts._build import SessionBuilder, open_regular, read_lines
from turnmemory.transcripts._model import ImportedSession, Prose, ToolCall, ToolResult

__all__ = ["FORMAT", "is_aider", "load_aider"]

FORMAT = "aider"

_STARTED = "# aider chat started at"
_MARKERS = (_STARTED, '<div class="chat-transcript"', "> $ aider", "> Aider v")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_SEARCH = re.compile(r"^<{5,9} (?:SEARCH|ORIGINAL)\s*$")
_REPLACE_END = re.compile(r"^>{5,9} (?:REPLACE|UPDATED)\s*$")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_RUNNING = re.compile(r"^Running (.+?)\s*$")
_USER_COMMAND = re.compile(r"^/(?:run|test)\s+(.+)$")
_FILE_NAME = re.compile(r"^[\w./\\@+-]+\.[A-Za-z0-9]+$|^[\w.\\@+-]*/[\w./\\@+-]+$")
_HTML = re.compile(r"^\s*</?div\b")
_SNIFF_LINES = 200


def is_aider(path: Path) -> bool:
    """Whether the markdown file at ``path`` is an aider chat transcript."""
    try:
        with open_regular(path) as handle:
            for number, raw in read_lines(handle):
                if number > _SNIFF_LINES or raw is None:
                    return False
                text = raw.decode("utf-8", "replace").strip()
                if text.startswith(_MARKERS):
                    return True
    except ValueError:
        return False
    return False


@dataclass
class _Reply:
    """One assistant reply being read: prose and edit blocks, then aider's quoted lines after it."""

    parts: list[Prose | ToolCall] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)

    def flush_prose(self) -> None:
        if self.prose:
            self.parts.append(Prose("".join(self.prose)))
            self.prose = []

    @property
    def empty(self) -> bool:
        return not self.parts and not "".join(self.prose).strip() and not self.quoted


class _Reader:
    """Walks the transcript's lines and feeds the builder."""

    def __init__(self, builder: SessionBuilder) -> None:
        self.builder = builder
        self.user_lines: list[str] = []
        self.reply = _Reply()
        self.replies_in_turn = 0
        self.calls = 0
        self.block: list[str] | None = None  # the lines of an open fenced block
        self.fence = ""
        self.cut_off: set[str] = set()  # edit blocks the reply was interrupted in

    def call_id(self) -> str:
        self.calls += 1
        return f"aider_{self.calls}"

    def line(self, text: str) -> None:
        stripped = text.rstrip("\n")
        if self.block is not None:
            self.block.append(text)
            if stripped.strip() == self.fence:
                self.close_block()
            return
        if stripped.startswith("#### "):
            self.end_reply()
            self.user_lines.append(stripped[5:].rstrip())
            return
        if self.user_lines:
            self.start_turn()
        if _HTML.match(stripped):
            return
        if stripped.startswith(_STARTED):
            self.end_reply()
            self.builder.time(stripped[len(_STARTED) :])
            return
        if stripped.startswith(">"):
            if self.reply.parts or "".join(self.reply.prose).strip() or self.reply.quoted:
                self.reply.quoted.append(stripped[1:].strip())
            return
        if self.reply.quoted:
            self.end_reply()
        fence = _FENCE.match(stripped.strip())
        if fence and self.builder.in_turn:
            self.block = [text]
            self.fence = fence.group(1)
            return
        self.reply.prose.append(text)

    def start_turn(self) -> None:
        text = "\n".join(self.user_lines).strip()
        self.user_lines = []
        self.builder.user(text)
        self.replies_in_turn = 0
        command = _USER_COMMAND.match(text)
        if command:
            self.reply.parts.append(_bash(self.call_id(), command.group(1)))

    def close_block(self) -> None:
        lines, self.block = self.block or [], None
        body = [line.rstrip("\n") for line in lines[1:-1]]
        searched = any(_SEARCH.match(line) for line in body)
        path = (_block_file(body) if searched else None) or _file_before(self.reply.prose)
        if path is None:
            self.reply.prose.extend(lines)
            return
        prose = self.reply.prose
        if prose and prose[-1].strip().strip("`*") == path:
            prose.pop()
        self.reply.flush_prose()
        call_id = self.call_id()
        if searched and not any(_REPLACE_END.match(line) for line in body):
            self.cut_off.add(call_id)
        self.reply.parts.append(
            ToolCall(
                call_id, "edit_file", {"path": path}, source_name="edit_block", source_input="".join(lines)
            )
        )

    def end_reply(self) -> None:
        """Emit the reply read so far: its prose and calls, and the results aider's lines give them."""
        if self.block is not None:  # a fence never closed: it was prose
            self.reply.prose.extend(self.block)
            self.block = None
        reply, self.reply = self.reply, _Reply()
        reply.flush_prose()
        if reply.empty or not self.builder.in_turn:
            if not reply.empty:
                self.builder.skip("before_first_turn")
            return
        if self.replies_in_turn:
            self.builder.end_iteration()
        self.replies_in_turn += 1
        applied = {m.group(1) for line in reply.quoted if (m := _APPLIED.match(line))}
        for part in reply.parts:
            self.builder.add(part)
            if isinstance(part, ToolCall) and part.name == "edit_file":
                path = str(part.arguments["path"])
                if path in applied:
                    result = ToolResult(
                        part.call_id, f"Applied edit to {path}", outcome={"file_changed": path}
                    )
                elif part.call_id in self.cut_off:
                    result = ToolResult(part.call_id, "the edit block was cut off", is_error=True)
                else:
                    result = ToolResult(part.call_id, "")
                self.builder.add(result)
            elif isinstance(part, ToolCall):
                self.builder.add(ToolResult(part.call_id, "\n".join(reply.quoted)))
        self._commands(reply.quoted)

    def _commands(self, quoted: list[str]) -> None:
        """``Running CMD`` lines: a bash call each, with the quoted lines up to the next one as output."""
        call: ToolCall | None = None
        output: list[str] = []
        for line in quoted:
            running = _RUNNING.match(line)
            if running:
                if call is not None:
                    self.builder.add(ToolResult(call.call_id, "\n".join(output)))
                call, output = _bash(self.call_id(), running.group(1)), []
                self.builder.add(call)
            elif call is not None:
                output.append(line)
        if call is not None:
            self.builder.add(ToolResult(call.call_id, "\n".join(output)))

    def finish(self) -> None:
        if self.user_lines:
            self.start_turn()
        self.end_reply()


def _bash(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "bash", {"command": command}, source_name="run", source_input=command)


def _block_file(body: list[str]) -> str | None:
    """The file name written inside a fence, before its SEARCH line (aider's diff-fenced format)."""
    for line in body:
        if _SEARCH.match(line):
            return None
        candidate = line.strip()
        if candidate and _FILE_NAME.match(candidate):
            return candidate
    return None


def _file_before(prose: list[str]) -> str | None:
    """The file name on the line right before a fence (aider's diff and whole formats)."""
    for line in reversed(prose):
        candidate = line.strip().strip("`*")
        if not candidate:
            continue
        return candidate if _FILE_NAME.match(candidate) else None
    return None


def load_aider(path: Path) -> ImportedSession:
    """Import one aider chat transcript."""
    builder = SessionBuilder(path, FORMAT)
    reader = _Reader(builder)
    with open_regular(path) as handle:
        for number, raw in read_lines(handle):
            if raw is None:
                builder.problem(number, "line too long; skipped")
                continue
            if raw.strip():
                builder.lines += 1
            reader.line(raw.decode("utf-8", "replace").replace("\r\n", "\n"))
    reader.finish()
    return builder.build()
