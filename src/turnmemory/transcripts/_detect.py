"""Format detection and discovery: which importer reads a file, and which files a path holds."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from turnmemory.transcripts._aider import is_aider, load_aider
from turnmemory.transcripts._build import open_regular, read_json, read_lines
from turnmemory.transcripts._claude_code import load_claude_code
from turnmemory.transcripts._codex import load_codex
from turnmemory.transcripts._mini_swe_agent import load_mini_swe_agent
from turnmemory.transcripts._model import ImportedSession
from turnmemory.transcripts._opencode import load_opencode
from turnmemory.transcripts._openhands import load_openhands
from turnmemory.transcripts._swe_agent import load_swe_agent

__all__ = ["FORMATS", "detect_format", "discover", "load_session"]

FORMATS: tuple[str, ...] = (
    "claude-code",
    "codex",
    "opencode",
    "swe-agent",
    "mini-swe-agent",
    "openhands",
    "aider",
)
"""The formats the importers read."""

_SUFFIXES = (".jsonl", ".json", ".traj", ".md")
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "queue-operation",
    "file-history-snapshot",
    "attachment",
}


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The candidate session files under ``paths``: files as given, directories recursively.

    Directories contribute their regular ``*.jsonl``, ``*.json``, ``*.traj`` and ``*.md`` files, sorted
    (symlinks to regular files included; pipes, devices and sockets never); a path given directly is
    yielded as it is, whatever it is; one that does not exist raises ``FileNotFoundError``.
    """
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES))
        elif path.exists():
            yield path
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")


def detect_format(path: Path) -> str | None:
    """The format of the session file at ``path``, or ``None`` when it is not one we read."""
    name = path.name
    if name.endswith(".traj.json"):
        return "mini-swe-agent"
    if name.endswith(".traj"):
        return "swe-agent"
    if name.endswith(".jsonl"):
        return _jsonl_format(path)
    if name.endswith(".md"):
        return "aider" if is_aider(path) else None
    if name.endswith(".json"):
        try:
            return _document_format(read_json(path))
        except (OSError, ValueError):
            return None
    return None


def load_session(path: Path, fmt: str | None = None) -> ImportedSession:
    """Import the session at ``path`` in format ``fmt`` (detected when ``None``).

    Raises ``ValueError`` with one readable line when the file is not a session we can read.
    """
    fmt = fmt or detect_format(path)
    if fmt is None:
        raise ValueError(f"{path.name}: not a recognized session format")
    loader = _LOADERS.get(fmt)
    if loader is None:
        raise ValueError(f"{path.name}: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return loader(path)


_LOADERS: dict[str, Callable[[Path], ImportedSession]] = {
    "claude-code": load_claude_code,
    "codex": load_codex,
    "opencode": load_opencode,
    "swe-agent": load_swe_agent,
    "mini-swe-agent": load_mini_swe_agent,
    "openhands": load_openhands,
    "aider": load_aider,
}


def _jsonl_format(path: Path) -> str | None:
    try:
        with open_regular(path) as handle:
            lines = [line for _, line in zip(range(20), read_lines(handle), strict=False)]
    except (OSError, ValueError):
        return None
    for _, line in lines:
        if line is None:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        if "payload" in record and record.get("type") in _CODEX_TYPES:
            return "codex"
        if "sessionId" in record or record.get("type") in _CLAUDE_TYPES:
            return "claude-code"
    return None


def _document_format(data: Any) -> str | None:
    if isinstance(data, dict):
        if isinstance(data.get("messages"), list) and isinstance(data.get("info"), dict):
            if "trajectory_format" in data or "model_stats" in data["info"]:
                return "mini-swe-agent"
            return "opencode"
        if isinstance(data.get("trajectory"), list) or isinstance(data.get("history"), list):
            return "swe-agent"
        return None
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all("role" in item for item in data):
            return "mini-swe-agent"
        if all("source" in item and ("action" in item or "observation" in item) for item in data):
            return "openhands"
    return None
