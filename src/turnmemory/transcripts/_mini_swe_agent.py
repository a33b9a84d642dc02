"""mini-swe-agent trajectories (``*.traj.json``).

Two shapes: ``{"trajectory_format": "mini-swe-agent-1.1", "messages": [...], "info": {...}}`` with
OpenAI ``tool_calls`` (one ``bash`` tool) answered by ``tool`` messages, and a plain list of
``{role, content}`` messages where each assistant message holds one fenced ``mswea_bash_command`` (or
``bash``) block answered by a ``user`` observation. Observations start with
``<returncode>N</returncode>``. A trajectory is one user turn: the first user message (the task).
Version 1.1 records times (seconds since the epoch): ``extra.response.created`` on an assistant message,
``extra.timestamp`` on an observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers._read import as_text
from turnmemory.transcripts._build import SessionBuilder, document_builder, mapping
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult
from turnmemory.transcripts._tools import exit_code_in

__all__ = ["FORMAT", "load_mini_swe_agent"]

FORMAT = "mini-swe-agent"

_COMMAND_BLOCK = re.compile(r"```(?:mswea_bash_command|bash)[ \t]*\n(.*?)\n?```", re.S)


def load_mini_swe_agent(path: Path, document: Any = None) -> ImportedSession:
    """Import one mini-swe-agent trajectory (``document`` when it is already parsed)."""
    builder, data = document_builder(path, FORMAT, document)
    messages = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(messages, list):
        return builder.nothing("no messages list")
    pending: list[ToolCall] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            builder.problem(f"message {index}", "expected an object; skipped")
            continue
        role = message.get("role")
        text = as_text(message.get("content"))
        if role == "user" and not builder.in_turn:
            builder.user(text)
        elif role == "assistant":
            pending = _assistant(builder, index, message, text)
        elif role in ("tool", "user") and pending:
            call = pending.pop(0)
            code = exit_code_in(text)
            builder.add(
                ToolResult(call.call_id, text, outcome={"exit_code": code} if code is not None else None)
            )
        else:
            builder.skip(f"role:{role}")
        extra = mapping(message.get("extra"))
        builder.time(extra.get("timestamp", mapping(extra.get("response")).get("created")))
    return builder.build()


def _assistant(builder: SessionBuilder, index: int, message: Mapping[str, Any], text: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list) and tool_calls:
        if text:
            builder.prose(text)
        for raw in tool_calls:
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping):
                continue
            arguments_text = str(function.get("arguments") or "{}")
            calls.append(
                ToolCall(
                    str(raw.get("id")),
                    "bash",
                    _command(arguments_text),
                    str(function.get("name")),
                    arguments_text,
                )
            )
    else:
        match = _COMMAND_BLOCK.search(text)
        prose = text[: match.start()] + text[match.end() :] if match else text
        if prose.strip():
            builder.prose(prose)
        if match:
            command = match.group(1)
            calls.append(
                ToolCall(
                    f"message_{index}",
                    "bash",
                    {"command": command},
                    "bash",
                    compact_json({"command": command}),
                )
            )
    for call in calls:
        builder.add(call)
    builder.end_iteration()
    return calls


def _command(arguments_text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(arguments_text)
    except ValueError:
        return {}
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return {"command": command} if isinstance(command, str) else {}
