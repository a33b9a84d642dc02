"""No command outlives the agent: a watchdog process kills the running commands' process groups
when the agent dies, however it dies (``kill -9`` included).

The agent holds the write end of a pipe whose read end is the watchdog's stdin, and writes ``+PGID``
when a command starts and ``-PGID`` once its group is gone. When the agent exits the kernel closes
the pipe; the watchdog reads end-of-file and kills every group still registered. A process that
leaves its group (``setsid``) escapes this; the sandbox's PID namespace does not let it.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import IO

__all__ = ["track", "untrack"]

_WATCHDOG = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    sign, pgid = line[:1], int(line[1:])
    (groups.add if sign == "+" else groups.discard)(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""

_lock = threading.Lock()
_pipe: IO[str] | None = None


def track(pgid: int) -> None:
    """Register a running command's process group: it is killed if the agent dies."""
    _send(f"+{pgid}\n")


def untrack(pgid: int) -> None:
    """Forget a process group that has been killed or has ended."""
    _send(f"-{pgid}\n")


def _send(line: str) -> None:
    global _pipe
    with _lock:
        for _ in range(2):
            if _pipe is None:
                _pipe = _start()
            try:
                _pipe.write(line)
                _pipe.flush()
                return
            except OSError:  # the watchdog was killed: start another
                _pipe = None


def _start() -> IO[str]:
    """Spawn the watchdog in its own session (a terminal's Ctrl-C does not reach it), reading our pipe."""
    read_end, write_end = os.pipe()
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", "-c", _WATCHDOG],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
            ],
            setsid=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return os.fdopen(write_end, "w")
