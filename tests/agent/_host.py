"""The user's machine in miniature for end-to-end attacks through ``turnmemory run``: a home, a config
directory, the agent's data directory, a directory outside the workspace for markers, and the
workspace, owned by the user the agent runs as (root, or ``nobody`` through ``setpriv`` when the tests
run as root). The ``host`` fixture (in ``conftest.py``) gives one per user of :data:`USERS`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.agent._git_plants import USER_ENV, git_argv

import turnmemory
from turnmemory.agent.bash._sandbox import sandbox_unavailable
from turnmemory.testing import FakeProviderServer

UNAVAILABLE = sandbox_unavailable()
ROOT = os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
USERS = [
    pytest.param(
        "root", id="agent-as-root", marks=pytest.mark.skipif(not ROOT, reason="the tests do not run as root")
    ),
    pytest.param(
        "unprivileged",
        id="agent-unprivileged",
        marks=pytest.mark.skipif(ROOT and SETPRIV is None, reason="dropping to nobody needs setpriv"),
    ),
]
SANDBOXED = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no bash sandbox: {UNAVAILABLE}")
MODES = [pytest.param("workspace-write", marks=SANDBOXED), "off"]
PROVIDER = "openai_chat"


def _python_for(prefix: list[str]) -> tuple[str, dict[str, str]] | None:
    """A Python the user of ``prefix`` may run that imports this turnmemory, and the environment it
    needs: this interpreter, or (when it lives where the user cannot reach, such as under ``/root``)
    the system's of the same version with this one's packages on its path."""
    package_dirs = [path for path in sys.path if path.endswith("site-packages")]
    source = os.path.dirname(os.path.dirname(turnmemory.__file__))
    for candidate, env in (
        (sys.executable, {}),
        ("/usr/bin/python3", {"PYTHONPATH": os.pathsep.join([source, *package_dirs])}),
    ):
        check = (  # setpriv itself may reach what its child cannot: the child starts one more
            "import subprocess, sys, turnmemory.cli; subprocess.run([sys.executable, '-c', ''], check=True); "
            "print(sys.version_info[:2])"
        )
        done = subprocess.run(
            [*prefix, candidate, "-c", check],
            env={"PATH": os.defpath, **env},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip() == str(sys.version_info[:2]):
            return candidate, env
    return None


@dataclass
class Host:
    """A user's machine in miniature, owned by the user the agent runs as: a home, a config directory,
    the agent's data directory, a directory outside the workspace for markers, and the workspace."""

    base: Path
    uid: int
    gid: int
    python: str = sys.executable
    python_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def workspace(self) -> Path:
        return self.base / "ws"

    @property
    def outside(self) -> Path:
        return self.base / "outside"

    def prefix(self) -> list[str]:
        """What runs a command as the agent's user."""
        if self.uid == os.geteuid():
            return []
        assert SETPRIV is not None
        return [SETPRIV, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "TURNMEMORY_DATA_DIR": str(self.base / "data"),
            **self.python_env,
            **(extra or {}),
        }

    def run(
        self, *argv: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` as the user, in the workspace."""
        done = subprocess.run(
            [*self.prefix(), *argv],
            cwd=cwd or self.workspace,
            env=self.env(USER_ENV),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check:
            assert done.returncode == 0, (argv, done.stderr)
        return done

    def git(
        self, *args: str, cwd: Path | None = None, check: bool = True, terminal: bool = False
    ) -> subprocess.CompletedProcess[str]:
        return self.run(*git_argv(args, terminal=terminal), cwd=cwd, check=check)

    def turnmemory(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``turnmemory ARGS`` as the user, in the workspace."""
        return subprocess.run(
            [*self.prefix(), self.python, "-m", "turnmemory.cli", *args],
            cwd=self.workspace,
            env=self.env({"OPENAI_API_KEY": "not-a-real-key-0000", **(env or {})}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def agent(
        self, server: FakeProviderServer, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``turnmemory run`` as the user, in the workspace, against the fake server."""
        return self.turnmemory("run", *self.provider(server), *args, env=env)

    @staticmethod
    def provider(server: FakeProviderServer) -> list[str]:
        """The flags that point the agent at the fake server."""
        return ["--provider", PROVIDER, "--base-url", server.base_url(PROVIDER)]

    def markers(self) -> list[str]:
        return sorted(path.name for path in self.outside.iterdir())

    def stored(self) -> str:
        data = self.base / "data"
        return "".join(
            path.read_bytes().decode("utf-8", "replace") for path in sorted(data.rglob("*")) if path.is_file()
        )


def make_host(user: str) -> Iterator[Host]:
    """The machine, owned by root or (``user`` ``"unprivileged"``, when the tests run as root) by
    ``nobody``; removed afterwards. Skips where that user can run no Python that imports turnmemory."""
    base = Path(tempfile.mkdtemp(prefix="turnmemory-host-", dir="/tmp"))
    if user == "unprivileged" and ROOT:
        uid, gid = 65534, 65534
    else:
        uid, gid = os.geteuid(), os.getegid()
    for name in ("home", "ws", "outside", "data", "home/.config/turnmemory"):
        (base / name).mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    for path in [base, *base.rglob("*")]:
        os.chown(path, uid, gid)
    try:
        host = Host(base, uid, gid)
        python = _python_for(host.prefix())
        if python is None:
            pytest.skip(
                f"no Python that uid {uid} may run imports turnmemory ({sys.executable} is out of its reach)"
            )
        host.python, host.python_env = python
        yield host
    finally:
        shutil.rmtree(base, ignore_errors=True)
