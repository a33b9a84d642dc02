"""The display transcript of a turn: the bounded, redacted items ``show`` and the REPL draw a stored
turn from (prose, reasoning, tool lines, permissions, diffs), never sent to a model and never holding
a tool's arguments or full output."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory.retention import DEFAULT_RULES, MCP_TOOL, ToolRule, cut_utf8, redact, redact_prefix, retain
from turnmemory.segments import AssistantSegment, PermissionSegment, ReasoningSegment, Segment, ToolSegment

__all__ = ["DIFF_PREVIEW_BYTES", "PREVIEW_BYTES", "preview", "transcript_items"]

PREVIEW_BYTES = 600
"""The most of a tool output, error or reasoning text a transcript item keeps."""
DIFF_PREVIEW_BYTES = 8000
"""The most of a diff a transcript item keeps."""
_MCP_PAYLOADS = frozenset({MCP_TOOL, "list_mcp_tools"})
"""The tools whose outputs are MCP payloads (a server's results, its tool listings): never previewed."""


def preview(value: Any, limit: int = PREVIEW_BYTES) -> str:
    """A short, redacted text preview of a tool output (its main text field, or its JSON)."""
    if isinstance(value, Mapping):
        for key in ("content", "stdout", "matches", "result", "files"):
            if value.get(key):
                value = value[key]
                break
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_prefix(text, limit * 4)
    cut = cut_utf8(text, limit)
    return cut if cut == text else cut + "..."


def transcript_items(
    segments: Sequence[Segment],
    *,
    durations: Mapping[str, float] | None = None,
    workspace: str | None = None,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
) -> list[dict[str, Any]]:
    """The visible items of a turn for display: prose, reasoning, tools, permissions and diffs.

    Tool items carry the bounded target the memory would keep, status, exit code, changed file,
    duration and a bounded preview of the output or error, never the arguments or full outputs. An
    MCP call keeps its server, tool, status and duration only: no preview of what the server sent.
    """
    items: list[dict[str, Any]] = []
    for segment in segments:
        if isinstance(segment, AssistantSegment):
            items.append({"kind": "text", "text": segment.text})
        elif isinstance(segment, ReasoningSegment):
            items.append({"kind": "reasoning", "text": preview(segment.text, 2000)})
        elif isinstance(segment, ToolSegment):
            item: dict[str, Any] = {"kind": "tool", "call_id": segment.call_id, "name": redact(segment.name)}
            if segment.ended:
                activity = retain(
                    0,
                    segment.name,
                    segment.arguments,
                    output=segment.output,
                    error=segment.error,
                    workspace=workspace,
                    rules=rules,
                )
                fields = activity.to_dict()
                for key in ("target", "server", "status", "file_changed", "exit_code"):
                    if key in fields:
                        item[key] = fields[key]
                if activity.server is not None:
                    item["tool"] = activity.tool
                if segment.name not in _MCP_PAYLOADS:
                    item["preview"] = preview(segment.error if segment.error is not None else segment.output)
            else:
                item["status"] = "unfinished"
            if durations and segment.call_id in durations:
                item["duration"] = round(durations[segment.call_id], 3)
            items.append(item)
        elif isinstance(segment, PermissionSegment):
            items.append(
                {
                    "kind": "permission",
                    "call_id": segment.call_id,
                    "summary": preview(segment.summary, 300),
                    "decision": segment.decision,
                }
            )
        else:
            items.append(
                {
                    "kind": "diff",
                    "call_id": segment.call_id,
                    "diff": preview(segment.diff, DIFF_PREVIEW_BYTES),
                }
            )
    return items
