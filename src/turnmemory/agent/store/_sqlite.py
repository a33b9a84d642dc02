"""Sessions in one SQLite file (WAL, one transaction per event), the embedded default.

Damage is reported, never a traceback: a malformed row (garbage or deeply nested JSON, wrong types, a
text ``seq``) is reported in one line and skipped, its neighbours kept, and the session stays
writable; a database file SQLite cannot read at all is moved aside (the notice says where) and a new
one started; damage found later is a :class:`SessionStoreError` whose one line says how to recover.

One writer per session: an exclusive ``flock`` on a lock file per session, released on close and by
the kernel when the process dies, even by kill -9.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from turnmemory.agent.store._base import SessionStore
from turnmemory.agent.store._records import SEQ_LIMIT, NewEvent, SessionBusy, SessionStoreError, one_line

__all__ = ["SqliteStore"]

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
    transcript TEXT,
    PRIMARY KEY (session_id, seq)
);
"""


class SqliteStore(SessionStore):
    """Sessions in one SQLite file at ``path`` (created on first use, readable by its owner only)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.notices = []
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
            why = one_line(str(error))
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
                    f"cannot open the session database {self.path}: {one_line(str(again))}"
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
            columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
            if "transcript" not in columns:  # a database written before transcripts had a column
                db.execute("ALTER TABLE events ADD COLUMN transcript TEXT")
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

    @property
    def local_dir(self) -> Path:
        """The database file's directory."""
        return self.path.parent

    def close(self) -> None:
        """Close the database connection and give up every claimed session."""
        for session_id in list(self._claimed):
            self.release(session_id)
        self._db.close()

    def claim(self, session_id: str) -> None:
        """Become the session's writer; :class:`SessionBusy` when another process is."""
        if session_id in self._claimed:
            return
        _LOCKS.acquire(self._lock_path(session_id), session_id)
        self._claimed.add(session_id)

    def release(self, session_id: str) -> None:
        """Stop being the session's writer."""
        if session_id in self._claimed:
            self._claimed.discard(session_id)
            _LOCKS.release(self._lock_path(session_id))

    def _lock_path(self, session_id: str) -> Path:
        return self.path.parent / "locks" / f"{_safe_name(session_id)}.lock"

    # -- the backend's primitives ------------------------------------------------------------------

    def _create(self, session_id: str, workspace: str, started: NewEvent) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT INTO sessions (id, workspace, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (session_id, workspace, started.created_at, started.created_at),
            )
            self._insert(session_id, started)

    def _append(self, session_id: str, event: NewEvent) -> int | None:
        with self._transaction():
            return self._insert(session_id, event)

    def _load(self, session_id: str, transcripts: bool) -> tuple[Sequence[Any], list[Sequence[Any]]] | None:
        with self._guarded():
            row = self._db.execute(
                "SELECT id, workspace, created_at FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            rows = self._db.execute(
                f"SELECT seq, kind, created_at, data, {'transcript' if transcripts else 'NULL'} FROM events "
                "WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return row, rows

    def _summaries(self, workspace: str | None, limit: int, with_turns: bool) -> list[Sequence[Any]]:
        conditions, params = (["s.workspace = ?"], [workspace]) if workspace is not None else ([], [])
        if with_turns:
            conditions.append(
                "EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.kind = 'assistant_turn'"
                " AND json_valid(e.data) AND json_extract(e.data, '$.status') IS NOT 'error')"
            )
        where = "WHERE " + " AND ".join(conditions) if conditions else ""
        with self._guarded():
            rows: list[Sequence[Any]] = self._db.execute(
                f"""
                SELECT s.id, s.workspace, s.created_at, s.updated_at,
                       (SELECT COUNT(*) FROM events e
                        WHERE e.session_id = s.id AND e.kind = 'assistant_turn'),
                       (SELECT e.data FROM events e WHERE e.session_id = s.id AND e.kind = 'user_message'
                        AND typeof(e.seq) = 'integer' ORDER BY e.seq DESC LIMIT 1)
                FROM sessions s {where} ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?
                """,
                [*params, limit],
            ).fetchall()
        return rows

    def _ids_starting(self, prefix: str) -> list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._guarded():
            return [
                row[0]
                for row in self._db.execute(
                    "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' AND typeof(id) = 'text' LIMIT 3",
                    (escaped + "%",),
                )
            ]

    # -- internals ---------------------------------------------------------------------------------

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """SQLite's errors as one :class:`SessionStoreError` line that says how to recover."""
        try:
            yield
        except (sqlite3.Error, UnicodeDecodeError) as error:
            if _damaged(error):
                raise SessionStoreError(
                    f"the session database {self.path} is damaged ({one_line(str(error))}): move it aside "
                    f"(mv {self.path} {self.path}.damaged) and a new one is started"
                ) from None
            raise SessionStoreError(f"session database {self.path}: {one_line(str(error))}") from None

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

    def _insert(self, session_id: str, event: NewEvent) -> int | None:
        if (
            self._db.execute(
                "UPDATE sessions SET updated_at = ? WHERE id = ?", (event.created_at, session_id)
            ).rowcount
            == 0
        ):
            return None
        (seq,) = self._db.execute(  # a damaged row's seq (not an integer, or huge) must not block the session
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM events"
            " WHERE session_id = ? AND typeof(seq) = 'integer' AND seq < ?",
            (session_id, SEQ_LIMIT),
        ).fetchone()
        self._db.execute(
            "INSERT INTO events (session_id, seq, kind, created_at, data, transcript) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, seq, event.kind, event.created_at, event.data, event.transcript),
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


def _decoded(raw: bytes) -> str | bytes:
    """A text column's value; bytes that are not UTF-8 stay bytes, for the row's check to reject."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


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
