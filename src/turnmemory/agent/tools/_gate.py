"""The gate a host-side command or an MCP server runs under: it starts the command and ends everything
the command started, daemons included.

Run as a script by :mod:`._reaper`, in a new session, with its stdin a pipe from the agent:
``python -I -S _gate.py ARGV...`` for a command, ``python -I -S _gate.py --stdio EXECUTABLE ARGV...``
for an MCP stdio server. It

1. makes itself the *child subreaper* of what it starts (``PR_SET_CHILD_SUBREAPER``): a process that
   leaves the command's process group and is orphaned (``setsid -f``, a double fork, ``nohup ... &``)
   is reparented to the gate, not to init; and asks for ``SIGTERM`` when the agent's thread that
   started it dies (``PR_SET_PDEATHSIG``);
2. waits for the agent's go, sent once the watchdog knows the gate's group: for a command the line
   ``go``; for a server (which first writes its process group on stderr) the agent's first request,
   which stays unread on stdin for the server. An agent that died first sends nothing, and the
   command never runs;
3. runs the command, with stdin ``/dev/null`` (a server keeps the pipe), and waits for it;
4. when the command ends, or on ``SIGTERM``/``SIGINT``/``SIGHUP`` (the agent stopping it, the agent's
   death, the watchdog), kills every process left in its group or beneath it, round after round until
   none is left, and exits with the command's status (``128 + N`` for a signal, as a shell reports it).

A process that kills the gate itself first escapes it; the cgroup the agent puts the gate in, where
it can make one, holds that case too. Outside Linux the gate still runs the command and kills its group.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Iterator

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_DEFAULTS = (signal.SIGPIPE, signal.SIGXFSZ, *_STOPPING)
"""Signals the command gets at their default action (Python ignores ``SIGPIPE`` for itself)."""
_ROUNDS = 1000
STDIO = "--stdio"
"""The first argument that makes the gate an MCP stdio server's."""


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _become_reaper() -> None:
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _stop(signum: int, frame: object) -> None:
    raise _Stop(signum)


def _status(wait_status: int) -> int:
    code = os.waitstatus_to_exitcode(wait_status)
    return code if code >= 0 else 128 - code


def _processes() -> Iterator[tuple[int, int, int]]:
    """``(pid, parent pid, process group)`` of every process ``/proc`` shows."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:
            continue
        yield int(name), int(fields[1]), int(fields[2])


def _reap() -> bool:
    """Collect every child that has ended; whether any child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def sweep() -> None:
    """Kill every process in the gate's group or beneath it until none is left."""
    me = os.getpid()  # the gate leads its process group
    for _ in range(_ROUNDS):
        victims = [pid for pid, parent, pgid in _processes() if pid != me and me in (parent, pgid)]
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not _reap() and not victims:
            return
        time.sleep(0.002)


def _go(stdio: bool) -> bool:
    """Wait for the agent's go; ``False``: the agent is gone (end of file first)."""
    if not stdio:
        return sys.stdin.buffer.readline() == b"go\n"
    os.write(2, b"%d\n" % os.getpgid(0))
    poller = select.poll()
    poller.register(0, select.POLLIN)
    return any(events & select.POLLIN for _, events in poller.poll())


def main(argv: list[str]) -> int:
    """Run ``argv`` after the agent's go; end everything it started; its exit status."""
    stdio = argv[:1] == [STDIO]
    executable, argv = (argv[1], argv[2:]) if stdio else (argv[0], argv)
    _become_reaper()
    for signum in _STOPPING:
        signal.signal(signum, _stop)
    status = 125
    try:
        if not _go(stdio):
            return status  # the agent is gone: nothing may start that it could not end
        null = os.open(os.devnull, os.O_RDWR)
        try:
            command = os.posix_spawnp(
                executable,
                argv,
                os.environ,
                file_actions=[] if stdio else [(os.POSIX_SPAWN_DUP2, null, 0)],
                setsigdef=_DEFAULTS,
            )
        except OSError as error:
            print(f"cannot run {executable}: {error.strerror}", file=sys.stderr)
            return 127
        if stdio:  # the server alone holds its pipes: its end is their end
            os.dup2(null, 0)
            os.dup2(null, 1)
        os.close(null)
        while True:
            pid, wait_status = os.waitpid(-1, 0)
            if pid == command:
                status = _status(wait_status)
                break
    except _Stop as stop:
        status = 128 + stop.signum
    finally:
        for signum in _STOPPING:
            signal.signal(signum, signal.SIG_IGN)
        sweep()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
