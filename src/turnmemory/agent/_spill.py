"""Spill files: the full outputs a tool cut short (bash streams, MCP results), kept for the model within
the turn and no longer.

They hold raw, unredacted output, so each agent process keeps them in a private directory of
its own (mode 0700, files 0600) under the data directory's ``spill`` root, empties it when a turn ends
however it ends, and holds an ``flock`` on a lock file beside it while it lives. A process that
crashed leaves its directory behind unlocked: the next agent to start removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
import weakref
from pathlib import Path

__all__ = ["SpillArea", "sweep_stale"]


class SpillArea:
    """This process's spill directory under ``root``: created private, emptied by :meth:`clear`, removed by
    :meth:`close` (or when the area is garbage-collected, or at interpreter exit)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(root, 0o700)
        sweep_stale(root)
        name = uuid.uuid4().hex
        lock = _locked(root / f"{name}.lock")
        if lock is None:
            raise OSError(f"cannot lock a new spill directory under {root}")
        self.path = root / name
        self.path.mkdir(mode=0o700)
        self._remove = weakref.finalize(self, _remove, self.path, lock)

    def clear(self) -> None:
        """Delete every spilled file (the turn is over)."""
        if not self.path.is_dir():
            self.path.mkdir(mode=0o700)
            return
        for entry in os.scandir(self.path):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)

    def close(self) -> None:
        """Remove the directory and its lock (the agent is done)."""
        self._remove()


def _remove(path: Path, lock: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{path}.lock")
    os.close(lock)


def sweep_stale(root: Path) -> None:
    """Remove the spill directories (and lock files) of agent processes that no longer run."""
    for entry in os.scandir(root):
        name = entry.name.removesuffix(".lock")
        if entry.name.endswith(".lock") and (root / name).exists():
            continue
        lock = _locked(root / f"{name}.lock")
        if lock is None:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif entry.name != f"{name}.lock":
                os.unlink(entry.path)
            os.unlink(root / f"{name}.lock")
        except FileNotFoundError:
            pass
        finally:
            os.close(lock)


def _locked(path: Path) -> int | None:
    """A descriptor locking ``path`` (created 0600) exclusively, or ``None`` when another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
