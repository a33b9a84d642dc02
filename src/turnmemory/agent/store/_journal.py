"""The journal of a running turn: its provider-native pending state, kept beside the session so that a
process that stops mid-turn (kill -9, out of memory, a closed lid, a CI timeout) loses no completed
tool call and runs none again.

One file per session on this machine, ``<data dir>/journal/<session id>.json`` (0600, in a 0700
directory), never a row of the store: it holds what the next request replays (tool results
included), so it lives only as long as the turn that needs it. It is replaced atomically and synced
to disk when a turn carrying earlier pending state starts, at each tool start and end, and when a
turn ends with pending state; it is deleted when a turn ends done, and when its state is replayed
into another session's place, dropped or rewound. A journal that cannot be read, or that names
another session, is a :class:`JournalDamaged` line, and is never replayed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnmemory.providers import PROVIDERS

__all__ = ["JOURNAL_BYTES", "Journal", "JournalDamaged", "JournalEntry"]

JOURNAL_BYTES = 256 * 1024 * 1024
"""The largest journal read back (a bigger file is damaged: no turn's requests hold that much)."""

_FORMAT = "turnmemory-turn-journal"
_VERSION = 1


class JournalDamaged(ValueError):
    """A journal that is not one of this session's: its one-line reason."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """What a journal holds: the ``session``, the ``provider`` and ``model`` its native ``items`` are
    for, the seq of the latest interrupted turn's prompt (``turn``), how many interrupted ``turns``
    the items carry, and where the latest one's items begin (``latest``)."""

    session: str
    provider: str
    model: str
    turn: int
    turns: int
    latest: int
    items: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """The entry as the journal file stores it."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "session": self.session,
            "provider": self.provider,
            "model": self.model,
            "turn": self.turn,
            "turns": self.turns,
            "latest": self.latest,
            "items": list(self.items),
        }

    @classmethod
    def from_dict(cls, data: Any) -> JournalEntry:
        """An entry read back; :class:`JournalDamaged` for anything else."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise JournalDamaged("it is not a turnmemory turn journal")
        if data.get("version") != _VERSION:
            raise JournalDamaged(f"its version {str(data.get('version'))[:20]!r} is not {_VERSION}")
        items = data.get("items")
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise JournalDamaged("its items are not a list of objects")
        texts = [data.get(key) for key in ("session", "provider", "model")]
        counts = [data.get(key) for key in ("turn", "turns", "latest")]
        if not all(isinstance(text, str) for text in texts) or data["provider"] not in PROVIDERS:
            raise JournalDamaged("its session, provider or model is not readable")
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            raise JournalDamaged("its turn counts are not readable")
        if data["turns"] < 1 or data["latest"] > len(items) or not items:
            raise JournalDamaged("its turn counts do not fit its items")
        return cls(
            session=data["session"],
            provider=data["provider"],
            model=data["model"],
            turn=data["turn"],
            turns=data["turns"],
            latest=data["latest"],
            items=tuple(items),
        )


class Journal:
    """The journal of one session's running turn, under ``root`` (``<data dir>/journal``)."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.session_id = session_id
        self.path = root / ("".join(ch if ch.isalnum() else "_" for ch in session_id)[:64] + ".json")

    def write(self, entry: JournalEntry) -> None:
        """Replace the journal by ``entry``, durably: written aside, synced, renamed, the directory synced."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()
        partial = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(partial, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, self.path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        _sync_dir(self.path.parent)

    def read(self) -> JournalEntry | None:
        """The journal's entry, ``None`` when there is none; :class:`JournalDamaged` (one line) when it
        cannot be read or belongs to another session."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise JournalDamaged(f"it cannot be opened ({error.strerror or error})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise JournalDamaged("it is not a regular file")
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(JOURNAL_BYTES + 1)
        if len(raw) > JOURNAL_BYTES:
            raise JournalDamaged(f"it is larger than {JOURNAL_BYTES // (1024 * 1024)} MiB")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            raise JournalDamaged("it is not JSON") from None
        entry = JournalEntry.from_dict(data)
        if entry.session != self.session_id:
            raise JournalDamaged("it belongs to another session")
        return entry

    def delete(self) -> None:
        """Remove the journal (nothing happens when there is none)."""
        with contextlib.suppress(OSError):
            self.path.unlink()
            _sync_dir(self.path.parent)


def _sync_dir(path: Path) -> None:
    """Make a rename or unlink in ``path`` durable."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
