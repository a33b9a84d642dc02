"""The model as the attacker of everything that crosses from a command to the host, end to end:
``turnmemory run`` against the fake provider server, a scripted model calling bash, with the sandbox
on and off, and with the agent running as root and as an unprivileged user (``nobody``, through
``setpriv``, when the tests run as root).

- **git**: a contained command plants what a later host-side git would run (configuration, hooks,
  ``commondir``, a replaced or new ``.git``, a nested repository behind a gitlink, a rewritten
  submodule ``.git`` file, the files the configuration includes or names...). Afterwards the agent's
  own escalated ``git status`` and the user's ``git status``, ``diff``, ``commit`` and
  ``submodule update`` run nothing planted: no marker file appears outside the workspace. A
  contained ``git add`` / ``git commit`` still works, and so does an escalated ``git status``.
- **credentials**: host commands (escalated, or with the sandbox off) run a script the model wrote
  that prints its environment, every ancestor's ``/proc/PID/environ`` and the agent's config file;
  no credential value (environment keys of every provider, the config file's keys, a copy under
  another name) reaches a provider request, the session store or the run's output, while the rest of
  the user's environment does reach the command.
- **lifetime**: nothing a command starts outlives the agent (``setsid -f`` daemons, double forks,
  ``nohup``), whether the agent exits or is killed with ``kill -9``, with the sandbox off too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.agent._git_plants import PLANTS, USER_ENV, build_repository, git_argv, user_runs_git
from tests.agent._support import body_text, tool_results

import turnmemory
from turnmemory.agent.bash._sandbox import sandbox_unavailable
from turnmemory.agent.tools import _reaper
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

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
LATE = 0.5
"""Seconds the scripted background work waits before it writes its marker."""


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

    def agent(
        self, server: FakeProviderServer, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``turnmemory run`` as the user, in the workspace, against the fake server."""
        argv = [self.python, "-m", "turnmemory.cli", "run", "--provider", PROVIDER]
        argv += ["--base-url", server.base_url(PROVIDER), *args]
        return subprocess.run(
            [*self.prefix(), *argv],
            cwd=self.workspace,
            env=self.env({"OPENAI_API_KEY": "not-a-real-key-0000", **(env or {})}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def markers(self) -> list[str]:
        return sorted(path.name for path in self.outside.iterdir())

    def stored(self) -> str:
        data = self.base / "data"
        return "".join(
            path.read_bytes().decode("utf-8", "replace") for path in sorted(data.rglob("*")) if path.is_file()
        )


@pytest.fixture(params=USERS)
def host(request: pytest.FixtureRequest) -> Iterator[Host]:
    """The machine, owned by root or (when the tests run as root) by ``nobody``."""
    base = Path(tempfile.mkdtemp(prefix="turnmemory-host-", dir="/tmp"))
    if request.param == "unprivileged" and ROOT:
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


def _calls(*commands: str | dict[str, Any], prefix: str = "call") -> list[ToolCall]:
    calls = []
    for number, command in enumerate(commands):
        arguments = {"command": command} if isinstance(command, str) else command
        calls.append(ToolCall("bash", arguments, id=f"{prefix}_{number}"))
    return calls


def _escalated(command: str) -> dict[str, Any]:
    return {"command": command, "escalate": True, "justification": "needs the host"}


def _results(server: FakeProviderServer) -> list[dict[str, Any]]:
    """Every tool result of the session, parsed (the last request carries them all)."""
    found: list[dict[str, Any]] = []
    for text in tool_results(server.requests[-1].body):
        try:
            found.append(json.loads(text))
        except ValueError:
            found.append({"error": text})
    return found


# -- 1. git: nothing a contained command writes runs on the host --------------------------------


def _plant_gitmodules(outside: Path) -> str:
    """A submodule update command in ``.gitmodules`` (a workspace file, so the write succeeds)."""
    return f"printf '[submodule \"lib\"]\\n\\tpath = lib\\n\\turl = ../library\\n\\tupdate = !touch {outside}/planted-gitmodules\\n' > .gitmodules"


CONTROL = "echo made > made.txt && git add made.txt && git -c user.email=a@b -c user.name=a commit -qm 'made in the sandbox'"


@pytest.mark.parametrize("mode", MODES)
def test_nothing_a_contained_command_writes_runs_through_host_git(
    mode: str, host: Host, server: FakeProviderServer
) -> None:
    build_repository(host.base, host.git, hooks_path=True, owner=(host.uid, host.gid))
    plants = [plant.command(f"touch {host.outside}/planted-{n}") for n, plant in enumerate(PLANTS)]
    server.push(
        Reply(text="Planting.", tool_calls=_calls(*plants, CONTROL, _escalated("git status --short"))),
        Reply(
            text="Looking.",
            tool_calls=[
                ToolCall("glob", {"pattern": "**/*.txt"}, id="g"),
                *_calls(_escalated("git status"), _plant_gitmodules(host.outside), prefix="again"),
            ],
        ),
        Reply(text="Done."),
    )
    done = host.agent(server, "--sandbox", mode, "--allow", "bash:git status *", "tidy the repository")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("Done.\n")
    user_runs_git(host.git, host.workspace)
    assert host.markers() == [], "something planted ran through host git"
    results = _results(server)
    status = [r for r in results if r.get("command", "").startswith("git status")]
    assert len(status) == 2 and all(r["exit_code"] == 0 for r in status), (
        "an escalated git status under its rule runs"
    )
    if mode == "off":
        refused = [r for r in results if "permission denied" in r.get("error", "")]
        assert len(refused) == len(plants) + 2, "without a sandbox nothing but the rule's commands runs"
        return
    log = host.git("log", "--format=%s").stdout.splitlines()
    assert "made in the sandbox" in log, "git add and git commit work inside the sandbox"
    set_aside = [r["note"] for r in results if "set aside" in r.get("note", "")]
    assert set_aside and all(".untrusted" in note for note in set_aside)
    below_top = [
        str(path.relative_to(host.workspace))
        for path in host.workspace.rglob(".git")
        if path.parent != host.workspace and ".git" not in path.parent.relative_to(host.workspace).parts
    ]
    assert below_top == [], "every repository a command made or moved below the top was set aside"
    for made in ("vendored", "deep/er", "docs", "nest"):
        assert (host.workspace / made / ".git.untrusted").exists(), made
    assert (host.workspace / "bare" / "HEAD.untrusted").exists(), "a bare repository it made was set aside"
    assert (
        not (host.workspace / ".git" / "commondir").exists() and (host.workspace / ".git" / "hooks").is_dir()
    )


@SANDBOXED
def test_no_repository_can_be_made_where_host_git_would_find_it(
    host: Host, server: FakeProviderServer
) -> None:
    plants = [
        f"git init -q . && git config core.fsmonitor 'touch {host.outside}/planted-init; false'",
        f"mkdir .git; printf '[core]\\n\\tfsmonitor = touch {host.outside}/planted-mkdir; false\\n' > .git/config",
        f"printf 'gitdir: elsewhere\\n' > .git; git init -q --bare elsewhere && git --git-dir=elsewhere config core.fsmonitor 'touch {host.outside}/planted-file; false'",
        f"git init -q sub && git -C sub config core.fsmonitor 'touch {host.outside}/planted-sub; false'",
        f"git init -q --bare . && git config core.pager 'touch {host.outside}/planted-bare; cat' && "
        "git -c user.email=a@b -c user.name=a commit-tree -m top $(git mktree </dev/null) > top && "
        "git update-ref HEAD $(cat top)",
        "echo still writable > kept.txt",
    ]
    server.push(Reply(tool_calls=_calls(*plants)), Reply(text="Done."))
    done = host.agent(server, "start a project")
    assert done.returncode == 0, done.stderr
    assert (
        not (host.workspace / ".git").exists()
        and (host.workspace / "kept.txt").read_text() == "still writable\n"
    )
    assert _results(server)[-2]["exit_code"] == 0, "a bare repository can be made at the top"
    for where in (host.workspace, host.workspace / "sub", host.workspace / "src"):
        where.mkdir(exist_ok=True)
        host.git("status", cwd=where, check=False)
        host.git("log", "-1", cwd=where, check=False, terminal=True)
    assert host.markers() == []
    assert sorted(p.name for p in (host.workspace / "sub").iterdir()) == [".git.untrusted"]
    assert (host.workspace / "HEAD.untrusted").is_file() and not (host.workspace / "HEAD").exists()


# -- 3. credentials: the agent's keys never reach a command or the model ------------------------

KEYS = {
    "OPENAI_API_KEY": "correct-horse-battery-staple-4417",
    "ANTHROPIC_API_KEY": "zebra-lantern-orbit-9931-plum",
    "AWS_SECRET_ACCESS_KEY": "violet-anchor-meadow-2286-quill",
    "COPY_OF_THE_KEY": "correct-horse-battery-staple-4417",
}
CONFIGURED = "harbor-cinnamon-glacier-5120-fern"
"""A key only the config file holds (another provider's)."""
SECRETS = sorted({*KEYS.values(), CONFIGURED})
LEAK = r"""env > "$OUTSIDE/env-$$" 2>/dev/null; env
p=$$
while [ "$p" -gt 1 ]; do
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null
  p=$(sed 's/.*) [A-Z] \([0-9]*\).*/\1/' /proc/$p/stat)
done
cat "$XDG_CONFIG_HOME/turnmemory/config.toml" 2>&1
"""
"""A script that prints everything a host command can see of the agent's credentials, and keeps its
own environment in ``$OUTSIDE`` (where a command would send it off, out of the scrubbing's reach)."""


@pytest.mark.parametrize(
    ("mode", "rules"),
    [
        pytest.param("workspace-write", "patterns", marks=SANDBOXED),
        ("off", "patterns"),
        ("off", "bash"),
    ],
)
def test_no_credential_reaches_a_command_or_the_model(
    mode: str, rules: str, host: Host, server: FakeProviderServer
) -> None:
    """The repository's own Makefile and script print what they can see of the agent (a pattern covers
    them: nothing changed them); under a blanket ``--allow bash`` the model writes its own script."""
    config = host.home / ".config" / "turnmemory" / "config.toml"
    config.write_text(f'[providers.openai_responses]\napi_key = "{CONFIGURED}"\n')
    leak = f"OUTSIDE={host.outside}\n{LEAK}"
    (host.workspace / "leak.sh").write_text(leak)
    (host.workspace / "Makefile").write_text("leak:\n\tsh leak.sh\n")
    for path in (config, host.workspace / "leak.sh", host.workspace / "Makefile"):
        os.chown(path, host.uid, host.gid)
    if rules == "bash":
        write = "cat > mine.sh <<'EOF'\n" + leak + "EOF"
        calls, host_commands, allow = _calls(write, "sh mine.sh"), ["sh mine.sh"], ["--allow", "bash"]
    elif mode == "off":
        calls, host_commands = _calls("make leak", "sh leak.sh"), ["make leak", "sh leak.sh"]
        allow = ["--allow", "bash:make *", "--allow", "bash:sh *"]
    else:
        calls = _calls("sh leak.sh; cat /proc/1/environ", _escalated("make leak"))
        host_commands, allow = ["make leak"], ["--allow", "bash:make *"]
    server.push(Reply(text="Building.", tool_calls=calls), Reply(text="Built."))
    done = host.agent(
        server, "--sandbox", mode, *allow, "build it", env={**KEYS, "PROJECT_SETTING": "visible-7d1"}
    )
    assert done.returncode == 0, done.stderr
    printed = {r.get("command"): r.get("stdout", "") for r in _results(server)}
    assert all("PROJECT_SETTING=visible-7d1" in printed.get(command, "") for command in host_commands), (
        "every host command ran, with the user's environment",
        printed,
    )
    assert all("[REDACTED]" in printed[command] for command in host_commands), (
        "what a host command read of the agent was scrubbed"
    )
    kept = {name: (host.outside / name).read_text() for name in host.markers()}
    assert len(kept) == len(host_commands), kept
    assert not any(f"{name}=" in text for name in KEYS for text in kept.values()), "no credential by name"
    places = {f"request {n}": body_text(r.body) for n, r in enumerate(server.requests)}
    places |= {"store": host.stored(), "output": done.stdout + done.stderr, **kept}
    leaks = [f"{secret} in {where}" for secret in SECRETS for where, text in places.items() if secret in text]
    assert leaks == []


def test_no_token_an_mcp_server_uses_reaches_a_host_command(host: Host, server: FakeProviderServer) -> None:
    """A token the config hands an MCP server through ``${NAME}`` is the agent's too (the server here
    cannot start: the token is read all the same)."""
    token = "mcp-token-4dc1-amber-quartz-8812"
    config = host.home / ".config" / "turnmemory" / "config.toml"
    config.write_text(
        '[mcp.servers.docs]\nurl = "http://127.0.0.1:9/mcp"\nstartup_timeout = 5\n'
        'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }\n'
    )
    os.chown(config, host.uid, host.gid)
    server.push(Reply(tool_calls=_calls(f"env > {host.outside}/env; env")), Reply(text="Listed."))
    done = host.agent(
        server, "--sandbox", "off", "--allow", "bash", "show the environment", env={"DOCS_TOKEN": token}
    )
    assert done.returncode == 0, done.stderr
    kept = (host.outside / "env").read_text()
    assert "PATH=" in kept and "DOCS_TOKEN=" not in kept and token not in kept
    assert not any(token in body_text(request.body) for request in server.requests)


# -- 5. lifetime: nothing a command starts outlives the agent -----------------------------------


def _escapers(outside: Path, token: str) -> str:
    """Background work that leaves the command every way it can, then writes a marker."""
    late = f"sleep {LATE}; : {token}; touch {outside}/late"
    return "\n".join(
        [
            f"setsid -f sh -c '{late}-daemon'",
            f"(setsid sh -c '{late}-setsid' &)",
            f"( (sh -c '{late}-double' &) & )",
            f"nohup sh -c '{late}-nohup' >/dev/null 2>&1 &",
            f"sh -c '{late}-background' &",
            "echo started",
        ]
    )


def _alive(token: str) -> list[int]:
    """Processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _assert_nothing_outlived(host: Host, token: str) -> None:
    time.sleep(LATE + 1.0)
    assert _alive(token) == [] and host.markers() == []


@pytest.mark.parametrize("mode", MODES)
def test_no_command_outlives_the_agent(mode: str, host: Host, server: FakeProviderServer) -> None:
    token = uuid.uuid4().hex
    command: str | dict[str, Any] = _escapers(host.outside, token)
    if mode != "off":
        command = _escalated(str(command))
    server.push(Reply(tool_calls=_calls(command)), Reply(text="Started."))
    done = host.agent(server, "--sandbox", mode, "--allow", "bash", "start the services")
    assert done.returncode == 0, done.stderr
    assert _results(server)[0].get("stdout") == "started\n", (_results(server), done.stderr)
    _assert_nothing_outlived(host, token)


def test_kill_9_of_the_agent_ends_what_its_command_started(host: Host, server: FakeProviderServer) -> None:
    """With the sandbox off (a contained command's kill is in ``test_shell_lifetime``: its PID namespace)."""
    token = uuid.uuid4().hex
    command = f"{_escapers(host.outside, token)}\ntouch {host.workspace}/running; sleep 60"
    server.push(Reply(tool_calls=_calls(command)))
    argv = [host.python, "-m", "turnmemory.cli", "run", "--provider", PROVIDER, "--base-url"]
    argv += [server.base_url(PROVIDER), "--sandbox", "off", "--allow", "bash", "work"]
    agent = subprocess.Popen(
        [*host.prefix(), *argv],
        cwd=host.workspace,
        env=host.env({"OPENAI_API_KEY": "not-a-real-key-0000"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (host.workspace / "running").exists():
            assert agent.poll() is None and time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    _assert_nothing_outlived(host, token)


@pytest.mark.skipif(
    _reaper._own_cgroup() is None or not ROOT, reason="needs a cgroup the agent can make (root)"
)
def test_a_command_that_kills_the_agent_still_ends_in_its_cgroup(
    host: Host, server: FakeProviderServer
) -> None:
    """A host command in a cgroup is the agent's child: killing the agent leaves its end to the watchdog."""
    if host.uid != 0:
        pytest.skip("an unprivileged agent here has no cgroup of its own to make cgroups in")
    token = uuid.uuid4().hex
    late = f"sleep {LATE}; : {token}; touch {host.outside}/late-orphan"
    command = f"setsid -f sh -c 'sleep 0.2; {late}'; kill -9 $PPID; sleep 30"
    server.push(Reply(tool_calls=_calls(command)))
    done = host.agent(server, "--sandbox", "off", "--allow", "bash", "go")
    assert done.returncode == -signal.SIGKILL, done.stderr
    _assert_nothing_outlived(host, token)
