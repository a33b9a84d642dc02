"""The sessions store: one SQLite database (WAL, one transaction per event) in the user data directory.

A session is an ordered list of events, keyed by workspace:

- ``session_started``: ``{workspace, provider, model}``
- ``user_message``: ``{content}``, written before the turn runs, so a killed process loses no prompt
- ``assistant_turn``: ``{message, status, error?, reason?, usage?, transcript}``: the turn's
  ``Message`` (flattened prose and TurnMemory), how it ended (``done``, ``incomplete``,
  ``interrupted``, ``error``), and the visible transcript items for display, whose tool outputs are
  bounded, redacted previews
- ``pending_drop``: ``{message, reason}``: the pending state of an incomplete turn that was dropped
  (session, model or provider switch), as a historical ``Message``
- ``compaction``: ``{replaces, mode, turns, freed, content}``: the first ``replaces`` messages of the
  conversation so far became one user message, ``content`` (see :mod:`turnmemory.agent.compaction`)

Resuming rebuilds the conversation from user messages and assistant messages (prose plus memory)
only; transcripts are never sent to a model. Partial turns (incomplete, interrupted) are part of the
conversation; a dropped pending state is not, because the partial turn already records that work.
A malformed row is reported in one line and skipped, its neighbours kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from turnmemory.agent.compaction import Compaction
from turnmemory.memory import Message
from turnmemory.retention import DEFAULT_RULES, ToolRule, cut_utf8, redact, redact_prefix, retain
from turnmemory.segments import AssistantSegment, PermissionSegment, ReasoningSegment, Segment, ToolSegment

__all__ = [
    "DATA_DIR_ENV",
    "LoadedSession",
    "SessionEvent",
    "SessionInfo",
    "SessionStore",
    "SessionSummary",
    "TurnStatus",
    "data_dir",
    "preview",
    "transcript_items",
]

DATA_DIR_ENV = "TURNMEMORY_DATA_DIR"
"""Environment variable that overrides the user data directory."""

TurnStatus = Literal["done", "incomplete", "interrupted", "error"]

PREVIEW_BYTES = 600
"""The most of a tool output, error or reasoning text a transcript item keeps."""
DIFF_PREVIEW_BYTES = 8000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace, updated_at);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    created_at REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""


def data_dir() -> Path:
    """The user data directory: ``$TURNMEMORY_DATA_DIR``, else ``platformdirs.user_data_dir("turnmemory")``."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("turnmemory"))


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's identity: id, workspace, start time, and the provider and model it started with."""

    id: str
    workspace: str
    created_at: float
    provider: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of ``turnmemory sessions``."""

    id: str
    workspace: str
    created_at: float
    updated_at: float
    turns: int
    last_prompt: str | None


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One stored event, decoded."""

    seq: int
    kind: str
    created_at: float
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LoadedSession:
    """A session read back: its events, the retained conversation, and one line per skipped row."""

    info: SessionInfo
    events: tuple[SessionEvent, ...]
    messages: tuple[Message, ...]
    problems: tuple[str, ...]


class SessionStore:
    """Sessions in one SQLite file (created on first use, readable by its owner only)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            self.path.touch(mode=0o600)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)

    @classmethod
    def open_default(cls) -> SessionStore:
        """The store in the user data directory (see :func:`data_dir`)."""
        return cls(data_dir() / "sessions.sqlite3")

    @property
    def spill_root(self) -> Path:
        """The directory holding every agent process's spill directory (see ``turnmemory.agent._spill``)."""
        return self.path.parent / "spill"

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def create(self, workspace: str, *, provider: str, model: str) -> str:
        """Start a session in ``workspace``; its id."""
        session_id = uuid.uuid4().hex
        now = time.time()
        with self._transaction():
            self._db.execute(
                "INSERT INTO sessions (id, workspace, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (session_id, workspace, now, now),
            )
            self._insert(
                session_id, "session_started", {"workspace": workspace, "provider": provider, "model": model}
            )
        return session_id

    def add_user_message(self, session_id: str, content: str) -> None:
        """Persist a prompt (before its turn runs)."""
        self.append(session_id, "user_message", {"content": content})

    def add_assistant_turn(
        self,
        session_id: str,
        message: Message,
        *,
        status: TurnStatus,
        transcript: Sequence[Mapping[str, Any]],
        error: str | None = None,
        reason: str | None = None,
        usage: Mapping[str, int] | None = None,
    ) -> None:
        """Persist a finished, incomplete, interrupted or failed assistant turn."""
        data: dict[str, Any] = {"message": message.to_dict(), "status": status}
        if error:
            data["error"] = redact(error)
        if reason:
            data["reason"] = redact(reason)
        if usage:
            data["usage"] = dict(usage)
        data["transcript"] = list(transcript)
        self.append(session_id, "assistant_turn", data)

    def add_pending_drop(self, session_id: str, message: Message, *, reason: str) -> None:
        """Persist dropped pending state as the historical ``Message`` it converts to."""
        self.append(session_id, "pending_drop", {"message": message.to_dict(), "reason": reason})

    def add_compaction(self, session_id: str, compaction: Mapping[str, Any]) -> None:
        """Persist a compaction of the conversation (``Compaction.to_dict()``)."""
        self.append(session_id, "compaction", compaction)

    def append(self, session_id: str, kind: str, data: Mapping[str, Any]) -> None:
        """Append one event in its own transaction."""
        with self._transaction():
            if self._insert(session_id, kind, data) is None:
                raise KeyError(f"no session {session_id!r}")

    # -- reading -----------------------------------------------------------------------------------

    def load(self, session_id: str) -> LoadedSession:
        """Read a session back; ``KeyError`` when there is no such session."""
        row = self._db.execute(
            "SELECT id, workspace, created_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no session {session_id!r}")
        info = SessionInfo(id=row[0], workspace=row[1], created_at=row[2])
        events: list[SessionEvent] = []
        messages: list[Message] = []
        problems: list[str] = []
        rows = self._db.execute(
            "SELECT seq, kind, created_at, data FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        for seq, kind, created_at, raw in rows:
            try:
                data = json.loads(raw)
                if not isinstance(data, dict):
                    raise ValueError("expected a JSON object")
                message = _conversation_message(kind, data)
                if kind == "compaction":
                    messages[:] = Compaction.from_dict(data).apply(messages)
            except ValueError as error:
                problems.append(
                    f"session {session_id[:8]} event {seq} ({kind}) skipped: {_one_line(str(error))}"
                )
                continue
            if kind == "session_started":
                info = SessionInfo(
                    id=info.id,
                    workspace=info.workspace,
                    created_at=info.created_at,
                    provider=str(data.get("provider", "")),
                    model=str(data.get("model", "")),
                )
            events.append(SessionEvent(seq=seq, kind=kind, created_at=created_at, data=data))
            if message is not None:
                messages.append(message)
        return LoadedSession(
            info=info, events=tuple(events), messages=tuple(messages), problems=tuple(problems)
        )

    def sessions(self, workspace: str | None = None, *, limit: int = 50) -> list[SessionSummary]:
        """Sessions, most recently active first; only ``workspace``'s when given."""
        where, params = ("WHERE s.workspace = ?", [workspace]) if workspace is not None else ("", [])
        rows = self._db.execute(
            f"""
            SELECT s.id, s.workspace, s.created_at, s.updated_at,
                   (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id AND e.kind = 'assistant_turn'),
                   (SELECT e.data FROM events e WHERE e.session_id = s.id AND e.kind = 'user_message'
                    ORDER BY e.seq DESC LIMIT 1)
            FROM sessions s {where} ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?
            """,
            [*params, limit],
        ).fetchall()
        return [
            SessionSummary(
                id=r[0],
                workspace=r[1],
                created_at=r[2],
                updated_at=r[3],
                turns=r[4],
                last_prompt=_prompt(r[5]),
            )
            for r in rows
        ]

    def latest(self, workspace: str) -> str | None:
        """The most recently active session of ``workspace``, or ``None``."""
        found = self.sessions(workspace, limit=1)
        return found[0].id if found else None

    def resolve(self, prefix: str) -> str:
        """The session whose id starts with ``prefix``; ``KeyError`` (one line) when none or several do."""
        prefix = prefix.strip().lower()
        if not prefix:
            raise KeyError("empty session id")
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        ids = [
            row[0]
            for row in self._db.execute(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 3", (escaped + "%",)
            )
        ]
        if not ids:
            raise KeyError(f"no session {prefix!r}")
        if len(ids) > 1 and prefix not in ids:
            raise KeyError(f"session id {prefix!r} is ambiguous: give more characters")
        return prefix if prefix in ids else ids[0]

    # -- internals ---------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _insert(self, session_id: str, kind: str, data: Mapping[str, Any]) -> int | None:
        now = time.time()
        if (
            self._db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id)).rowcount
            == 0
        ):
            return None
        (seq,) = self._db.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
        ).fetchone()
        self._db.execute(
            "INSERT INTO events (session_id, seq, kind, created_at, data) VALUES (?, ?, ?, ?, ?)",
            (session_id, seq, kind, now, json.dumps(data, ensure_ascii=False, separators=(",", ":"))),
        )
        return int(seq)


def _conversation_message(kind: str, data: Mapping[str, Any]) -> Message | None:
    """The conversation message an event contributes, if any; ``ValueError`` when it is malformed."""
    if kind == "user_message":
        content = data.get("content")
        if not isinstance(content, str):
            raise ValueError("user_message.content: expected a string")
        return Message(role="user", content=content)
    if kind == "assistant_turn":
        message = Message.from_dict(data.get("message"))
        if message.role != "assistant":
            raise ValueError("assistant_turn.message.role: expected assistant")
        return message if message.content or message.turn_memory is not None else None
    if kind == "pending_drop":
        Message.from_dict(data.get("message"))
    return None


def _prompt(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        content = json.loads(raw).get("content")
    except (ValueError, AttributeError):
        return None
    return content if isinstance(content, str) else None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


# -- transcript items -----------------------------------------------------------------------------


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
    duration and a bounded preview of the output or error, never the arguments or full outputs.
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
