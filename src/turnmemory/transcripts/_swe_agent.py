"""SWE-agent trajectories (``*.traj``).

One JSON object with ``trajectory`` (steps of ``thought``, ``action``, ``observation`` and a
``state`` JSON string holding ``open_file``/``working_dir``) and ``history`` (the chat the model
saw). A trajectory is one user turn: the task, which is the first non-demonstration user message of
``history``. Each step is one model request: its thought is prose, its action one tool call and its
observation the result. Files without ``trajectory`` (function-calling demonstrations) are read from
``history``'s assistant ``tool_calls`` and ``tool`` observations. SWE-agent records no exit codes.

Actions map onto this project's tools by their first word: ``open``/``goto``/``scroll_*`` read
the open file, ``create`` writes, ``edit``/``insert`` edit the open file, ``find_file`` is a glob,
``search_dir``/``search_file`` a grep, ``submit`` keeps its name, anything else is ``bash``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory.providers._read import as_text
from turnmemory.transcripts._build import SessionBuilder, document_builder
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult

__all__ = ["FORMAT", "load_swe_agent", "swe_agent_tool"]

FORMAT = "swe-agent"

_READ = ("open", "goto", "scroll_up", "scroll_down")
_EDIT = ("edit", "insert", "append")


def load_swe_agent(path: Path, document: Any = None) -> ImportedSession:
    """Import one SWE-agent ``.traj`` file (``document`` when it is already parsed)."""
    builder, data = document_builder(path, FORMAT, document)
    if not isinstance(data, Mapping):
        return builder.nothing("expected a JSON object")
    history = [
        entry
        for entry in data.get("history") or []
        if isinstance(entry, Mapping) and not entry.get("is_demo")
    ]
    task = next((entry for entry in history if entry.get("role") == "user"), None)
    builder.user(as_text(task.get("content")) if task else "")
    steps = data.get("trajectory")
    if isinstance(steps, list):
        for index, step in enumerate(steps):
            if not isinstance(step, Mapping) or not isinstance(step.get("action"), str):
                builder.problem(f"step {index}", "expected an object with an action; skipped")
                continue
            _step(builder, index, step)
    else:
        _history(builder, history)
    return builder.build()


def _step(builder: SessionBuilder, index: int, step: Mapping[str, Any]) -> None:
    state = _state(step.get("state"))
    if builder.workspace is None and isinstance(state.get("working_dir"), str):
        builder.workspace = state["working_dir"]
    thought = step.get("thought")
    if isinstance(thought, str) and thought:
        builder.prose(thought)
    action = step["action"].strip()
    name, arguments = swe_agent_tool(action, state.get("open_file"))
    call = ToolCall(f"step_{index}", name, arguments, action.split(maxsplit=1)[0] if action else "", action)
    builder.add(call)
    observation = step.get("observation")
    text = observation if isinstance(observation, str) else ""
    outcome = (
        {"file_changed": arguments["path"]}
        if name in ("edit_file", "write_file") and "path" in arguments
        else None
    )
    builder.add(ToolResult(call.call_id, text, outcome=outcome))
    builder.end_iteration()


def _history(builder: SessionBuilder, history: list[Mapping[str, Any]]) -> None:
    pending: list[ToolCall] = []
    for entry in history:
        if entry.get("role") == "assistant":
            thought = (
                entry.get("thought")
                if isinstance(entry.get("thought"), str)
                else as_text(entry.get("content"))
            )
            if thought:
                builder.prose(thought)
            for raw in entry.get("tool_calls") or []:
                function = raw.get("function") if isinstance(raw, Mapping) else None
                if not isinstance(function, Mapping):
                    continue
                arguments_text = str(function.get("arguments") or "{}")
                call = _function_call(str(raw.get("id")), str(function.get("name")), arguments_text)
                pending.append(call)
                builder.add(call)
            builder.end_iteration()
        elif entry.get("role") == "tool" and pending:
            builder.add(ToolResult(pending.pop(0).call_id, as_text(entry.get("content"))))


def _function_call(call_id: str, name: str, arguments_text: str) -> ToolCall:
    try:
        arguments = json.loads(arguments_text)
    except ValueError:
        arguments = {}
    arguments = arguments if isinstance(arguments, dict) else {}
    if name == "bash":
        mapped: tuple[str, dict[str, Any]] = ("bash", {"command": str(arguments.get("command", ""))})
    elif name == "str_replace_editor":
        command = arguments.get("command")
        tool = {"view": "read_file", "create": "write_file"}.get(str(command), "edit_file")
        mapped = (tool, {"path": str(arguments.get("path", ""))})
    else:
        words = " ".join([name, *(str(value) for value in arguments.values())])
        mapped = swe_agent_tool(words, None)
    return ToolCall(call_id, mapped[0], mapped[1], name, arguments_text)


def swe_agent_tool(action: str, open_file: Any) -> tuple[str, dict[str, Any]]:
    """An SWE-agent action string as one of this project's tools."""
    first_line = action.splitlines()[0] if action else ""
    try:
        words = shlex.split(first_line)
    except ValueError:
        words = first_line.split()
    head = words[0] if words else ""
    current = open_file if isinstance(open_file, str) and open_file not in ("", "n/a") else None
    if head in _READ:
        path = words[1] if head == "open" and len(words) > 1 else current
        return "read_file", {"path": path} if path else {}
    if head == "create" and len(words) > 1:
        return "write_file", {"path": words[1]}
    if head in _EDIT:
        return "edit_file", {"path": current} if current else {}
    if head == "find_file" and len(words) > 1:
        return "glob", {"pattern": words[1], **({"path": words[2]} if len(words) > 2 else {})}
    if head in ("search_dir", "search_file") and len(words) > 1:
        return "grep", {"pattern": words[1], **({"path": words[2]} if len(words) > 2 else {})}
    if head in ("submit", "exit_forfeit", "exit_cost"):
        return head, {}
    return "bash", {"command": action}


def _state(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    try:
        state = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}
