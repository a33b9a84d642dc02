"""The OS sandbox bash runs in: bubblewrap (``bwrap``) on Linux.

Modes (``--sandbox``, ``TURNMEMORY_SANDBOX``, ``[sandbox] mode``):

- ``workspace-write`` (the default where bubblewrap works): the workspace writable at its own path,
  a private ``/tmp`` (and ``/var/tmp``) and ``$HOME``, the system directories programs need (``/usr``,
  the ``/lib`` links, the parts of ``/etc`` that hold no secrets) read-only, a minimal ``/proc`` and
  ``/dev``. Nothing else of the machine exists inside: not the user's home, other projects, the host's
  ``/tmp``, credential stores or sockets. No network (a private network namespace), a private PID namespace
  that dies with the agent, a new terminal session, no capabilities (even when the agent runs as
  root), and a minimal environment (no API keys). What host-side git would run stays out of reach
  (:mod:`turnmemory.agent.bash._git_guard`): the workspace's ``.git`` cannot be moved, replaced or made,
  its ``config``, ``hooks`` and the like are read-only, nested repositories are read-only, and one a
  command makes is set aside when it ends.
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from turnmemory.agent._credentials import without_credentials
from turnmemory.agent.bash._git_guard import Repositories, guard

__all__ = ["SANDBOX_MODES", "Contained", "Sandbox", "SandboxMode", "open_sandbox", "sandbox_unavailable"]

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
_PASSED_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME")
_BASE_FLAGS = ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
_PROBE_TIMEOUT = 10


@dataclass(frozen=True, slots=True)
class Contained:
    """One command wrapped for the sandbox: its ``argv``, and ``settle``, to call once it has ended
    (it removes the command's placeholders and sets aside the repositories it made; what it did)."""

    argv: list[str]
    settle: Callable[[], list[str]]


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A working bubblewrap sandbox for one workspace (never mode ``off``)."""

    mode: SandboxMode
    workspace: str
    readable: tuple[str, ...] = ()
    bwrap: str = "bwrap"
    repositories: Repositories | None = field(default=None, compare=False, repr=False)
    """The workspace's nested repositories, kept current between commands (``workspace-write``)."""

    def command(self, argv: Sequence[str]) -> Contained:
        """``argv`` wrapped to run inside the sandbox, in the workspace."""
        args = [self.bwrap, *_BASE_FLAGS, *_system_view()]
        for path in self.readable:
            args += ["--ro-bind-try", path, path]
        if self.mode != "workspace-write":
            args += ["--ro-bind", self.workspace, self.workspace]
            return Contained([*args, "--chdir", self.workspace, "--", *argv], lambda: [])
        repositories = self.repositories or Repositories(self.workspace)
        protection = guard(self.workspace, repositories)
        args += ["--bind", self.workspace, self.workspace, *protection.args]
        return Contained([*args, "--chdir", self.workspace, "--", *argv], protection.settle)

    def environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        """The minimal environment of a sandboxed command: ``PATH``, locale, user, a private ``HOME``
        (never a credential of the agent's, under any name)."""
        env = {key: value for key, value in os.environ.items() if key in _PASSED_ENV or key.startswith("LC_")}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        return without_credentials({**env, "HOME": HOME, "TMPDIR": "/tmp", **extra})


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
    root = os.path.realpath(workspace)
    repositories = Repositories(root) if mode == "workspace-write" else None
    return Sandbox(mode, root, paths, found, repositories), None
