"""The store interface: a session is an ordered list of events, written one transaction each.

A session's events, keyed by workspace:

- ``session_started``: ``{workspace, provider, model}``
- ``user_message``: ``{content}``, written before the turn runs, so a killed process loses no prompt
- ``assistant_turn``: ``{message, status, error?, reason?, usage?}``: the turn's ``Message``
  (flattened prose and TurnMemory) and how it ended (``done``, ``incomplete``, ``interrupted``,
  ``error``); apart from it, its transcript: the visible items for display, whose tool outputs are
  bounded, redacted previews, none for MCP payloads (read to show a session, not to resume one)
- ``pending_drop``: ``{message, reason}``: the pending state of an incomplete turn that was dropped
  (session, model or provider switch), as a historical ``Message``
- ``compaction``: ``{replaces, mode, turns, freed, content}``: the first ``replaces`` messages of the
  conversation so far became one user message, ``content`` (see :mod:`turnmemory.agent.compaction`)
- ``model_switch``: ``{provider, model}``
- ``rewind``: ``{from_seq, turns}``: the turns from the user message ``from_seq`` on left the
  conversation (see :mod:`turnmemory.agent.rewind`); their events stay, for the record

Resuming rebuilds the conversation from user messages and assistant messages (prose plus memory)
only; transcripts are never sent to a model. Partial turns (incomplete, interrupted) are part of the
conversation; a dropped pending state is not, because the partial turn already records that work.

A backend provides a handful of primitives (a row of ``sessions``, the rows of ``events``, an append
in its own transaction, one writer per session); everything a session means is written here once, and
read back by :func:`~turnmemory.agent.store._records.read_session` whatever the backend.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from turnmemory.agent.store._records import (
    LoadedSession,
    NewEvent,
    SessionSummary,
    TurnStatus,
    encode,
    read_session,
    summary,
)
from turnmemory.memory import Message
from turnmemory.retention import redact

__all__ = ["SessionStore"]


class SessionStore(ABC):
    """Where sessions live. One session has one writer at a time: a store claims a session before
    writing to it, and another process's claim is a
    :class:`~turnmemory.agent.store.SessionBusy` error. Claims are per process: stores of one process
    share them (a test, or the REPL resuming).

    ``notices`` holds one line per problem met while opening (a damaged file moved aside).
    """

    notices: list[str]

    @property
    @abstractmethod
    def local_dir(self) -> Path:
        """This machine's directory for what lives beside the sessions (spill areas)."""

    @property
    def spill_root(self) -> Path:
        """The directory holding every agent process's spill directory (see ``turnmemory.agent._spill``)."""
        return self.local_dir / "spill"

    @abstractmethod
    def claim(self, session_id: str) -> None:
        """Become the session's writer; :class:`~turnmemory.agent.store.SessionBusy` when another
        process is."""

    @abstractmethod
    def release(self, session_id: str) -> None:
        """Stop being the session's writer (switching to another session)."""

    @abstractmethod
    def close(self) -> None:
        """Give up every claimed session and close the connection."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def create(self, workspace: str, *, provider: str, model: str) -> str:
        """Start a session in ``workspace``; its id."""
        session_id = uuid.uuid4().hex
        self.claim(session_id)
        started = {"workspace": workspace, "provider": provider, "model": model}
        now = time.time()
        self._create(session_id, workspace, NewEvent("session_started", now, encode(started)))
        return session_id

    def add_user_message(self, session_id: str, content: str) -> int:
        """Persist a prompt (before its turn runs); its seq, which names the turn."""
        return self.append(session_id, "user_message", {"content": content})

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
        self._write(session_id, "assistant_turn", data, transcript=encode(list(transcript)), status=status)

    def add_pending_drop(self, session_id: str, message: Message, *, reason: str) -> None:
        """Persist dropped pending state as the historical ``Message`` it converts to."""
        self.append(session_id, "pending_drop", {"message": message.to_dict(), "reason": reason})

    def add_compaction(self, session_id: str, compaction: Mapping[str, Any]) -> None:
        """Persist a compaction of the conversation (``Compaction.to_dict()``)."""
        self.append(session_id, "compaction", compaction)

    def append(self, session_id: str, kind: str, data: Mapping[str, Any]) -> int:
        """Append one event in its own transaction (claiming the session first); its seq."""
        return self._write(session_id, kind, data)

    def _write(
        self,
        session_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        transcript: str | None = None,
        status: str | None = None,
    ) -> int:
        self.claim(session_id)
        seq = self._append(session_id, NewEvent(kind, time.time(), encode(data), transcript, status))
        if seq is None:
            raise KeyError(f"no session {session_id!r}")
        return seq

    # -- reading -----------------------------------------------------------------------------------

    def load(self, session_id: str, *, transcripts: bool = True) -> LoadedSession:
        """Read a session back; ``KeyError`` when there is no such session.

        Unreadable rows are skipped, one line each in ``problems``. Without ``transcripts`` (resuming:
        the conversation needs none) the assistant turns' display transcripts are not read."""
        found = self._load(session_id, transcripts)
        if found is None:
            raise KeyError(f"no session {session_id!r}")
        return read_session(*found, display=transcripts)

    def sessions(
        self, workspace: str | None = None, *, limit: int = 50, with_turns: bool = False
    ) -> list[SessionSummary]:
        """Sessions, most recently active first; only ``workspace``'s when given, and only those with
        at least one assistant turn that did not fail outright (status other than ``error``) when
        ``with_turns``."""
        return [summary(row) for row in self._summaries(workspace, limit, with_turns)]

    def latest(self, workspace: str) -> str | None:
        """The most recently active session of ``workspace``, or ``None``."""
        found = self.sessions(workspace, limit=1)
        return found[0].id if found else None

    def resolve(self, prefix: str) -> str:
        """The session whose id starts with ``prefix``; ``KeyError`` (one line) when none or several do."""
        prefix = prefix.strip().lower()
        if not prefix:
            raise KeyError("empty session id")
        ids = self._ids_starting(prefix)
        if not ids:
            raise KeyError(f"no session {prefix!r}")
        if len(ids) > 1 and prefix not in ids:
            raise KeyError(f"session id {prefix!r} is ambiguous: give more characters")
        return prefix if prefix in ids else ids[0]

    # -- what a backend provides -------------------------------------------------------------------

    @abstractmethod
    def _create(self, session_id: str, workspace: str, started: NewEvent) -> None:
        """Insert the session's row and its ``session_started`` event at once."""

    @abstractmethod
    def _append(self, session_id: str, event: NewEvent) -> int | None:
        """Append one event after the session's last readable one, in its own transaction; its seq,
        or ``None`` when there is no such session."""

    @abstractmethod
    def _load(self, session_id: str, transcripts: bool) -> tuple[Sequence[Any], list[Sequence[Any]]] | None:
        """The session's row (id, workspace, created_at) and its event rows (seq, kind, created_at,
        data, transcript: ``None`` unless ``transcripts``) in seq order, or ``None``."""

    @abstractmethod
    def _summaries(self, workspace: str | None, limit: int, with_turns: bool) -> list[Sequence[Any]]:
        """Rows of (id, workspace, created_at, updated_at, assistant turns, the last prompt's data)."""

    @abstractmethod
    def _ids_starting(self, prefix: str) -> list[str]:
        """Up to three session ids that start with ``prefix``."""
