"""The OS sandbox bash runs in: bubblewrap (``bwrap``) on Linux.

Modes (``--sandbox``, ``TURNMEMORY_SANDBOX``, ``[sandbox] mode``):

- ``workspace-write`` (the default where bubblewrap works): the workspace writable at its own path,
  a private ``/tmp`` (and ``/var/tmp``) and ``$HOME``, the system directories programs need (``/usr``,
  the ``/lib`` links, the parts of ``/etc`` that hold no secrets) read-only, a minimal ``/proc`` and
  ``/dev``. Nothing else of the machine exists inside: not the user's home, other projects, the host's
  ``/tmp``, credential stores or sockets. No network (a private network namespace), a private PID namespace
  that dies with the agent, a new terminal session, and a minimal environment (no API keys).
  The workspace's ``.git/config`` and ``.git/hooks`` stay read-only: they run code outside the
  sandbox later.
- ``read-only``: the same view with the workspace read-only.
- ``off``: commands run on the host, decided by the permission rules alone.

bubblewrap's ``--die-with-parent`` fires when the *thread* that started it ends; the agent starts each
command from the thread that then waits for it, so that happens only when the command or the agent ends.

``[sandbox] readable`` lists more paths to show read-only inside (toolchains kept under the home
directory, such as ``~/.pyenv``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["SANDBOX_MODES", "Sandbox", "SandboxMode", "open_sandbox", "sandbox_unavailable"]

SandboxMode = Literal["workspace-write", "read-only", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
HOME = "/tmp/home"
"""``$HOME`` inside the sandbox: an empty directory on the private ``/tmp``."""

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "fonts",
    "gai.conf",
    "gitconfig",
    "group",
    "host.conf",
    "hostname",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "magic",
    "magic.mime",
    "manpath.config",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "perl",
    "profile",
    "profile.d",
    "protocols",
    "python3",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
    "vim",
)
"""The parts of ``/etc`` programs read to run; never ``shadow``, host keys, ``ssl/private``..."""
_PROTECTED = (".git/config", ".git/hooks")
"""Workspace paths kept read-only: code in them runs later outside the sandbox."""
_PASSED_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME")
_BASE_FLAGS = ("--unshare-all", "--die-with-parent", "--new-session")
_PROBE_TIMEOUT = 10


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A working bubblewrap sandbox for one workspace (never mode ``off``)."""

    mode: SandboxMode
    workspace: str
    readable: tuple[str, ...] = ()
    bwrap: str = "bwrap"

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped to run inside the sandbox, in the workspace."""
        args = [self.bwrap, *_BASE_FLAGS, *_system_view()]
        for path in self.readable:
            args += ["--ro-bind-try", path, path]
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        args += [bind, self.workspace, self.workspace]
        for relative in _PROTECTED:
            path = os.path.join(self.workspace, relative)
            if os.path.realpath(path) == path and os.path.exists(path):  # never a link out of the workspace
                args += ["--ro-bind", path, path]
        return [*args, "--chdir", self.workspace, "--", *argv]

    def environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        """The minimal environment of a sandboxed command: ``PATH``, locale, user, a private ``HOME``."""
        env = {key: value for key, value in os.environ.items() if key in _PASSED_ENV or key.startswith("LC_")}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        return {**env, "HOME": HOME, "TMPDIR": "/tmp", **extra}


def _system_view() -> list[str]:
    args: list[str] = []
    for path in (*_SYSTEM_DIRS, *(f"/etc/{name}" for name in _ETC)):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    return [
        *args,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
        "--dir",
        HOME,
    ]


@functools.cache
def sandbox_unavailable(bwrap: str | None = None) -> str | None:
    """Why bubblewrap cannot sandbox commands on this machine, or ``None`` when it can (probed once)."""
    found = shutil.which(bwrap or "bwrap")
    if found is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [found, *_BASE_FLAGS, *_system_view(), "--", "/bin/sh", "-c", "true"]
    try:
        done = subprocess.run(
            probe, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap cannot start here ({error})"
    if done.returncode != 0:
        first = next(iter(done.stderr.decode("utf-8", "replace").strip().splitlines()), "")
        return f"bubblewrap cannot start here ({first or f'exit status {done.returncode}'})"
    return None


def open_sandbox(
    mode: SandboxMode, workspace: str, readable: Sequence[str] = ()
) -> tuple[Sandbox | None, str | None]:
    """The sandbox for ``mode``, or ``None``; with a one-line notice when it was wanted but cannot run."""
    if mode == "off":
        return None, None
    reason = sandbox_unavailable()
    if reason is not None:
        return None, f"no bash sandbox: {reason}; bash commands go by the permission rules and prompts"
    found = shutil.which("bwrap") or "bwrap"
    paths = tuple(os.path.realpath(os.path.expanduser(path)) for path in readable)
    return Sandbox(mode, os.path.realpath(workspace), paths, found), None
