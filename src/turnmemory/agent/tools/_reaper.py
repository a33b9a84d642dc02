"""No command outlives the agent: each starts behind a gate, is registered with a watchdog before it
runs, and everything it started is killed when it ends, times out, or the agent dies (``kill -9``
included).

- A contained command's gate is a shell that becomes bubblewrap: the sandbox's PID namespace holds
  everything the command starts, daemons included, and dies with it.
- A host command (escalated, or the sandbox off) runs in a cgroup of its own where the agent may make
  one (cgroup v2 with the agent's own cgroup writable: root, or a delegated user session). Its gate
  is moved into the cgroup before the command may start, so everything it starts is in it, whatever
  process group, session or parent it ends up with; the cgroup is killed whole when the command ends.
- Where no cgroup can be made, a host command runs under the reaper gate of :mod:`._gate`: the child
  subreaper of everything the command starts, which kills what is left (``setsid -f`` daemons, double
  forks) when the command ends. A command that kills the gate itself first can leave a process behind.
- The watchdog (:mod:`._watchdog`), a process of its own in its own session, learns each group (and
  cgroup) before the command may start; when the agent dies it ends them all.

An MCP stdio server, which the MCP SDK spawns, runs under the same reaper gate: its command is
:data:`STDIO_GATE` followed by the server's executable and argv, started as the leader of a new
process group (``start_new_session=True``). Once the gate has said its group, :func:`adopt` moves it
into a cgroup of its own where one can be made and registers it with the watchdog, before the
server's first request lets it start; :func:`release` ends whatever is left once it has stopped.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from turnmemory.agent.tools import _gate, _watchdog

__all__ = ["STDIO_GATE", "Held", "adopt", "hold", "release", "track", "untrack"]

_SHELL_GATE = 'IFS= read -r _ || exit 125; exec "$@" </dev/null'
"""The contained command's gate: waits for the agent's go, then becomes the command with stdin closed;
an agent that died first sends no go, and the command never runs."""
STDIO_GATE = (sys.executable, "-I", "-S", _gate.__file__, _gate.STDIO)
"""The reaper gate of an MCP stdio server: ``[*STDIO_GATE, EXECUTABLE, *ARGV]`` writes its process group
on stderr, waits for the server's first request, runs ``EXECUTABLE`` with ``ARGV`` (stdin, stdout and
stderr its own) and, when the server ends or the gate is stopped, kills all it left."""
_STOP_GRACE = 5.0
"""Seconds the reaper gate gets to kill what it holds after ``SIGTERM``, before its group is killed."""

_lock = threading.Lock()
_pipe: IO[str] | None = None
_cgroups = {"usable": True}
_numbers = itertools.count()


@dataclass(frozen=True, slots=True)
class Held:
    """A running command: its gate process, and the cgroup it runs in (``None``: none could be made)."""

    process: subprocess.Popen[bytes]
    cgroup: str | None
    reaper: bool

    def end(self) -> None:
        """Kill the command and everything it started; return once the gate has exited."""
        if self.reaper and self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(_STOP_GRACE)
        release(self.process.pid, self.cgroup)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def hold(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdout: int,
    stderr: int,
    contained: bool,
) -> Held:
    """Start ``argv`` behind its gate (stdin closed) and register it with the watchdog; it runs from here on.

    ``contained``: ``argv`` is a sandboxed command (its PID namespace holds what it starts). A host
    command runs in a cgroup of its own where one can be made, else under the reaper gate. Call
    :meth:`Held.end` when it has ended or must stop.
    """
    shell_gate = ["/bin/sh", "-c", _SHELL_GATE, "gate", *argv]
    cgroup = None if contained else _new_cgroup()
    if contained or cgroup is not None:
        gate, reaper = shell_gate, False
    else:
        gate, reaper = [sys.executable, "-I", "-S", _gate.__file__, *argv], True
    read_end, write_end = os.pipe()
    ends = [read_end, write_end]
    try:
        process = subprocess.Popen(
            gate, cwd=cwd, stdin=read_end, stdout=stdout, stderr=stderr, start_new_session=True, env=env
        )
        os.close(ends.pop(0))
        held = Held(process, cgroup, reaper)
        try:
            if cgroup is not None and not _enter(cgroup, process.pid):
                held.end()  # it never started: no go was sent
                return hold(argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr, contained=False)
            track(process.pid, cgroup)
            os.write(write_end, b"go\n")  # the command starts only once the watchdog knows its group
        except BaseException:
            held.end()
            raise
        return held
    finally:
        for end in ends:
            os.close(end)


def adopt(pgid: int) -> str | None:
    """Register the group of a started reaper gate (its leader ``pgid``) with the watchdog, first moving
    the gate into a new cgroup where one can be made; the cgroup, or ``None``. The gate's command must
    not have started yet: what it starts is then in the cgroup too."""
    cgroup = _new_cgroup()
    if cgroup is not None and not _enter(cgroup, pgid):
        _watchdog.kill_cgroup(cgroup)  # still empty: this only removes it
        cgroup = None
    track(pgid, cgroup)
    return cgroup


def release(pgid: int, cgroup: str | None) -> None:
    """Kill what is left of a registered group and of its cgroup, and forget them."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if cgroup is not None:
        _watchdog.kill_cgroup(cgroup)
    untrack(pgid)


def track(pgid: int, cgroup: str | None = None) -> None:
    """Register a running process group (and the cgroup it runs in): it is ended if the agent dies."""
    _send(f"+{pgid}\n" if cgroup is None else f"+{pgid} {cgroup}\n")


def untrack(pgid: int) -> None:
    """Forget a process group that has ended or been killed."""
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
            [sys.executable, "-I", "-S", _watchdog.__file__],
            {"PATH": os.defpath},
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


# -- cgroups --------------------------------------------------------------------------------------


def _new_cgroup() -> str | None:
    """A new, empty cgroup beneath the agent's own, or ``None`` where the agent cannot make one."""
    base = _own_cgroup() if _cgroups["usable"] else None
    if base is None:
        return None
    path = os.path.join(base, f"turnmemory-{os.getpid()}-{next(_numbers)}")
    try:
        os.mkdir(path)
    except OSError:
        _cgroups["usable"] = False
        return None
    return path


def _enter(cgroup: str, pid: int) -> bool:
    """Move ``pid`` into ``cgroup``; where that is refused, remove the cgroup and make no more."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as handle:
            handle.write(str(pid))
    except OSError:
        _cgroups["usable"] = False
        return False
    return True


@functools.cache
def _own_cgroup() -> str | None:
    """The directory of this process's cgroup v2, or ``None`` (no cgroup v2, not mounted here)."""
    try:
        with open("/proc/self/cgroup") as handle:
            relative = next((line[3:].strip() for line in handle if line.startswith("0::")), None)
        with open("/proc/self/mountinfo") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return None
    if relative is None:
        return None
    for fields in mounts:
        separator = fields.index("-") if "-" in fields else -1
        if separator < 0 or fields[separator + 1 : separator + 2] != ["cgroup2"]:
            continue
        root, point = _unescape(fields[3]), _unescape(fields[4])
        if relative == root or relative.startswith(root.rstrip("/") + "/"):
            path = os.path.join(point, relative[len(root.rstrip("/")) :].lstrip("/"))
            if os.path.isdir(path):
                return path
    return None


def _unescape(field: str) -> str:
    """A path of ``/proc/self/mountinfo``, whose spaces and such are octal escapes (``\\040``)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field
