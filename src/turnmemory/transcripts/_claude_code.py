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

from turnmemory.retention import DEFAULT_RULES
from turnmemory.transcripts._build import SessionBuilder, as_text, dump_input, mapping, read_jsonl
from turnmemory.transcripts._model import (
    ImportedSession,
    IterationEnd,
    Prose,
    Reasoning,
    ToolCall,
    ToolResult,
)
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
                builder.add(IterationEnd())
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
    blocks = content if isinstance(content, list) else []
    results = [block for block in blocks if isinstance(block, Mapping) and block.get("type") == "tool_result"]
    if results:
        for block in results:
            call = calls.get(str(block.get("tool_use_id")))
            if call is None:
                builder.skip("orphan_tool_result")
                continue
            builder.add(_result(call, block, record.get("toolUseResult")))
        return
    text = as_text(content)
    command.clear()
    if text.lstrip().startswith(_WRAPPERS):
        builder.skip("command_wrapper")
        command.append(text)
        return
    builder.user(text)


def _assistant(builder: SessionBuilder, number: int, content: Any, calls: dict[str, ToolCall]) -> None:
    if isinstance(content, str):
        builder.add(Prose(content))
        return
    if not isinstance(content, list):
        builder.problem(number, "assistant content is neither text nor a list of blocks; skipped")
        return
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block.get("text"), str):
            builder.add(Prose(block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            builder.add(Reasoning(block["thinking"]))
        elif kind == "tool_use" and isinstance(block.get("name"), str):
            arguments = mapping(block.get("input"))
            name, mapped = claude_code_tool(block["name"], arguments)
            call = ToolCall(
                call_id=str(block.get("id")),
                name=name,
                arguments=mapped,
                source_name=block["name"],
                source_input=dump_input(arguments),
            )
            calls[call.call_id] = call
            builder.add(call)
        else:
            builder.skip(f"block:{kind}")


def _result(call: ToolCall, block: Mapping[str, Any], structured: Any) -> ToolResult:
    text = as_text(block.get("content"))
    rule = DEFAULT_RULES.get(call.name)
    kind = rule.outcome if rule is not None else "none"
    path = _changed_file(call, structured) if kind == "file_change" else None
    outcome, is_error = tool_outcome(kind, path, text, block.get("is_error") is True)
    return ToolResult(call.call_id, text, is_error=is_error, outcome=outcome)


def _changed_file(call: ToolCall, structured: Any) -> str | None:
    """The file a successful write/edit changed: not a no-op update (an empty ``structuredPatch``)."""
    path = call.arguments.get("path")
    if isinstance(structured, Mapping):
        path = structured.get("filePath") if isinstance(structured.get("filePath"), str) else path
        patch = structured.get("structuredPatch")
        if structured.get("type") != "create" and isinstance(patch, list) and not patch:
            return None
    return path if isinstance(path, str) else None
