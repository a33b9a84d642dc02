"""Short labels for tool calls, shared by the headless output, the REPL and ``turnmemory show``.

Labels reuse the retention rules, so what the screen names a call by is the same bounded,
redacted target the TurnMemory keeps: never file contents, never full arguments. Labels and
one-line texts are terminal-safe: a model or an MCP server naming a tool with a control character
(a C1 CSI included) shows it escaped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from turnmemory._text import terminal_safe
from turnmemory.agent.store import LoadedSession
from turnmemory.retention import bound_text, redact, retain

__all__ = ["one_line", "session_lines", "stored_label", "timestamp", "tool_label", "tool_outcome"]


def tool_label(name: str, arguments: Mapping[str, Any] | None, workspace: str | None) -> str:
    """``read_file notes.txt``, ``bash make test``, ``time.get_current_time`` (MCP)."""
    activity = retain(0, name, arguments, workspace=workspace)
    if activity.server is not None:
        return terminal_safe(f"{activity.server}.{activity.tool}")
    return terminal_safe(f"{activity.tool} {activity.target}" if activity.target else activity.tool)


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
    """``text`` on one line, bounded, redacted and terminal-safe."""
    return terminal_safe(bound_text(text, limit))


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
            lines.extend("> " + line for line in str(data.get("content", "")).splitlines() or [""])
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
    return lines


def _turn_lines(data: Mapping[str, Any]) -> list[str]:
    items = [item for item in data.get("transcript", []) if isinstance(item, Mapping)]
    attached: dict[str, list[Mapping[str, Any]]] = {}
    for item in items:
        if item.get("kind") in ("diff", "permission"):
            attached.setdefault(str(item.get("call_id")), []).append(item)
    lines: list[str] = []
    for item in items:
        kind = item.get("kind")
        if kind == "text":
            lines.extend(str(item.get("text", "")).splitlines())
        elif kind == "tool":
            for extra in attached.pop(str(item.get("call_id")), []):
                lines.extend(_attached_lines(extra))
            lines.append("  " + _tool_line(item))
    for leftovers in attached.values():
        for extra in leftovers:
            lines.extend(_attached_lines(extra))
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
    return terminal_safe(redact(label))  # a record written by an older version, or edited by hand


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


def _attached_lines(item: Mapping[str, Any]) -> list[str]:
    if item.get("kind") == "permission":
        return [redact(f"  permission {item.get('decision')}: {item.get('summary')}")]
    return ["  | " + line for line in redact(str(item.get("diff", ""))).splitlines()]


def timestamp(seconds: float) -> str:
    """Local time, to the minute; ``unknown`` for 0 (a stored time that could not be read)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds > 0 else "unknown"


def _compact(value: Any) -> str:
    return redact(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
