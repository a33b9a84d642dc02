"""The sessions store: where the agent's sessions live, behind one interface.

:class:`SessionStore` is the interface (what a session's events are, how they are written and read
back); :class:`SqliteStore` keeps them in one SQLite file in the user data directory (the default),
``PostgresStore`` (``turnmemory.agent.store._postgres``, needs ``turnmemory[postgres]``) in a
PostgreSQL database several hosts share. :func:`open_store` opens the one a URL names. The display
transcript of a turn (:func:`transcript_items`) is stored with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from turnmemory.agent.store._base import SessionStore
from turnmemory.agent.store._records import (
    LoadedSession,
    SessionBusy,
    SessionEvent,
    SessionInfo,
    SessionStoreError,
    SessionSummary,
    TurnStatus,
)
from turnmemory.agent.store._sqlite import SqliteStore
from turnmemory.agent.store._transcript import PREVIEW_BYTES, preview, transcript_items

__all__ = [
    "DATA_DIR_ENV",
    "PREVIEW_BYTES",
    "LoadedSession",
    "SessionBusy",
    "SessionEvent",
    "SessionInfo",
    "SessionStore",
    "SessionStoreError",
    "SessionSummary",
    "SqliteStore",
    "TurnStatus",
    "data_dir",
    "open_store",
    "preview",
    "printable_url",
    "transcript_items",
]

DATA_DIR_ENV = "TURNMEMORY_DATA_DIR"
"""Environment variable that overrides the user data directory."""


def data_dir() -> Path:
    """The user data directory: ``$TURNMEMORY_DATA_DIR``, else ``platformdirs.user_data_dir("turnmemory")``."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("turnmemory"))


def printable_url(url: str) -> str:
    """A store URL as it may be printed: scheme, user, host, port and path; never a password or a query."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.partition(":")[0][:20] + "://…"
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{parts.hostname or ''}{port}{parts.path}"


def open_store(url: str | None = None) -> SessionStore:
    """The store ``url`` names: ``postgresql://…`` (libpq's URL, with its query parameters) or
    ``sqlite:///PATH``; SQLite in the user data directory (see :func:`data_dir`) when ``None``.
    A store that cannot be opened is a one-line :class:`SessionStoreError` (never showing a password)."""
    if not url:
        return SqliteStore(data_dir() / "sessions.sqlite3")
    scheme = url.partition(":")[0].lower()
    if scheme == "sqlite" and url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://").partition("?")[0]
        if not path.startswith("/"):
            raise SessionStoreError(f"the store URL sqlite://{path} needs an absolute path: sqlite:///PATH")
        return SqliteStore(Path(path))
    if scheme in ("postgresql", "postgres"):
        try:
            from turnmemory.agent.store._postgres import PostgresStore
        except ImportError:
            raise SessionStoreError(
                "a PostgreSQL session store needs psycopg: pip install 'turnmemory[postgres]'"
            ) from None
        return PostgresStore(url, data_dir())
    raise SessionStoreError(
        f"unsupported session store {scheme[:20]!r}: expected postgresql://… or sqlite:///PATH"
    )
