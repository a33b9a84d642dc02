"""OpenHands event streams (a JSON list of events, as the trajectory replay files store them).

Events are ``{id, source, action | observation, args, content, extras, cause, tool_call_metadata}``.
A user turn starts at a ``user`` ``message`` action; an agent ``message`` is prose; any other agent
action (``run``, ``read``, ``edit``, ``browse``, ``finish``, ...) is one tool call (its
``args.thought`` is the prose before it), answered by the observation whose ``cause`` is the action's
id: ``run`` observations carry ``extras.metadata.exit_code``, ``edit`` observations the edited path.
State changes and empty observations are skipped and counted. Each agent action is one model request.
The workspace is OpenHands' sandbox default, ``/workspace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers._read import as_text
from turnmemory.transcripts._build import SessionBuilder, document_builder, mapping
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult

__all__ = ["FORMAT", "load_openhands", "openhands_tool"]

FORMAT = "openhands"
WORKSPACE = "/workspace"

_NOT_AGENT_CALLS = ("change_agent_state", "system", "recall")
_UNANSWERED = ("finish", "think")  # actions no observation answers


def load_openhands(path: Path, document: Any = None) -> ImportedSession:
    """Import one OpenHands event list (``document`` when it is already parsed)."""
    builder, events = document_builder(path, FORMAT, document)
    if not isinstance(events, list):
        return builder.nothing("expected a list of events")
    builder.workspace = WORKSPACE
    calls: dict[str, ToolCall] = {}
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            builder.problem(f"event {index}", "expected an object; skipped")
            continue
        if "observation" in event:
            _observation(builder, event, calls)
        elif "action" in event:
            _action(builder, event, calls)
        else:
            builder.skip("unknown")
        builder.time(event.get("timestamp"))
    return builder.build()


def _action(builder: SessionBuilder, event: Mapping[str, Any], calls: dict[str, ToolCall]) -> None:
    action, source = str(event.get("action")), event.get("source")
    args = mapping(event.get("args"))
    if action == "message" and source == "user":
        builder.user(str(args.get("content") or event.get("message") or ""))
        return
    if source != "agent" or action in _NOT_AGENT_CALLS:
        builder.skip(f"action:{action}")
        return
    if action == "message":
        builder.prose(str(args.get("content") or event.get("message") or ""))
        builder.end_iteration()
        return
    thought = args.get("thought") or args.get("final_thought")
    if isinstance(thought, str) and thought:
        builder.prose(thought)
    metadata = mapping(event.get("tool_call_metadata"))
    name, mapped = openhands_tool(action, args)
    source_input = {key: value for key, value in args.items() if key != "thought"}
    call = ToolCall(
        str(event.get("id")),
        name,
        mapped,
        str(metadata.get("function_name") or action),
        compact_json(source_input),
    )
    calls[call.call_id] = call
    builder.add(call)
    if action in _UNANSWERED:
        builder.add(ToolResult(call.call_id, ""))
    builder.end_iteration()


def _observation(builder: SessionBuilder, event: Mapping[str, Any], calls: dict[str, ToolCall]) -> None:
    call = calls.get(str(event.get("cause")))
    kind = event.get("observation")
    if call is None or kind in ("null", "agent_state_changed"):
        builder.skip(f"observation:{kind}")
        return
    text = as_text(event.get("content"))
    extras = mapping(event.get("extras"))
    if kind == "error":
        builder.add(ToolResult(call.call_id, text, is_error=True))
    elif kind == "run" and isinstance(mapping(extras.get("metadata")).get("exit_code"), int):
        builder.add(ToolResult(call.call_id, text, outcome={"exit_code": extras["metadata"]["exit_code"]}))
    elif kind == "edit" and isinstance(extras.get("path"), str):
        builder.add(ToolResult(call.call_id, text, outcome={"file_changed": extras["path"]}))
    else:
        builder.add(ToolResult(call.call_id, text))


def openhands_tool(action: str, args: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An OpenHands action as one of this project's tools."""
    path = args.get("path")
    if action == "run" and isinstance(args.get("command"), str):
        return "bash", {"command": args["command"]}
    if action in ("read", "edit") and isinstance(path, str):
        return f"{action}_file", {"path": path}
    if action == "browse" and isinstance(args.get("url"), str):
        return "web_fetch", {"url": args["url"]}
    return action, {}
