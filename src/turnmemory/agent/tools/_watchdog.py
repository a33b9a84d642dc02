"""The watchdog: a process of its own that ends what the agent started when the agent dies.

Run as a script (``python -I -S _watchdog.py``) by :mod:`._reaper`, it reads lines from its stdin, a
pipe whose only writer is the agent:

- ``+PGID`` or ``+PGID CGROUP``: a process group (and the cgroup it runs in) the agent has started;
- ``-PGID``: that group is gone, forget it.

When the agent exits, however it exits (``kill -9`` included), the kernel closes the pipe; the
watchdog reads end-of-file and kills every cgroup still registered whole; every other group gets
``SIGTERM``, up to :data:`GRACE` seconds to end (a reaper gate uses them to kill what it holds), then
``SIGKILL``. It uses only the standard library and imports nothing of the package, so it also runs
where site-packages are not on the path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable

GRACE = 2.0
"""Seconds the registered groups get to end after ``SIGTERM`` before they are killed."""
_POLL = 0.02


def kill_cgroup(path: str, *, timeout: float = 2.0) -> None:
    """Kill every process in the cgroup at ``path`` (``cgroup.kill``, else one by one) and remove it."""
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as handle:
            handle.write("1")
    except FileNotFoundError:  # a kernel before 5.14: kill the members until none is left
        for _ in range(100):
            members = _members(path)
            if not members:
                break
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
    except OSError:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)  # succeeds once the last member has died
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(_POLL)


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as handle:
            return [int(line) for line in handle if line.strip()]
    except OSError:
        return []


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def end_all(held: dict[int, str]) -> None:
    """Kill each cgroup whole at once; send the other groups ``SIGTERM``, give them :data:`GRACE`
    seconds (a reaper gate kills what it holds), then ``SIGKILL``."""
    for pgid, cgroup in held.items():
        if cgroup:
            kill_cgroup(cgroup)
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
    rest = [pgid for pgid, cgroup in held.items() if not cgroup]
    for pgid in rest:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while any(_alive(pgid) for pgid in rest) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for pgid in rest:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def watch(lines: Iterable[str]) -> dict[int, str]:
    """The groups (and their cgroups, or ``""``) still registered when ``lines`` ends."""
    held: dict[int, str] = {}
    for line in lines:
        sign, rest = line[:1], line[1:].strip()
        number, _, cgroup = rest.partition(" ")
        if not number.isdigit():
            continue
        if sign == "+":
            held[int(number)] = cgroup
        elif sign == "-":
            held.pop(int(number), None)
    return held


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_all(watch(sys.stdin))
