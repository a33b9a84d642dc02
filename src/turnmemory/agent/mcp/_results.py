"""What a ``call_mcp_tool`` call returns to the model within the turn.

The output always names the normalized ``server`` and ``tool`` (all that TurnMemory retains of an
MCP call). Results larger than the inline limit are written to a spill file the agent may read, and
the model gets a preview and the file's path instead.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from turnmemory.agent.mcp._config import McpError
from turnmemory.retention import bound_text, cut_utf8, redact

__all__ = ["INLINE_LIMIT", "PREVIEW_BYTES", "tool_error", "tool_output"]

INLINE_LIMIT = 32 * 1024
"""The largest result (UTF-8 bytes of text plus structured JSON) returned inline."""

PREVIEW_BYTES = 4 * 1024
"""How much of a spilled result the model sees inline."""

_ERROR_BYTES = 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def tool_output(
    server: str, tool: str, text: str, structured: Any, *, spill_dir: Path, limit: int = INLINE_LIMIT
) -> dict[str, Any]:
    """The output dict of a successful call: ``server``, ``tool``, ``content``, and as needed
    ``structured`` (the server's structured content), ``truncated``, ``spill_file`` and ``size_bytes``.

    Nothing is sent twice: text that is the structured content as JSON is dropped, and so is
    structured content that only wraps the text (``{"result": text}``, as SDK servers return it).
    """
    output: dict[str, Any] = {"server": server, "tool": tool, "content": text}
    if structured == {"result": text}:
        structured = None  # the SDK's wrapping of a plain text result
    if structured is not None:
        output["structured"] = structured
        if _repeats(text, structured):
            output["content"] = ""
    structured_json = json.dumps(structured, ensure_ascii=False) if structured is not None else ""
    size = len(output["content"].encode("utf-8")) + len(structured_json.encode("utf-8"))
    if size <= limit:
        return output
    full = _full_text(output["content"], structured)
    path = _spill_path(spill_dir, server, tool)
    path.write_bytes(full.encode("utf-8"))
    preview = cut_utf8(full, PREVIEW_BYTES)
    output.pop("structured", None)
    output["content"] = preview
    output["truncated"] = True
    output["spill_file"] = str(path)
    output["size_bytes"] = len(full.encode("utf-8"))
    return output


def tool_error(server: str, tool: str, text: str) -> McpError:
    """The error of a call whose result the server flagged ``isError``, with its text bounded."""
    message = bound_text(text, _ERROR_BYTES) or "no error text"
    return McpError(f"MCP tool {server}.{tool} returned an error: {message}")


def _full_text(text: str, structured: Any) -> str:
    if structured is None:
        return text
    rendered = json.dumps(structured, ensure_ascii=False, indent=2)
    return f"{text}\n\nstructured content:\n{rendered}" if text else rendered


def _repeats(text: str, structured: Any) -> bool:
    try:
        return bool(text.strip()) and json.loads(text) == structured
    except ValueError:
        return False


def _spill_path(spill_dir: Path, server: str, tool: str) -> Path:
    spill_dir.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE.sub("_", redact(f"{server}-{tool}"))[:80]
    return spill_dir / f"mcp-{stem}-{uuid.uuid4().hex[:12]}.txt"
