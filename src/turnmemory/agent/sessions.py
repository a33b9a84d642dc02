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

Damage is reported, never a traceback: a malformed row (garbage or deeply nested JSON, wrong types, a
text ``seq``) is reported in one line and skipped, its neighbours kept, and the session stays
writable; a database file SQLite cannot read at all is moved aside (the notice says where) and a new
one started; damage found later is a :class:`SessionStoreError` whose one line says how to recover.

One session has one writer at a time: a store claims a session (an exclusive ``flock`` on a lock
file per session, released on close and by the kernel when the process dies, even by kill -9)
before writing to it, and another process's claim is a :class:`SessionBusy` error.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from turnmemory.agent.compaction import Compaction
from turnmemory.llm import Usage
from turnmemory.memory import Message
from turnmemory.retention import DEFAULT_RULES, ToolRule, cut_utf8, redact, redact_prefix, retain
from turnmemory.segments import AssistantSegment, PermissionSegment, ReasoningSegment, Segment, ToolSegment

__all__ = [
    "DATA_DIR_ENV",
    "LoadedSession",
    "SessionBusy",
    "SessionEvent",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
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
MAX_DEPTH = 32
"""The deepest nesting of a stored event's JSON that loading accepts (events are a few levels deep)."""

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

    @property
    def model(self) -> tuple[str, str] | None:
        """The provider and model the session last used: its start's, or its latest ``/model``'s."""
        found = None
        for event in self.events:
            if event.kind in ("session_started", "model_switch"):
                provider, model = event.data.get("provider"), event.data.get("model")
                if isinstance(provider, str) and provider and isinstance(model, str) and model:
                    found = (provider, model)
        return found

    @property
    def usage(self) -> Usage:
        """The usage its stored turns reported, summed (counts that are not non-negative integers count 0)."""
        total = Usage()
        for event in self.events:
            stored = event.data.get("usage") if event.kind == "assistant_turn" else None
            if isinstance(stored, Mapping):
                counts = {
                    name: value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
                    for name in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")
                    for value in [stored.get(name)]
                }
                total = total + Usage(**counts)
        return total


class SessionStoreError(Exception):
    """The sessions store cannot be used: one line saying why and how to recover."""


class SessionBusy(SessionStoreError):
    """Another process is writing to the session."""


class SessionStore:
    """Sessions in one SQLite file (created on first use, readable by its owner only).

    ``notices`` holds one line per problem met while opening (a damaged file moved aside).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.notices: list[str] = []
        self._claimed: set[str] = set()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                self.path.touch(mode=0o600)
        except OSError as error:
            raise SessionStoreError(f"cannot create the session database {self.path}: {error}") from None
        try:
            self._db = self._open()
        except (sqlite3.Error, UnicodeDecodeError) as error:
            why = _one_line(str(error))
            if not _damaged(error):
                raise SessionStoreError(f"cannot open the session database {self.path}: {why}") from None
            aside = self._move_aside()
            self.notices.append(
                f"the session database {self.path} was unreadable ({why}); it was moved to {aside} "
                "and a new one started"
            )
            try:
                self._db = self._open()
            except (sqlite3.Error, UnicodeDecodeError) as again:
                raise SessionStoreError(
                    f"cannot open the session database {self.path}: {_one_line(str(again))}"
                ) from None

    def _open(self) -> sqlite3.Connection:
        truncated = _truncated(self.path)
        if truncated is not None:
            raise sqlite3.DatabaseError(truncated)
        db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0, check_same_thread=False)
        db.text_factory = _decoded
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=10000")
            db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            if source.exists():
                source.replace(f"{aside}{suffix}")
        self.path.touch(mode=0o600)
        return aside

    @classmethod
    def open_default(cls) -> SessionStore:
        """The store in the user data directory (see :func:`data_dir`)."""
        return cls(data_dir() / "sessions.sqlite3")

    @property
    def spill_root(self) -> Path:
        """The directory holding every agent process's spill directory (see ``turnmemory.agent._spill``)."""
        return self.path.parent / "spill"

    def close(self) -> None:
        """Close the database connection and give up every claimed session."""
        for session_id in list(self._claimed):
            self.release(session_id)
        self._db.close()

    # -- one writer per session --------------------------------------------------------------------

    def claim(self, session_id: str) -> None:
        """Become the session's writer; :class:`SessionBusy` when another process is.

        Claims are per process: stores of one process share them (a test, or the REPL resuming).
        """
        if session_id in self._claimed:
            return
        _LOCKS.acquire(self.path.parent / "locks" / f"{_safe_name(session_id)}.lock", session_id)
        self._claimed.add(session_id)

    def release(self, session_id: str) -> None:
        """Stop being the session's writer (switching to another session)."""
        if session_id in self._claimed:
            self._claimed.discard(session_id)
            _LOCKS.release(self.path.parent / "locks" / f"{_safe_name(session_id)}.lock")

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def create(self, workspace: str, *, provider: str, model: str) -> str:
        """Start a session in ``workspace``; its id."""
        session_id = uuid.uuid4().hex
        now = time.time()
        self.claim(session_id)
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
        """Append one event in its own transaction (claiming the session first)."""
        self.claim(session_id)
        with self._transaction():
            if self._insert(session_id, kind, data) is None:
                raise KeyError(f"no session {session_id!r}")

    # -- reading -----------------------------------------------------------------------------------

    def load(self, session_id: str) -> LoadedSession:
        """Read a session back; ``KeyError`` when there is no such session.

        Unreadable rows are skipped, one line each in ``problems``."""
        with self._guarded():
            row = self._db.execute(
                "SELECT id, workspace, created_at FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no session {session_id!r}")
            info = SessionInfo(id=str(row[0]), workspace=_text(row[1]), created_at=_number(row[2]))
            rows = self._db.execute(
                "SELECT seq, kind, created_at, data FROM events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        events: list[SessionEvent] = []
        messages: list[Message] = []
        problems: list[str] = []
        for seq, kind, created_at, raw in rows:
            try:
                data = _event_data(seq, kind, raw)
                message = _conversation_message(kind, data)
                if kind == "compaction":
                    messages[:] = Compaction.from_dict(data).apply(messages)
            except ValueError as error:
                problems.append(
                    f"session {session_id[:8]} event {_label(seq)} ({_label(kind)}) skipped: {_one_line(str(error))}"
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
            events.append(SessionEvent(seq=seq, kind=kind, created_at=_number(created_at), data=data))
            if message is not None:
                messages.append(message)
        return LoadedSession(
            info=info, events=tuple(events), messages=tuple(messages), problems=tuple(problems)
        )

    def sessions(
        self, workspace: str | None = None, *, limit: int = 50, with_turns: bool = False
    ) -> list[SessionSummary]:
        """Sessions, most recently active first; only ``workspace``'s when given, and only those with
        at least one assistant turn that did not fail outright (status other than ``error``) when
        ``with_turns``."""
        conditions, params = (["s.workspace = ?"], [workspace]) if workspace is not None else ([], [])
        if with_turns:
            conditions.append(
                "EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.kind = 'assistant_turn'"
                " AND json_valid(e.data) AND json_extract(e.data, '$.status') IS NOT 'error')"
            )
        where = "WHERE " + " AND ".join(conditions) if conditions else ""
        with self._guarded():
            rows = self._select_sessions(where, params, limit)
        return [
            SessionSummary(
                id=str(r[0]),
                workspace=_text(r[1]),
                created_at=_number(r[2]),
                updated_at=_number(r[3]),
                turns=int(r[4]),
                last_prompt=_prompt(r[5]),
            )
            for r in rows
        ]

    def _select_sessions(self, where: str, params: list[Any], limit: int) -> list[Any]:
        return self._db.execute(
            f"""
            SELECT s.id, s.workspace, s.created_at, s.updated_at,
                   (SELECT COUNT(*) FROM events e WHERE e.session_id = s.id AND e.kind = 'assistant_turn'),
                   (SELECT e.data FROM events e WHERE e.session_id = s.id AND e.kind = 'user_message'
                    AND typeof(e.seq) = 'integer' ORDER BY e.seq DESC LIMIT 1)
            FROM sessions s {where} ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?
            """,
            [*params, limit],
        ).fetchall()

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
        with self._guarded():
            ids = [
                row[0]
                for row in self._db.execute(
                    "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' AND typeof(id) = 'text' LIMIT 3",
                    (escaped + "%",),
                )
            ]
        if not ids:
            raise KeyError(f"no session {prefix!r}")
        if len(ids) > 1 and prefix not in ids:
            raise KeyError(f"session id {prefix!r} is ambiguous: give more characters")
        return prefix if prefix in ids else ids[0]

    # -- internals ---------------------------------------------------------------------------------

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """SQLite's errors as one :class:`SessionStoreError` line that says how to recover."""
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError) as error:
            if _damaged(error):
                raise SessionStoreError(
                    f"the session database {self.path} is damaged ({_one_line(str(error))}): move it aside "
                    f"(mv {self.path} {self.path}.damaged) and a new one is started"
                ) from None
            raise SessionStoreError(f"session database {self.path}: {_one_line(str(error))}") from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._guarded():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._db.in_transaction:
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
        (seq,) = self._db.execute(  # a damaged row's non-integer seq must not block the session
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ? AND typeof(seq) = 'integer'",
            (session_id,),
        ).fetchone()
        self._db.execute(
            "INSERT INTO events (session_id, seq, kind, created_at, data) VALUES (?, ?, ?, ?, ?)",
            (session_id, seq, kind, now, json.dumps(data, ensure_ascii=False, separators=(",", ":"))),
        )
        return int(seq)


def _truncated(path: Path) -> str | None:
    """Why the database file is shorter than its header says, or ``None`` (SQLite would read the
    missing pages as empty tables, and write on top of them). Not judged while another connection
    may be checkpointing (a write-ahead log exists): the file grows under it then."""
    if Path(f"{path}-wal").exists():
        return None
    with open(path, "rb") as file:
        header = file.read(100)
        size = file.seek(0, os.SEEK_END)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
        return None  # empty (new) or not a database at all: SQLite says which
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and size < page_size * pages:
        return f"file is truncated: {size} of {page_size * pages} bytes"
    return None


def _damaged(error: sqlite3.Error | UnicodeDecodeError) -> bool:
    """Whether SQLite found the file itself damaged (not locked, missing or unwritable); a message
    Python cannot decode quotes damaged bytes of the file."""
    text = str(error)
    return type(error) in (sqlite3.DatabaseError, UnicodeDecodeError) or any(
        sign in text for sign in ("malformed", "not a database", "unsupported file format", "no such")
    )


def _event_data(seq: Any, kind: Any, raw: Any) -> dict[str, Any]:
    """A row's decoded data; ``ValueError`` when any of its fields is unreadable."""
    if not isinstance(seq, int):
        raise ValueError(f"seq {_one_line(repr(seq))} is not an integer")
    if not isinstance(kind, str):
        raise ValueError("kind is not text")
    if not isinstance(raw, str):
        raise ValueError("data is not text")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ValueError(f"data is nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    if _depth(data) > MAX_DEPTH:
        raise ValueError(f"data is nested deeper than {MAX_DEPTH} levels")
    return data


def _depth(value: Any) -> int:
    deepest, level = 0, [value]
    while level:
        deepest += 1
        if deepest > MAX_DEPTH:
            return deepest
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return deepest


def _decoded(raw: bytes) -> str | bytes:
    """A text column's value; bytes that are not UTF-8 stay bytes, for the row's check to reject."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _label(value: Any) -> str:
    return _one_line(str(value) if isinstance(value, (int, str)) else repr(value))


def _safe_name(session_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in session_id)[:128]


class _Locks:
    """This process's session locks: one ``flock``-ed file per session, counted per claiming store."""

    def __init__(self) -> None:
        self._held: dict[Path, tuple[int, int]] = {}
        self._mutex = threading.Lock()

    def acquire(self, path: Path, session_id: str) -> None:
        with self._mutex:
            if path in self._held:
                fd, count = self._held[path]
                self._held[path] = (fd, count + 1)
                return
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                raise SessionStoreError(f"cannot lock session {session_id[:8]} ({path}): {error}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip()
                os.close(fd)
                raise SessionBusy(
                    f"session {session_id[:8]} is in use by another turnmemory process"
                    f"{f' (pid {holder})' if holder.isdigit() else ''}: wait for it to finish, "
                    "or start a new session"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            self._held[path] = (fd, 1)

    def release(self, path: Path) -> None:
        with self._mutex:
            fd, count = self._held.pop(path)
            if count > 1:
                self._held[path] = (fd, count - 1)
            else:
                os.close(fd)  # closing the descriptor drops the flock


_LOCKS = _Locks()


def _conversation_message(kind: str, data: Mapping[str, Any]) -> Message | None:
    """The conversation message an event contributes, if any; ``ValueError`` when it is malformed."""
    if kind == "user_message":
        content = data.get("content")
        if not isinstance(content, str):
            raise ValueError("user_message.content: expected a string")
        return Message(role="user", content=content)
    if kind == "assistant_turn":
        if not isinstance(data.get("transcript", []), list):
            raise ValueError("assistant_turn.transcript: expected a list")
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
    except (ValueError, AttributeError, TypeError, RecursionError):
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
