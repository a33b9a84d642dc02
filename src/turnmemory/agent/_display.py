"""Short labels for tool calls, shared by the headless output, the REPL and ``turnmemory show``.

Labels reuse the retention rules, so what the screen names a call by is the same bounded,
redacted target the TurnMemory keeps: never file contents, never full arguments. Everything here
returns text safe for a terminal (:func:`turnmemory._text.terminal_safe`): a label, a stored line or
an error may come from the model, an MCP server, a tool or a tampered session record (a C1 CSI
included shows escaped).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from turnmemory._text import compact_json, terminal_safe
from turnmemory.agent.store import LoadedSession
from turnmemory.retention import bound_text, redact, retain

__all__ = [
    "DECISIONS",
    "live_order",
    "one_line",
    "permission_line",
    "session_lines",
    "stored_label",
    "timestamp",
    "tool_label",
    "tool_outcome",
]

DECISIONS: Mapping[str, str] = {
    "allow_once": "allowed once",
    "allow_session": "allowed for this session",
    "allow_rule": "allowed by a rule",
    "deny": "denied",
    "refused": "denied without asking (no rule allows it)",
}
"""How a recorded permission decision reads on the screen."""


def tool_label(name: str, arguments: Mapping[str, Any] | None, workspace: str | None) -> str:
    """``read_file notes.txt``, ``bash make test``, ``time.get_current_time`` (MCP)."""
    activity = retain(0, name, arguments, workspace=workspace)
    if activity.server is not None:
        label = f"{activity.server}.{activity.tool}"
    else:
        label = f"{activity.tool} {activity.target}" if activity.target else activity.tool
    return terminal_safe(label, multiline=False)


def tool_outcome(output: Any, error: str | None) -> str:
    """``ok``, ``exit 2`` (a command that failed) or ``error: <first line>``."""
    if error is not None:
        return f"error: {one_line(error)}"
    if isinstance(output, Mapping):
        code = output.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return f"exit {code}"
    return "ok"


def one_line(text: str, limit: int = 160) -> str:
    """``text`` on one line, bounded, redacted and safe for a terminal (controls shown as ``\\x1b``)."""
    return bound_text(terminal_safe(text), limit)


def session_lines(loaded: LoadedSession) -> list[str]:
    """A stored session as text: prompts, prose, one line per tool, diffs, permissions, and each turn's memory."""
    info = loaded.info
    head = f"session {info.id}  {info.workspace}  started {timestamp(info.created_at)}"
    lines = [head + (f"  {info.provider} {info.model}" if info.provider else "")]
    lines.extend(f"! {problem}" for problem in loaded.problems)
    for event in loaded.events:
        data = event.data
        if event.kind == "user_message":
            lines.append("")
            lines.extend("> " + line for line in _lines(data.get("content", "")) or [""])
        elif event.kind == "assistant_turn":
            lines.extend(_turn_lines(data))
        elif event.kind == "pending_drop":
            memory = data.get("message", {}).get("turn_memory", {"tool_activity": []})
            lines.append(
                f"[pending state dropped ({data.get('reason', '')}); its memory: {_compact(memory)}]"
            )
        elif event.kind == "rewind":
            lines.append("")
            lines.append(f"[rewind: the last {data.get('turns')} turns above left the conversation]")
        elif event.kind == "compaction":
            done = "summarized" if data.get("mode") == "summary" else "dropped"
            lines.append("")
            lines.append(
                f"[compaction: {data.get('turns')} earlier turns {done}, ~{data.get('freed')} tokens freed]"
            )
    return [terminal_safe(line) for line in lines]


def _lines(text: object) -> list[str]:
    """``text``'s lines, split only where it breaks lines (a carriage return shows as ``\\r``)."""
    return terminal_safe(str(text)).splitlines()


def live_order(items: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A stored turn's transcript items in the order the live screen showed them: a tool's diffs and
    permission answers before its tool line (they came while it ran, its line when it ended)."""
    attached: dict[str, list[Mapping[str, Any]]] = {}
    for item in items:
        if item.get("kind") in ("diff", "permission"):
            attached.setdefault(str(item.get("call_id")), []).append(item)
    ordered: list[Mapping[str, Any]] = []
    for item in items:
        if item.get("kind") == "tool":
            ordered.extend(attached.pop(str(item.get("call_id")), []))
        if item.get("kind") not in ("diff", "permission"):
            ordered.append(item)
    for leftovers in attached.values():
        ordered.extend(leftovers)
    return ordered


def permission_line(item: Mapping[str, Any]) -> str:
    """A stored permission answer: ``permission edit: /ws/app.py · allowed once``."""
    decision = str(item.get("decision"))
    return terminal_safe(
        redact(f"permission {item.get('summary')} · {DECISIONS.get(decision, decision)}"), multiline=False
    )


def _turn_lines(data: Mapping[str, Any]) -> list[str]:
    items = [item for item in data.get("transcript", []) if isinstance(item, Mapping)]
    lines: list[str] = []
    for item in live_order(items):
        kind = item.get("kind")
        if kind == "text":
            lines.extend(_lines(item.get("text", "")))
        elif kind == "tool":
            lines.append("  " + _tool_line(item))
        elif kind == "permission":
            lines.append("  " + permission_line(item))
        elif kind == "diff":
            lines.extend("  | " + line for line in _lines(redact(str(item.get("diff", "")))))
    status = data.get("status")
    if status != "done":
        lines.append(f"[turn {status}: {one_line(str(data.get('error') or data.get('reason') or ''))}]")
    memory = data.get("message", {}).get("turn_memory")
    if memory:
        lines.append("  memory:")
        lines.extend(f"    {_compact(activity)}" for activity in memory.get("tool_activity", []))
    return lines


def stored_label(item: Mapping[str, Any]) -> str:
    """The label of a stored transcript's tool item, as live: ``read_file notes.txt``, ``time.now``."""
    label = f"{item['server']}.{item.get('tool')}" if item.get("server") else str(item.get("name", "?"))
    if item.get("target"):
        label += f" {item['target']}"
    return terminal_safe(redact(label), multiline=False)  # a record written by an older version, or by hand


def _tool_line(item: Mapping[str, Any]) -> str:
    label = stored_label(item)
    status = str(item.get("status", ""))
    if status == "error":
        status = f"error: {one_line(str(item['preview']))}" if item.get("preview") else "error"
    elif item.get("exit_code"):
        status = f"exit {item['exit_code']}"
    elif status == "success":
        status = "ok"
    took = f" ({item['duration']:.1f}s)" if isinstance(item.get("duration"), int | float) else ""
    return f"{label} -> {status}{took}"


def timestamp(seconds: float) -> str:
    """Local time, to the minute; ``unknown`` for 0 (a stored time that could not be read)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds > 0 else "unknown"


def _compact(value: Any) -> str:
    return redact(compact_json(value))
