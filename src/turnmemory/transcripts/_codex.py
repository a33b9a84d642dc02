"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{"timestamp", "type", "payload"}``. ``response_item`` payloads are the Responses API
items the model saw (``message``, ``reasoning``, ``function_call``/``function_call_output``,
``custom_tool_call``/``custom_tool_call_output`` such as ``apply_patch``, ``local_shell_call``,
``web_search_call``); ``event_msg`` payloads are UI events: ``user_message`` starts a user turn,
``token_count`` follows each model response, ``exec_command_end`` carries a command's exit code and
``patch_apply_end`` the files a patch changed. User and developer ``message`` items are injected
context (instructions, environment) and are skipped: the clean prompt is the ``user_message`` event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers import openai_responses
from turnmemory.providers._read import Piece
from turnmemory.transcripts._build import SessionBuilder, mapping, read_jsonl
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult
from turnmemory.transcripts._tools import exit_code_in, mcp_tool, patch_targets, patch_tool, shell_command

__all__ = ["FORMAT", "load_codex"]

FORMAT = "codex"

_RESPONSES_ITEMS = (
    "message",
    "reasoning",
    "function_call",
    "custom_tool_call",
    "function_call_output",
    "custom_tool_call_output",
)
"""Items read with the Responses wire's own reader."""

_SHELL_TOOLS = {"exec_command": ("cmd", "command"), "shell_command": ("command",), "shell": ("command",)}


def load_codex(path: Path) -> ImportedSession:
    """Import one Codex CLI rollout file."""
    builder = SessionBuilder(path, FORMAT)
    records = list(read_jsonl(path, builder))
    exit_codes: dict[str, int] = {}
    patches: dict[str, tuple[bool, list[str]]] = {}
    for _, record in records:
        payload = record.get("payload")
        if record.get("type") != "event_msg" or not isinstance(payload, Mapping):
            continue
        call_id = str(payload.get("call_id"))
        if payload.get("type") == "exec_command_end" and isinstance(payload.get("exit_code"), int):
            exit_codes[call_id] = payload["exit_code"]
        elif payload.get("type") == "patch_apply_end":
            changes = payload.get("changes")
            patches[call_id] = (
                payload.get("success") is True,
                list(changes) if isinstance(changes, Mapping) else [],
            )
    calls: dict[str, ToolCall] = {}
    for number, record in builder.timed(records, "timestamp"):
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(payload, Mapping):
            builder.problem(number, f"{kind} record without a payload object; skipped")
            continue
        item = payload.get("type")
        if kind == "session_meta":
            cwd = payload.get("cwd")
            builder.workspace = cwd if isinstance(cwd, str) else builder.workspace
        elif kind == "event_msg" and item == "user_message":
            builder.user(str(payload.get("message") or ""))
        elif kind == "event_msg" and item == "token_count":
            if builder.in_turn:
                builder.end_iteration()
        elif kind == "event_msg" and item in ("exec_command_end", "patch_apply_end"):
            continue  # read in the first pass
        elif kind == "response_item":
            _item(builder, payload, calls, exit_codes, patches)
        else:
            builder.skip(f"{kind}:{item}" if item else str(kind))
    return builder.build()


def _item(
    builder: SessionBuilder,
    payload: Mapping[str, Any],
    calls: dict[str, ToolCall],
    exit_codes: Mapping[str, int],
    patches: Mapping[str, tuple[bool, list[str]]],
) -> None:
    item = payload.get("type")
    if item == "message" and payload.get("role") != "assistant":
        builder.skip("injected_context")
    elif item in ("local_shell_call", "web_search_call"):
        started = _served_call(payload, _call_id(payload, "", len(calls)))
        calls[started.call_id] = started
        builder.add(started)
        if item == "web_search_call":  # served by the provider: no output item follows
            builder.add(ToolResult(started.call_id, ""))
    elif item in _RESPONSES_ITEMS:
        for piece in openai_responses.pieces([payload]):
            if piece.kind == "prose":
                builder.prose(piece.text)
            elif piece.kind == "reasoning":
                builder.reasoning(piece.text)
            elif piece.kind == "call":
                custom = item == "custom_tool_call"
                started = _call(piece, _call_id(payload, piece.call_id, len(calls)), custom=custom)
                calls[started.call_id] = started
                builder.add(started)
            elif (call := calls.get(piece.call_id)) is not None:
                builder.add(_result(call, piece.text, exit_codes, patches))
            else:
                builder.skip("orphan_tool_result")
    else:
        builder.skip(f"response_item:{item}")


def _call_id(payload: Mapping[str, Any], call_id: str, index: int) -> str:
    return call_id or str(payload.get("call_id") or payload.get("id") or f"{payload.get('type')}_{index}")


def _call(piece: Piece, call_id: str, *, custom: bool) -> ToolCall:
    """A ``function_call`` (or a ``custom_tool_call``, whose raw input the reader keeps under
    ``input``) as the Responses reader read it, mapped onto this project's tools."""
    source_name = piece.name or "unknown_tool"
    arguments = piece.arguments or {}
    if custom:
        raw = arguments.get("input")
        text = raw if isinstance(raw, str) else compact_json(raw)
        name, mapped = patch_tool(text) if source_name == "apply_patch" else (source_name, {})
        return ToolCall(call_id, name, mapped, source_name, text)
    text = piece.raw or compact_json(arguments)
    name, mapped = _function(source_name, arguments)
    return ToolCall(call_id, name, mapped, source_name, text)


def _served_call(payload: Mapping[str, Any], call_id: str) -> ToolCall:
    """A shell command or a web search that Codex's provider ran itself."""
    if payload.get("type") == "local_shell_call":
        action = mapping(payload.get("action"))
        command = shell_command(action.get("command"))
        return ToolCall(
            call_id, "bash", {"command": command} if command else {}, "local_shell", compact_json(action)
        )
    action = mapping(payload.get("action"))
    url = action.get("url")
    name, arguments = ("web_fetch", {"url": url}) if isinstance(url, str) else ("web_search", {})
    return ToolCall(call_id, name, arguments, "web_search", compact_json(action))


def _function(name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    if name in _SHELL_TOOLS:
        command = next(
            (shell_command(arguments.get(key)) for key in _SHELL_TOOLS[name] if key in arguments), None
        )
        return "bash", {"command": command} if command else {}
    if name == "apply_patch":
        return patch_tool(str(arguments.get("input") or ""))
    return mcp_tool(name) or (name, {})


def _result(
    call: ToolCall,
    text: str,
    exit_codes: Mapping[str, int],
    patches: Mapping[str, tuple[bool, list[str]]],
) -> ToolResult:
    reported_code: int | None = None
    wrapped = _json_object(text) if text.startswith("{") else {}
    metadata = wrapped.get("metadata")
    if isinstance(wrapped.get("output"), str) and isinstance(metadata, Mapping):  # old `shell` results
        text = wrapped["output"]
        reported_code = metadata.get("exit_code") if isinstance(metadata.get("exit_code"), int) else None
    if text.startswith("execution error"):
        return ToolResult(call.call_id, text, is_error=True)
    if call.name == "bash":
        code = exit_codes.get(call.call_id, reported_code)
        code = exit_code_in(text) if code is None else code
        return ToolResult(call.call_id, text, outcome={"exit_code": code} if code is not None else None)
    if call.name in ("edit_file", "write_file"):
        success, changed = patches.get(call.call_id, (text.startswith("Success") or reported_code == 0, []))
        if not success:
            return ToolResult(call.call_id, text, is_error=True)
        targets = changed or [path for _, path in patch_targets(call.source_input)]
        return ToolResult(call.call_id, text, outcome={"file_changed": targets[0]} if targets else None)
    return ToolResult(call.call_id, text)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
