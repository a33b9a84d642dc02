"""The journal of a running turn: its provider-native pending state, kept beside the session so that a
process that stops mid-turn (kill -9, out of memory, a closed lid, a CI timeout) loses no completed
tool call and runs none again.

One file per session on this machine, ``<data dir>/journal/<session id>.json`` (0600, in a 0700
directory), never a row of the store: it holds what the next request replays (tool results
included), so it lives only as long as the turn that needs it. It is written when a turn carrying
earlier pending state starts, at each tool start and end, and when a turn ends with pending state; it
is deleted when a turn ends done, and when its state is replayed into another session's place,
dropped or rewound. A journal that cannot be read, or that names another session, is a
:class:`JournalDamaged` line, and is never replayed.

The file is a log, one JSON object per line, so that what a write costs is what changed, not the
whole turn: the first line is a whole entry, each later line replaces the items from one index on
(``{"at": k, "turns": t, "latest": l, "items": [...]}``), and each line is synced before the write
returns. A last line without its newline was cut short by the stop and is left out. When the log has
grown past twice what its state holds, it is replaced by one whole entry, atomically (written aside,
synced, renamed, the directory synced), so a long turn writes bytes in proportion to its work.
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

from turnmemory._text import compact_json
from turnmemory.providers import PROVIDERS

__all__ = ["JOURNAL_BYTES", "Journal", "JournalDamaged", "JournalEntry"]

JOURNAL_BYTES = 256 * 1024 * 1024
"""The largest journal read back (a bigger file is damaged: no turn's requests hold that much)."""

_FORMAT = "turnmemory-turn-journal"
_VERSION = 2
_READABLE = (1, 2)  # version 1 wrote one whole entry, which a version-2 log begins with


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
        if data.get("version") not in _READABLE:
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
        self.bytes_written = 0
        """What this journal has written so far, in bytes (what a long turn's durability costs)."""
        self._log: _Log | None = None

    def write(self, entry: JournalEntry) -> None:
        """Make ``entry`` what the journal holds, durably: the items that changed since this journal's
        last write are appended as one synced line, or the whole entry replaces the file."""
        log = self._log
        if log is None or log.head != _head(entry):
            self._replace(entry)
            return
        items = list(entry.items)
        at = _common_prefix(log.items, items)
        if at == len(log.items) == len(items) and (log.turns, log.latest) == (entry.turns, entry.latest):
            return
        added = [_dumps(item) for item in items[at:]]
        head = f'{{"at":{at},"turns":{entry.turns},"latest":{entry.latest},"items":['.encode()
        line = b"".join([head, b",".join(added), b"]}\n"])
        state = sum(log.sizes[:at]) + sum(map(len, added))
        if log.size + len(line) > 2 * state + _SLACK or not self._append(line):
            self._replace(entry)
            return
        log.items[at:] = [json.loads(text) for text in added]  # copies: the caller's items may change
        log.sizes[at:] = map(len, added)
        log.turns, log.latest, log.size = entry.turns, entry.latest, log.size + len(line)

    def _append(self, line: bytes) -> bool:
        """Append ``line`` to the file and sync it; false when the file is not there to append to."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        with os.fdopen(fd, "ab") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self.bytes_written += len(line)
        return True

    def _replace(self, entry: JournalEntry) -> None:
        """Replace the file by the whole ``entry``: written aside, synced, renamed, the directory synced."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        added = [_dumps(item) for item in entry.items]
        head = _dumps({key: value for key, value in entry.to_dict().items() if key != "items"})
        data = b"".join([head[:-1], b',"items":[', b",".join(added), b"]}\n"])
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
        self.bytes_written += len(data)
        items = [json.loads(text) for text in added]
        sizes = list(map(len, added))
        self._log = _Log(_head(entry), items, sizes, entry.turns, entry.latest, len(data))

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
        entry = JournalEntry.from_dict(_folded(raw))
        if entry.session != self.session_id:
            raise JournalDamaged("it belongs to another session")
        return entry

    def delete(self) -> None:
        """Remove the journal (nothing happens when there is none)."""
        self._log = None
        with contextlib.suppress(OSError):
            self.path.unlink()
            _sync_dir(self.path.parent)


@dataclass(slots=True)
class _Log:
    """What the journal's file holds, as this process last wrote it: the entry's ``head`` (see
    :func:`_head`), copies of its items with their sizes in bytes, its counts, and the file's size."""

    head: tuple[str, str, str, int]
    items: list[Any]
    sizes: list[int]
    turns: int
    latest: int
    size: int


_SLACK = 64 * 1024
"""How far past twice its state's size the log may grow before it is replaced by one whole entry."""


def _head(entry: JournalEntry) -> tuple[str, str, str, int]:
    """What a write of ``entry`` can only change by replacing the file."""
    return entry.session, entry.provider, entry.model, entry.turn


def _common_prefix(old: list[Any], new: list[Any]) -> int:
    """How many items ``old`` and ``new`` begin with alike."""
    for at, (before, after) in enumerate(zip(old, new, strict=False)):
        if before != after:
            return at
    return min(len(old), len(new))


def _dumps(value: Any) -> bytes:
    return compact_json(value).encode()


def _folded(raw: bytes) -> Any:
    """The entry a journal's bytes hold: its first line, with each later line's items put in place."""
    lines = raw.split(b"\n")
    tail = lines.pop()
    if not lines:  # one entry without its newline (what version 1 wrote)
        lines = [tail]
    try:
        data = json.loads(lines[0].decode("utf-8"))
        records = [json.loads(line.decode("utf-8")) for line in lines[1:]]
    except (ValueError, RecursionError):
        raise JournalDamaged("it is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        return data
    items = list(data["items"])
    for record in records:
        at = record.get("at") if isinstance(record, dict) else None
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= len(items):
            raise JournalDamaged("a line of it does not follow from the lines before")
        if not isinstance(record.get("items"), list):
            raise JournalDamaged("a line of it does not follow from the lines before")
        items[at:] = record["items"]
        data = {**data, "turns": record.get("turns"), "latest": record.get("latest")}
    return {**data, "items": items}


def _sync_dir(path: Path) -> None:
    """Make a rename or unlink in ``path`` durable."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
