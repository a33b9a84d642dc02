"""What ``call_mcp_tool`` and ``list_mcp_tools`` return to the model within the turn.

A call's output always names the normalized ``server`` and ``tool`` (all that TurnMemory retains of
an MCP call). Results, and tool listings, larger than the inline limit are written to a spill file
the agent may read, and the model gets a preview and the file's path instead.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from turnmemory.agent.mcp._config import McpError
from turnmemory.retention import bound_text, cut_utf8, redact

__all__ = ["INLINE_LIMIT", "PREVIEW_BYTES", "listing_output", "tool_error", "tool_output"]

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
    output.pop("structured", None)
    return _spilled(
        output, _full_text(output["content"], structured), _spill_path(spill_dir, f"{server}-{tool}")
    )


def listing_output(listing: dict[str, Any], *, spill_dir: Path, limit: int = INLINE_LIMIT) -> dict[str, Any]:
    """The ``list_mcp_tools`` output: ``listing`` itself, or past ``limit`` bytes of JSON its
    ``server`` with a preview of the listing and the spill file that holds all of it."""
    full = json.dumps(listing, ensure_ascii=False, indent=1)
    if len(full.encode("utf-8")) <= limit:
        return listing
    output = {"server": listing["server"]} if "server" in listing else {}
    return _spilled(output, full, _spill_path(spill_dir, f"{listing.get('server', 'all')}-tools"))


def _spilled(output: dict[str, Any], full: str, path: Path) -> dict[str, Any]:
    """``output`` with ``full`` written to ``path`` and a preview of it as its ``content``."""
    data = full.encode("utf-8")
    path.write_bytes(data)
    output["content"] = cut_utf8(full, PREVIEW_BYTES)
    output["truncated"] = True
    output["spill_file"] = str(path)
    output["size_bytes"] = len(data)
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


def _spill_path(spill_dir: Path, name: str) -> Path:
    spill_dir.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE.sub("_", redact(name))[:80]
    return spill_dir / f"mcp-{stem}-{uuid.uuid4().hex[:12]}.txt"
