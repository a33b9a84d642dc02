"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON object per line; ``user``/``assistant`` records carry Anthropic Messages API content, one
record per streamed content block (records of one model response share ``message.id``). The importer
reads the main chain only: sidechain, meta (harness-injected), compact-summary and slash-command
wrapper records are skipped and counted, records are deduplicated by ``uuid``. A user turn starts at
a user record whose content is text (not ``tool_result`` blocks). A slash command that makes the model
answer (its wrapper record followed by assistant output) also starts a turn, with the wrapper as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers import anthropic
from turnmemory.providers._read import Piece, as_text
from turnmemory.retention import DEFAULT_RULES
from turnmemory.transcripts._build import SessionBuilder, read_jsonl
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult
from turnmemory.transcripts._tools import claude_code_tool, tool_outcome

__all__ = ["FORMAT", "load_claude_code"]

FORMAT = "claude-code"

_WRAPPERS = ("<command-name>", "<command-message>", "<local-command")


def load_claude_code(path: Path) -> ImportedSession:
    """Import one Claude Code session file."""
    builder = SessionBuilder(path, FORMAT)
    seen: set[str] = set()
    calls: dict[str, ToolCall] = {}
    response_id: object = None
    command: list[str] = []  # a slash-command wrapper that may start a turn when the model answers it
    for number, record in builder.timed(read_jsonl(path, builder), "timestamp"):
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                builder.skip("duplicate_uuid")
                continue
            seen.add(uuid)
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            builder.skip(str(kind) if isinstance(kind, str) else "unknown")
            continue
        if record.get("isSidechain") is True:
            builder.skip("sidechain")
            continue
        message = record.get("message")
        if not isinstance(message, Mapping):
            builder.problem(number, f"{kind} record without a message object; skipped")
            continue
        if builder.workspace is None and isinstance(record.get("cwd"), str):
            builder.workspace = record["cwd"]
        if kind == "user":
            _user(builder, record, message.get("content"), calls, command)
            continue
        if message.get("model") == "<synthetic>":
            builder.skip("synthetic_reply")
            continue
        if command:
            builder.user(command.pop())
            builder.skipped["command_wrapper"] -= 1
        if message.get("id") != response_id:
            response_id = message.get("id")
            if builder.in_turn:
                builder.end_iteration()
        _assistant(builder, number, message.get("content"), calls)
    return builder.build()


def _user(
    builder: SessionBuilder,
    record: Mapping[str, Any],
    content: Any,
    calls: dict[str, ToolCall],
    command: list[str],
) -> None:
    if record.get("isMeta") is True:
        builder.skip("meta")
        return
    if record.get("isCompactSummary") is True:
        builder.skip("compact_summary")
        return
    results = [piece for piece in _pieces("user", content) if piece.kind == "result"]
    if results:
        for piece in results:
            call = calls.get(piece.call_id)
            if call is None:
                builder.skip("orphan_tool_result")
                continue
            builder.add(_result(call, piece, record.get("toolUseResult")))
        return
    text = as_text(content)
    command.clear()
    if text.lstrip().startswith(_WRAPPERS):
        builder.skip("command_wrapper")
        command.append(text)
        return
    builder.user(text)


def _assistant(builder: SessionBuilder, number: int, content: Any, calls: dict[str, ToolCall]) -> None:
    if not isinstance(content, str | list):
        builder.problem(number, "assistant content is neither text nor a list of blocks; skipped")
        return
    read = {piece.slot: piece for piece in _pieces("assistant", content)}
    for slot, block in enumerate(content if isinstance(content, list) else [content]):
        piece = read.get(slot)
        if piece is not None and piece.kind == "prose":
            builder.prose(piece.text)
        elif piece is not None and piece.kind == "reasoning":
            builder.reasoning(piece.text)
        elif piece is not None and piece.kind == "call" and piece.name:
            arguments = dict(piece.arguments or {})
            name, mapped = claude_code_tool(piece.name, arguments)
            call = ToolCall(piece.call_id, name, mapped, piece.name, compact_json(arguments))
            calls[call.call_id] = call
            builder.add(call)
        else:
            builder.skip(f"block:{block.get('type') if isinstance(block, Mapping) else None}")


def _pieces(role: str, content: Any) -> list[Piece]:
    """The Messages API blocks of a record's content, read by the Anthropic wire's own reader."""
    return anthropic.pieces([{"role": role, "content": content}])


def _result(call: ToolCall, piece: Piece, structured: Any) -> ToolResult:
    rule = DEFAULT_RULES.get(call.name)
    kind = rule.outcome if rule is not None else "none"
    path = _changed_file(call, structured) if kind == "file_change" else None
    outcome, is_error = tool_outcome(kind, path, piece.text, piece.error)
    return ToolResult(call.call_id, piece.text, is_error=is_error, outcome=outcome)


def _changed_file(call: ToolCall, structured: Any) -> str | None:
    """The file a successful write/edit changed: not a no-op update (an empty ``structuredPatch``)."""
    path = call.arguments.get("path")
    if isinstance(structured, Mapping):
        path = structured.get("filePath") if isinstance(structured.get("filePath"), str) else path
        patch = structured.get("structuredPatch")
        if structured.get("type") != "create" and isinstance(patch, list) and not patch:
            return None
    return path if isinstance(path, str) else None
