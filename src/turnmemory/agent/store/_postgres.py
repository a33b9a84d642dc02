"""Sessions in PostgreSQL (psycopg 3), for agents on several hosts sharing one place.

The tables (``turnmemory_sessions``, ``turnmemory_events``) are created on first use in the first
schema of the connection's ``search_path``. Each event is one transaction, so a completed turn is
stored once it is acknowledged. A lost connection (a server restart, a network cut) is reopened for
up to :data:`RECONNECT_SECONDS`, and the statement retried once; an append whose commit may have
happened is not written twice (the session's last event is compared first).

One writer per session across hosts: a session-level advisory lock, held on the connection every
statement of this process goes through, so a write only ever succeeds where the lock is held. When
the connection is lost the lock goes with it; it is taken again on reconnecting, and a session
another process took in between is a :class:`SessionBusy` error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.adapt import Loader
from psycopg.conninfo import conninfo_to_dict

from turnmemory.agent.store import printable_url
from turnmemory.agent.store._base import SessionStore
from turnmemory.agent.store._records import SEQ_LIMIT, NewEvent, SessionBusy, SessionStoreError, one_line

__all__ = ["RECONNECT_SECONDS", "PostgresStore"]

RECONNECT_SECONDS = 15.0
"""How long a lost connection is tried again before a statement fails."""
CONNECT_SECONDS = 10
"""How long one connection attempt may take (unless the URL sets ``connect_timeout``)."""
STATEMENT_SECONDS = 30
"""How long one statement may run (or wait for a lock) on the server."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turnmemory_sessions (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS turnmemory_sessions_by_workspace ON turnmemory_sessions (workspace, updated_at);
CREATE INDEX IF NOT EXISTS turnmemory_sessions_by_update ON turnmemory_sessions (updated_at);
CREATE TABLE IF NOT EXISTS turnmemory_events (
    session_id TEXT NOT NULL REFERENCES turnmemory_sessions (id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    data TEXT NOT NULL,
    transcript TEXT,
    status TEXT,
    PRIMARY KEY (session_id, seq)
)
"""
_SCHEMA_LOCK = 0x746D_7363_6865_6D61  # "tmschema": one process creates the tables at a time
_HOLDER = re.compile(r"turnmemory pid (\d{1,10}) on ([A-Za-z0-9.-]{1,40})")

T = TypeVar("T")


class PostgresStore(SessionStore):
    """Sessions in the PostgreSQL database ``url`` names; ``local_dir`` is this machine's directory
    for what lives beside them (spill areas)."""

    def __init__(self, url: str, local_dir: Path) -> None:
        self.url = url
        self.notices = []
        self._local_dir = local_dir
        self._claimed: set[str] = set()
        self._server = _Server.shared(url)

    @property
    def local_dir(self) -> Path:
        """The user data directory of this machine."""
        return self._local_dir

    def close(self) -> None:
        """Give up every claimed session; the process's connection closes with its last store."""
        for session_id in list(self._claimed):
            self.release(session_id)
        self._server.leave()

    def claim(self, session_id: str) -> None:
        """Become the session's writer; :class:`SessionBusy` when another process is."""
        if session_id not in self._claimed:
            self._server.claim(session_id)
            self._claimed.add(session_id)

    def release(self, session_id: str) -> None:
        """Stop being the session's writer."""
        if session_id in self._claimed:
            self._claimed.discard(session_id)
            self._server.release(session_id)

    # -- the backend's primitives ------------------------------------------------------------------

    def _create(self, session_id: str, workspace: str, started: NewEvent) -> None:
        def create(db: psycopg.Connection[Any]) -> None:
            with db.transaction():
                db.execute(
                    "INSERT INTO turnmemory_sessions (id, workspace, created_at, updated_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                    (session_id, workspace, started.created_at, started.created_at),
                )
                db.execute(
                    "INSERT INTO turnmemory_events (session_id, seq, kind, created_at, data) "
                    "VALUES (%s, 1, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (session_id, started.kind, started.created_at, started.data),
                )

        self._server.run(create, writing=session_id)

    def _append(self, session_id: str, event: NewEvent) -> int | None:
        def append(db: psycopg.Connection[Any]) -> int | None:
            with db.transaction():
                if (
                    db.execute(  # the row lock orders this session's appends
                        "UPDATE turnmemory_sessions SET updated_at = %s WHERE id = %s",
                        (event.created_at, session_id),
                    ).rowcount
                    == 0
                ):
                    return None
                last = db.execute(  # a damaged row's huge seq must not make the next one overflow
                    "SELECT seq, kind, created_at FROM turnmemory_events WHERE session_id = %s AND seq < %s "
                    "ORDER BY seq DESC LIMIT 1",
                    (session_id, SEQ_LIMIT),
                ).fetchone()
                if last is not None and (last[1], last[2]) == (event.kind, event.created_at):
                    return int(last[0])  # written by an attempt whose commit was not acknowledged
                seq = (int(last[0]) if last is not None else 0) + 1
                db.execute(
                    "INSERT INTO turnmemory_events (session_id, seq, kind, created_at, data, transcript, status) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        session_id,
                        seq,
                        event.kind,
                        event.created_at,
                        event.data,
                        event.transcript,
                        event.status,
                    ),
                )
                return seq

        return self._server.run(append, writing=session_id)

    def _load(self, session_id: str, transcripts: bool) -> tuple[Sequence[Any], list[Sequence[Any]]] | None:
        def load(db: psycopg.Connection[Any]) -> tuple[Sequence[Any], list[Sequence[Any]]] | None:
            with db.transaction():  # one snapshot
                row = db.execute(
                    "SELECT id, workspace, created_at FROM turnmemory_sessions WHERE id = %s", (session_id,)
                ).fetchone()
                if row is None:
                    return None
                rows = db.execute(
                    f"SELECT seq, kind, created_at, data, {'transcript' if transcripts else 'NULL'} "
                    "FROM turnmemory_events WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                ).fetchall()
            return row, rows

        return self._server.run(load)

    def _summaries(self, workspace: str | None, limit: int, with_turns: bool) -> list[Sequence[Any]]:
        conditions, params = (["s.workspace = %s"], [workspace]) if workspace is not None else ([], [])
        if with_turns:
            conditions.append(
                "EXISTS (SELECT 1 FROM turnmemory_events e WHERE e.session_id = s.id"
                " AND e.kind = 'assistant_turn' AND e.status IS DISTINCT FROM 'error')"
            )
        where = "WHERE " + " AND ".join(conditions) if conditions else ""
        query = f"""
            SELECT s.id, s.workspace, s.created_at, s.updated_at,
                   (SELECT COUNT(*) FROM turnmemory_events e
                    WHERE e.session_id = s.id AND e.kind = 'assistant_turn'),
                   (SELECT e.data FROM turnmemory_events e WHERE e.session_id = s.id
                    AND e.kind = 'user_message' ORDER BY e.seq DESC LIMIT 1)
            FROM turnmemory_sessions s {where} ORDER BY s.updated_at DESC, s.created_at DESC LIMIT %s
        """
        return self._server.run(lambda db: db.execute(query, [*params, limit]).fetchall())

    def _ids_starting(self, prefix: str) -> list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return self._server.run(
            lambda db: [
                row[0]
                for row in db.execute(
                    "SELECT id FROM turnmemory_sessions WHERE id LIKE %s ESCAPE '\\' LIMIT 3", (escaped,)
                )
            ]
        )


class _TextLoader(Loader):
    """Text columns as ``str``; bytes that are not UTF-8 (a ``SQL_ASCII`` database) stay bytes, for
    the row's check to reject."""

    def load(self, data: Any) -> str | bytes:
        raw = bytes(data)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw


class _Server:
    """This process's connection to one database, shared by its stores: every statement, and the
    advisory locks of the sessions it writes (which live and die with the connection)."""

    @classmethod
    def shared(cls, url: str) -> _Server:
        """This process's connection to ``url``, opened now if it is the first."""
        with _SERVERS_MUTEX:
            key = (url, os.getpid())
            server = _SERVERS.get(key)
            if server is None:
                server = _SERVERS[key] = cls(url)
                try:
                    server.run(lambda db: None)
                except BaseException:
                    del _SERVERS[key]
                    raise
            server._users += 1
            return server

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = printable_url(url)
        self._db: psycopg.Connection[Any] | None = None
        self._mutex = threading.RLock()
        self._users = 0
        self._held: dict[str, int] = {}  # claimed session -> how many stores of this process claim it
        self._lost: set[str] = set()  # claims another process took while the connection was lost
        self._schema_ready = False

    def leave(self) -> None:
        """One store fewer uses the connection; the last one closes it."""
        with _SERVERS_MUTEX, self._mutex:
            self._users -= 1
            if self._users > 0:
                return
            _SERVERS.pop((self.url, os.getpid()), None)
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- claims ------------------------------------------------------------------------------------

    def claim(self, session_id: str) -> None:
        with self._mutex:
            if session_id in self._held:
                self._held[session_id] += 1
                return

            def lock(db: psycopg.Connection[Any]) -> None:
                self._lock(db, session_id)

            self.run(lock)
            self._held[session_id] = 1

    def release(self, session_id: str) -> None:
        with self._mutex:
            count = self._held.pop(session_id, 0)
            if count > 1:
                self._held[session_id] = count - 1
                return
            self._lost.discard(session_id)
            db = self._db
            if db is not None and not db.closed:
                with contextlib.suppress(psycopg.Error):  # a lost connection has let go of it already
                    db.execute("SELECT pg_advisory_unlock(%s)", (_key(session_id),))

    def _lock(self, db: psycopg.Connection[Any], session_id: str) -> None:
        key = _key(session_id)
        (taken,) = db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() or (False,)
        if taken:
            return
        holder = db.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::bigint::oid "
            "AND l.objid = %s::bigint::oid AND l.objsubid = 1 LIMIT 1",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        ).fetchone()
        raise SessionBusy(
            f"session {session_id[:8]} is in use by another turnmemory process"
            f"{_holder(holder[0] if holder else None)}: wait for it to finish, or start a new session"
        )

    # -- statements --------------------------------------------------------------------------------

    def run(self, work: Callable[[psycopg.Connection[Any]], T], *, writing: str | None = None) -> T:
        """``work`` on the connection, opened (and the claims taken again) when it was lost; work cut
        by a lost connection runs once more. Errors are one-line :class:`SessionStoreError` s."""
        with self._mutex:
            try:
                return self._attempt(work, writing)
            except _Lost:
                pass
            try:
                return self._attempt(work, writing)
            except _Lost as lost:
                raise self._error(lost.error) from None

    def _attempt(self, work: Callable[[psycopg.Connection[Any]], T], writing: str | None) -> T:
        db = self._connected()
        if writing is not None and writing in self._lost:
            raise SessionBusy(
                f"session {writing[:8]} was taken by another turnmemory process while the connection "
                f"to {self.shown} was lost: its stored turns are kept; start a new session"
            )
        try:
            return work(db)
        except psycopg.OperationalError as error:
            if db.closed or db.broken:
                self._db = None
                raise _Lost(error) from None
            raise self._error(error) from None
        except psycopg.Error as error:
            raise self._error(error) from None

    def _connected(self) -> psycopg.Connection[Any]:
        if self._db is not None and not (self._db.closed or self._db.broken):
            return self._db
        self._db = None
        reconnecting = self._schema_ready  # connected before: the server may be restarting
        deadline = time.monotonic() + (RECONNECT_SECONDS if reconnecting else 0.0)
        while True:
            try:
                db = self._connect()
                break
            except psycopg.OperationalError as error:
                if time.monotonic() >= deadline:
                    raise SessionStoreError(
                        f"cannot reach the session store {self.shown}: {one_line(str(error))}"
                        + (" (the turns stored so far are kept)" if reconnecting else "")
                    ) from None
                time.sleep(0.25)
            except psycopg.Error as error:
                raise self._error(error) from None
        try:
            for session_id in list(self._held):
                try:
                    self._lock(db, session_id)
                except SessionBusy:
                    self._lost.add(session_id)
        except psycopg.Error as error:
            db.close()
            raise self._error(error) from None
        self._db = db
        return db

    def _connect(self) -> psycopg.Connection[Any]:
        settings = conninfo_to_dict(self.url)
        extra: dict[str, Any] = {
            "autocommit": True,
            "application_name": f"turnmemory pid {os.getpid()} on {_host()}"[:63],
        }
        if "connect_timeout" not in settings:
            extra["connect_timeout"] = CONNECT_SECONDS
        db = psycopg.connect(self.url, **extra)
        try:
            db.adapters.register_loader("text", _TextLoader)
            db.adapters.register_loader("varchar", _TextLoader)
            db.execute(f"SET statement_timeout = {STATEMENT_SECONDS * 1000}")
            if not self._schema_ready:
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    for statement in _SCHEMA.split(";"):
                        db.execute(statement)
                self._schema_ready = True
        except BaseException:
            db.close()
            raise
        return db

    def _error(self, error: psycopg.Error) -> SessionStoreError:
        return SessionStoreError(f"session store {self.shown}: {one_line(str(error))}")


_SERVERS: dict[tuple[str, int], _Server] = {}
_SERVERS_MUTEX = threading.Lock()


class _Lost(Exception):
    """The connection was lost under a statement."""

    def __init__(self, error: psycopg.Error) -> None:
        super().__init__(str(error))
        self.error = error


def _key(session_id: str) -> int:
    """The session's advisory lock: a signed 64-bit number from its id."""
    digest = hashlib.sha256(b"turnmemory session " + session_id.encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _host() -> str:
    name = socket.gethostname()
    return name if re.fullmatch(r"[A-Za-z0-9.-]{1,40}", name) else "?"


def _holder(application: Any) -> str:
    """`` (pid N)`` for a holder on this host, `` (pid N on HOST)`` elsewhere, nothing when unknown."""
    found = _HOLDER.fullmatch(application) if isinstance(application, str) else None
    if found is None:
        return ""
    pid, host = found.groups()
    return f" (pid {pid})" if host == _host() else f" (pid {pid} on {host})"
