"""File checkpoints beside a session: what ``write_file`` and ``edit_file`` are about to change, kept so
that ``rewind`` can put it back.

They live on this machine, in ``<data dir>/checkpoints/<session id>/`` (0700; every file 0600), never in
the store's rows (which hold no file contents): one manifest per turn (``turn-<seq>.json``: each
changed path, its content before the turn as a blob or ``absent``, and the SHA-256 of what the agent
last wrote) and one blob per saved file. A file over :data:`FILE_BYTES` is recorded as too large, and
once a session's blobs reach :data:`SESSION_BYTES` the oldest turns' checkpoints are pruned: those
files are reported, not restored. Changes made by bash commands are not seen here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["FILE_BYTES", "SESSION_BYTES", "Checkpoints", "Restore"]

FILE_BYTES = 1024 * 1024
"""The largest file whose content before a change is kept."""
SESSION_BYTES = 64 * 1024 * 1024
"""The most a session's checkpoints hold; beyond it the oldest turns' are pruned."""

State = Literal["saved", "absent", "too_large", "pruned"]
_BLOB = re.compile(r"[0-9a-f]{32}")
_MANIFEST = re.compile(r"turn-(\d{1,19})\.json")


@dataclass(frozen=True, slots=True)
class Restore:
    """What rewinding does to one file: put back ``blob`` (or delete it when it was ``absent``), if the
    file still holds what the agent last wrote (``written``, a SHA-256, ``None`` when it deleted it)."""

    path: str
    state: State
    blob: str | None
    written: str | None


class Checkpoints:
    """The checkpoints of one session, under ``root`` (``<data dir>/checkpoints``)."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.dir = root / "".join(ch if ch.isalnum() else "_" for ch in session_id)[:64]

    # -- while a turn runs -------------------------------------------------------------------------

    def before_change(self, turn: int, path: str) -> None:
        """Keep ``path``'s content before turn ``turn`` first changes it (later changes in the turn
        keep the first one)."""
        entries = self._entries(turn)
        if any(entry["path"] == path for entry in entries):
            return
        entry: dict[str, Any] = {"path": path, "state": "absent", "blob": None, "written": None}
        content = _read(path, FILE_BYTES)
        if content is None:
            entry["state"] = "too_large"
        elif content or os.path.lexists(path):
            self._make_room(len(content))
            blob = uuid.uuid4().hex
            _write_private(self.dir / blob, content)
            entry.update(state="saved", blob=blob)
        entries.append(entry)
        self._save(turn, entries)

    def after_change(self, turn: int, path: str) -> None:
        """Remember what the agent left at ``path`` (to tell a later change by someone else)."""
        entries = self._entries(turn)
        for entry in entries:
            if entry["path"] == path:
                entry["written"] = _digest(path)
                self._save(turn, entries)

    # -- rewinding ---------------------------------------------------------------------------------

    def plan(self, turns: list[int]) -> tuple[list[Restore], list[str]]:
        """What rewinding ``turns`` does to each file they changed (the content before the earliest of
        them, checked against what the latest left), and one line per unreadable manifest."""
        restores: dict[str, Restore] = {}
        problems: list[str] = []
        for turn in sorted(turns):
            try:
                entries = self._read_manifest(turn)
            except ValueError as error:
                problems.append(
                    f"the checkpoints of turn {turn} are unreadable ({error}); its files are not restored"
                )
                continue
            for entry in entries:
                first = restores.get(entry["path"])
                restores[entry["path"]] = Restore(
                    path=entry["path"],
                    state=first.state if first else entry["state"],
                    blob=first.blob if first else entry["blob"],
                    written=entry["written"],
                )
        return list(restores.values()), problems

    def current(self, item: Restore) -> bool:
        """Whether the file still holds what the agent last wrote there."""
        return _digest(item.path) == item.written

    def restore(self, item: Restore) -> None:
        """Put ``item``'s file back as it was (``OSError`` when it cannot)."""
        if os.path.realpath(item.path) != item.path:
            raise OSError(f"{item.path} is reached through a symlink now")
        if item.state == "absent":
            if os.path.lexists(item.path):
                if not stat.S_ISREG(os.lstat(item.path).st_mode):
                    raise OSError(f"{item.path} is not a regular file now")
                os.unlink(item.path)
            return
        content = (self.dir / str(item.blob)).read_bytes()
        _write_in_place(item.path, content)

    def drop(self, turns: list[int]) -> None:
        """Forget the checkpoints of ``turns`` (rewound)."""
        for turn in turns:
            with contextlib.suppress(ValueError, OSError):
                for entry in self._read_manifest(turn):
                    if entry["blob"]:
                        (self.dir / entry["blob"]).unlink(missing_ok=True)
            (self.dir / f"turn-{turn}.json").unlink(missing_ok=True)

    def delete(self) -> None:
        """Remove every checkpoint of the session."""
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- internals ---------------------------------------------------------------------------------

    def _entries(self, turn: int) -> list[dict[str, Any]]:
        try:
            return self._read_manifest(turn)
        except ValueError:
            return []

    def _read_manifest(self, turn: int) -> list[dict[str, Any]]:
        """A turn's entries, each checked; ``ValueError`` (one line) for a damaged or foreign manifest."""
        path = self.dir / f"turn-{turn}.json"
        raw = _read(str(path), FILE_BYTES)
        if raw is None:
            raise ValueError("the manifest is too large")
        if not raw:
            return []
        try:
            entries = json.loads(raw)
        except (ValueError, RecursionError):
            raise ValueError("the manifest is not JSON") from None
        if not isinstance(entries, list) or not all(_valid(entry) for entry in entries):
            raise ValueError("the manifest is not one of turnmemory's")
        return entries

    def _save(self, turn: int, entries: list[dict[str, Any]]) -> None:
        _write_private(self.dir / f"turn-{turn}.json", json.dumps(entries).encode())

    def _make_room(self, size: int) -> None:
        """Prune the oldest turns' blobs until ``size`` more bytes fit in :data:`SESSION_BYTES`."""
        blobs = [p for p in self.dir.iterdir() if _BLOB.fullmatch(p.name)] if self.dir.is_dir() else []
        used = sum(p.stat().st_size for p in blobs)
        turns = sorted(
            int(m.group(1)) for p in self.dir.glob("turn-*.json") if (m := _MANIFEST.fullmatch(p.name))
        )
        for turn in turns:
            if used + size <= SESSION_BYTES:
                return
            entries = self._entries(turn)
            for entry in entries:
                if entry["blob"]:
                    blob = self.dir / entry["blob"]
                    used -= blob.stat().st_size if blob.exists() else 0
                    blob.unlink(missing_ok=True)
                    entry.update(state="pruned", blob=None)
            self._save(turn, entries)


def _valid(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("path"), str)
        and os.path.isabs(entry["path"])
        and "\0" not in entry["path"]
        and entry.get("state") in ("saved", "absent", "too_large", "pruned")
        and (
            entry.get("blob") is None
            or (isinstance(entry["blob"], str) and bool(_BLOB.fullmatch(entry["blob"])))
        )
        and (entry["state"] != "saved" or entry.get("blob") is not None)
        and (entry.get("written") is None or isinstance(entry["written"], str))
    )


def _read(path: str, limit: int) -> bytes | None:
    """A regular file's bytes (``b""`` when absent), ``None`` when larger than ``limit`` or not a
    regular file; never follows a symlink, never opens a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _digest(path: str) -> str | None:
    """The SHA-256 of a regular file (``None`` when nothing is there; ``"?"`` when it cannot be read)."""
    if not os.path.lexists(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "?"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "?"
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _write_private(path: Path, content: bytes) -> None:
    """Write a checkpoint file (0600, in a 0700 directory), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    os.replace(partial, path)


def _write_in_place(path: str, content: bytes) -> None:
    """Write a restored file: a regular file only, never through a symlink; its mode kept."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file now")
        os.set_blocking(fd, True)
        handle.truncate(0)
        handle.write(content)
