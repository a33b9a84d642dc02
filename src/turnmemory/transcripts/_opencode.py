"""OpenCode session exports (``opencode export <sessionID>``).

One JSON object ``{"info", "messages": [{"info", "parts"}]}``. A user turn is a ``user`` message
with a non-synthetic text part; each ``assistant`` message is one model call whose parts are
``text``, ``reasoning``, ``tool`` (call and result in one part, with ``state.status``) and
``step-start``/``step-finish``. Tool parts still pending or running replay as errors with OpenCode's
own ``[Tool execution was interrupted]`` text. Times (milliseconds since the epoch) are a message's
``info.time.created`` (for an assistant message, when its request went out) and ``completed``, and a
part's ``time.end`` (a tool part's ``state.time.end``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnmemory._text import compact_json
from turnmemory.transcripts._build import SessionBuilder, document_builder, mapping
from turnmemory.transcripts._model import ImportedSession, ToolCall, ToolResult
from turnmemory.transcripts._tools import opencode_tool

__all__ = ["FORMAT", "load_opencode"]

FORMAT = "opencode"

_INTERRUPTED = "[Tool execution was interrupted]"
_MILLISECONDS = 0.001


def load_opencode(path: Path, document: Any = None) -> ImportedSession:
    """Import one OpenCode export (``document`` when it is already parsed)."""
    builder, data = document_builder(path, FORMAT, document)
    info = data.get("info") if isinstance(data, Mapping) else None
    messages = data.get("messages") if isinstance(data, Mapping) else None
    if not isinstance(messages, list):
        return builder.nothing("no messages list")
    if isinstance(info, Mapping) and isinstance(info.get("directory"), str):
        builder.workspace = info["directory"]
    for index, message in enumerate(messages):
        meta = message.get("info") if isinstance(message, Mapping) else None
        parts = message.get("parts") if isinstance(message, Mapping) else None
        if not isinstance(meta, Mapping) or not isinstance(parts, list):
            builder.problem(f"message {index}", "expected an object with info and parts; skipped")
            continue
        times = mapping(meta.get("time"))
        if meta.get("role") == "user":
            texts = [
                part["text"]
                for part in parts
                if isinstance(part, Mapping)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
                and not part.get("synthetic")
            ]
            if texts:
                builder.user("\n".join(texts))
            else:
                builder.skip("synthetic_user")
            builder.time(times.get("created"), scale=_MILLISECONDS)
        elif meta.get("role") == "assistant":
            builder.time(times.get("created"), scale=_MILLISECONDS)
            for part in parts:
                part = part if isinstance(part, Mapping) else {}
                _part(builder, part)
                ended = mapping(part.get("time") or mapping(part.get("state")).get("time")).get("end")
                builder.time(ended, scale=_MILLISECONDS)
            builder.end_iteration()
            builder.time(times.get("completed"), scale=_MILLISECONDS)
        else:
            builder.skip(f"role:{meta.get('role')}")
    return builder.build()


def _part(builder: SessionBuilder, part: Mapping[str, Any]) -> None:
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        builder.prose(part["text"])
    elif kind == "reasoning" and isinstance(part.get("text"), str):
        builder.reasoning(part["text"])
    elif kind == "tool" and isinstance(part.get("tool"), str):
        state = mapping(part.get("state"))
        arguments = mapping(state.get("input"))
        name, mapped = opencode_tool(part["tool"], arguments)
        call = ToolCall(
            str(part.get("callID") or part.get("id")), name, mapped, part["tool"], compact_json(arguments)
        )
        builder.add(call)
        builder.add(_result(call, state))
    elif kind == "step-finish":
        builder.end_iteration()
    elif kind != "step-start":
        builder.skip(f"part:{kind}")


def _result(call: ToolCall, state: Mapping[str, Any]) -> ToolResult:
    status = state.get("status")
    if status == "error":
        return ToolResult(call.call_id, str(state.get("error") or ""), is_error=True)
    if status != "completed":
        return ToolResult(call.call_id, _INTERRUPTED, is_error=True)
    output = state.get("output")
    text = output if isinstance(output, str) else ""
    metadata = mapping(state.get("metadata"))
    if call.name == "bash" and isinstance(metadata.get("exit"), int):
        return ToolResult(call.call_id, text, outcome={"exit_code": metadata["exit"]})
    if call.name in ("edit_file", "write_file") and isinstance(call.arguments.get("path"), str):
        return ToolResult(call.call_id, text, outcome={"file_changed": call.arguments["path"]})
    return ToolResult(call.call_id, text)
