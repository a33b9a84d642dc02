"""bash in the bubblewrap sandbox: nothing of the machine outside the workspace is visible or writable,
there is no network, the workspace's edits survive; and the permission decisions that go with it,
through the agent and through ``turnmemory run``."""

from __future__ import annotations

import http.server
import os
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import body_text

from turnmemory.agent.bash._sandbox import HOME, SandboxMode, open_sandbox, sandbox_unavailable
from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer
from turnmemory.agent.tools import ToolContext, ToolError, ToolRegistry, builtin_tools
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

UNAVAILABLE = sandbox_unavailable()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no bash sandbox: {UNAVAILABLE}")

REGISTRY = ToolRegistry(builtin_tools(subagent=lambda agent, task: ""))
KEY = "FAKE-PRIVATE-KEY-5d1e"
SECRET = "OTHER-PROJECT-SECRET-0b7c"
MakeAgent = Callable[..., Agent]
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def machine(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A user's machine in miniature: a home with a key and a credentials file, another project with a
    secret, a file in the host's /tmp area, and the workspace; ``HOME`` and an API key set as a user's."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {KEY}\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "secret").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return {"home": home, "other": other, "workspace": workspace, "tmp": tmp_path}


def context(machine: dict[str, Path], mode: SandboxMode = "workspace-write", **kwargs: Any) -> ToolContext:
    sandbox, notice = open_sandbox(mode, str(machine["workspace"]), **kwargs)
    assert sandbox is not None and notice is None
    return ToolContext(
        workspace=str(machine["workspace"]), spill_dir=str(machine["tmp"] / "spill"), sandbox=sandbox
    )


def bash(ctx: ToolContext, command: str) -> dict[str, Any]:
    action = REGISTRY.prepare("bash", {"command": command}, ctx)
    assert action.access is not None and action.access.contained
    return action.run()


READS = [
    "cat ~/.ssh/id_rsa",
    "cat {home}/.ssh/id_rsa",
    "cat {home}/.aws/credentials",
    "cat ../other/secret",
    "cat {other}/secret",
    "head -c 100 {other}/secret",
    "ls -a {home} {other}",
    "python3 -c 'print(open(\"{other}/secret\").read())'",
    "cd .. && cat other/secret",
    "env",
    "cat /proc/1/environ | tr '\\0' '\\n'",
    "grep -rs {marker} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr",
]


@pytest.mark.parametrize("template", READS)
def test_nothing_outside_the_workspace_can_be_read(machine: dict[str, Path], template: str) -> None:
    command = template.format(home=machine["home"], other=machine["other"], marker="FAKE-PRIVATE")
    out = bash(context(machine), command)
    seen = out["stdout"] + out.get("stderr", "")
    assert KEY not in seen and SECRET not in seen
    assert "id_rsa" not in out["stdout"] and ".aws" not in out["stdout"]


def test_the_visible_machine_is_the_system_the_workspace_and_private_scratch(
    machine: dict[str, Path],
) -> None:
    (machine["tmp"] / "host-tmp-file").write_text("host")
    out = bash(context(machine), "ls -A /; echo ---; ls -A /tmp; echo ---; ls -A $HOME; echo $HOME")
    top, scratch, home, home_var = _sections(out["stdout"])
    system = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "var"}
    expected_top = system | {"proc", "dev", "tmp"}
    assert set(top) <= expected_top | {str(machine["workspace"]).split("/")[1]}
    assert set(scratch) <= {"home", *str(machine["workspace"]).split("/")[2:3]}
    assert "host-tmp-file" not in out["stdout"]
    assert home == [] and home_var == [HOME]
    etc = bash(context(machine), "ls -A /etc")["stdout"].split()
    assert not {"shadow", "gshadow", "sudoers", "ssh", "environment"} & set(etc)


def _sections(stdout: str) -> tuple[list[str], list[str], list[str], list[str]]:
    parts = stdout.split("---\n")
    top, scratch, rest = parts[0].split(), parts[1].split(), parts[2].splitlines()
    return top, scratch, rest[:-1], rest[-1:]


WRITES = [
    "echo x > ../other/new",
    "echo x > {other}/secret",
    "echo x > {home}/.bashrc",
    "mkdir -p {home}/.ssh && echo x >> {home}/.ssh/authorized_keys",
    "touch /usr/x",
    "echo x > /etc/passwd",
    "cp /bin/sh {other}/sh",
]


@pytest.mark.parametrize("template", WRITES)
def test_nothing_outside_the_workspace_can_be_written(machine: dict[str, Path], template: str) -> None:
    before = _snapshot(machine["tmp"], machine["workspace"])
    bash(context(machine), template.format(home=machine["home"], other=machine["other"]))
    assert _snapshot(machine["tmp"], machine["workspace"]) == before
    assert (machine["other"] / "secret").read_text() == SECRET


def test_the_private_tmp_is_not_the_hosts(machine: dict[str, Path]) -> None:
    name = f"turnmemory-sandbox-{os.getpid()}"
    assert bash(context(machine), f"echo x > /tmp/{name} && cat /tmp/{name}")["stdout"] == "x\n"
    assert not Path("/tmp", name).exists()


def _snapshot(root: Path, skip: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and skip not in path.parents and "spill" not in path.parts:
            files[str(path)] = path.read_bytes()
    return files


def test_workspace_edits_survive_and_read_only_mode_keeps_the_workspace_unchanged(
    machine: dict[str, Path],
) -> None:
    ws = machine["workspace"]
    (ws / "app.py").write_text("value = 1\n")
    out = bash(context(machine), "sed -i s/1/2/ app.py && mkdir -p build && echo made > build/out.txt")
    assert out["exit_code"] == 0
    assert (ws / "app.py").read_text() == "value = 2\n"
    assert (ws / "build" / "out.txt").read_text() == "made\n"
    assert os.stat(ws / "build" / "out.txt").st_uid == os.getuid()

    read_only = context(machine, "read-only")
    for command in ("sed -i s/2/3/ app.py", "echo x > new.txt", "rm build/out.txt", "mkdir d"):
        assert bash(read_only, command)["exit_code"] != 0
    assert bash(read_only, "cat app.py")["stdout"] == "value = 2\n"
    assert sorted(p.name for p in ws.rglob("*")) == ["app.py", "build", "out.txt"]


def test_git_config_and_hooks_stay_read_only_and_a_linked_hooks_dir_shows_nothing(
    machine: dict[str, Path],
) -> None:
    ws = machine["workspace"]
    ctx = context(machine)
    assert bash(ctx, "git init -q .")["exit_code"] != 0, "no repository can be made where host git finds it"
    assert not (ws / ".git").exists()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config = (ws / ".git" / "config").read_text()
    out = bash(ctx, "git config core.fsmonitor 'cat ~/.ssh/id_rsa'; echo evil > .git/hooks/pre-commit")
    assert out["exit_code"] != 0
    assert (ws / ".git" / "config").read_text() == config
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    commit = "echo hi > f && git add f && git -c user.email=a@b -c user.name=x commit -qm m"
    assert bash(ctx, commit)["exit_code"] == 0

    hooks = ws / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    hooks.symlink_to(machine["home"] / ".ssh")
    out = bash(ctx, "ls .git/hooks/; cat .git/hooks/id_rsa")
    assert KEY not in out["stdout"] and "id_rsa" not in out["stdout"]


def test_extra_readable_paths_are_visible_read_only(machine: dict[str, Path]) -> None:
    tools = machine["home"] / ".pyenv"
    tools.mkdir()
    (tools / "version").write_text("3.11\n")
    ctx = context(machine, readable=["~/.pyenv"])
    assert bash(ctx, f"cat {tools}/version")["stdout"] == "3.11\n"
    assert bash(ctx, f"echo x > {tools}/version")["exit_code"] != 0
    assert KEY not in bash(ctx, f"cat {machine['home']}/.ssh/id_rsa")["stdout"]


@pytest.fixture
def host_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server on the host; the paths it was asked for."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"HOST-REACHED")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


NETWORK = [
    "curl -sS -m 3 http://{addr}/curl",
    "exec 3<>/dev/tcp/{host}/{port} && printf 'GET /tcp HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3",
    "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://{addr}/py\", timeout=3).read())'",
    "getent hosts example.com || echo no-resolve",
]


@pytest.mark.parametrize("template", NETWORK)
def test_the_network_is_unreachable(
    machine: dict[str, Path], host_server: tuple[str, list[str]], template: str
) -> None:
    addr, hits = host_server
    host, port = addr.split(":")
    out = bash(context(machine), template.format(addr=addr, host=host, port=port))
    assert "HOST-REACHED" not in out["stdout"]
    assert hits == []
    if "getent" in template:
        assert out["stdout"] == "no-resolve\n"
    else:
        assert out["exit_code"] != 0
        assert "escalate" in out["note"], "a failed contained command says how to ask for more"


def test_an_escalation_needs_a_justification(machine: dict[str, Path]) -> None:
    ctx = context(machine)
    with pytest.raises(ToolError, match="escalate needs a justification"):
        REGISTRY.prepare("bash", {"command": "curl x", "escalate": True, "justification": " "}, ctx)
    action = REGISTRY.prepare(
        "bash", {"command": "cat ../other/secret", "escalate": True, "justification": "read the\nsecret"}, ctx
    )
    assert action.access is not None and not action.access.contained
    assert action.access.summary() == "bash (outside the sandbox: read the secret): cat ../other/secret"
    assert action.run()["stdout"] == SECRET, "a granted escalation runs on the host"


# -- the permission decisions, through the agent --------------------------------------------------


def test_contained_commands_run_without_asking_dangerous_and_escalated_ones_ask(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "build").mkdir()
    asked: list[str] = []

    def ask(access: Access) -> Answer:
        asked.append(access.summary())
        return Answer("deny", "not now")

    server.push(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo made > made.txt"})]),
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "bash", {"command": "curl https://x", "escalate": True, "justification": "needs network"}
                )
            ]
        ),
        Reply(text="Done."),
    )
    agent = make_agent("anthropic", ask=ask)
    assert agent.turn("go").status == "done"
    assert (workspace / "made.txt").read_text() == "made\n"
    assert (workspace / "build").is_dir()
    assert asked == [
        "bash (dangerous: recursive force delete): rm -rf build",
        "bash (outside the sandbox: needs network): curl https://x",
    ]
    last = body_text(server.requests[-1].body)
    assert "the user denied bash (outside the sandbox: needs network): curl https://x: not now" in last


# -- through the command line ---------------------------------------------------------------------


def test_headless_runs_plain_commands_contained_and_refuses_the_rest(
    machine: dict[str, Path], server: FakeProviderServer, cli: Run
) -> None:
    ws = machine["workspace"]
    (ws / "build").mkdir()
    escalate = {"command": "cat ../other/secret", "escalate": True, "justification": "read the other project"}
    server.push(
        Reply(
            text="Working.",
            tool_calls=[
                ToolCall("bash", {"command": "echo made > made.txt; cat ~/.ssh/id_rsa ../other/secret"}),
                ToolCall("bash", {"command": "rm -rf build"}),
                ToolCall("bash", escalate),
            ],
        ),
        Reply(text="Done."),
    )
    url = server.base_url("anthropic")
    cli("run", "--base-url", url, "go", extra_env={"HOME": str(machine["home"])})
    assert (ws / "made.txt").read_text() == "made\n" and (ws / "build").is_dir()
    results = body_text(server.requests[1].body)
    assert KEY not in results and SECRET not in results
    assert "No such file or directory" in results
    assert "refused dangerous command (recursive force delete)" in results
    assert (
        "not allowed without asking: bash (outside the sandbox: read the other project): cat ../other/secret"
        in results
    )

    server.push(Reply(tool_calls=[ToolCall("bash", escalate)]), Reply(text="Read it."))
    cli("run", "--base-url", url, "--allow", "bash:cat *", "again")
    assert SECRET not in body_text(server.requests[-1].body), "a bash pattern alone reads nothing outside"
    assert f"--allow 'read:{os.path.realpath(machine['other'])}/*'" in body_text(server.requests[-1].body)

    server.push(Reply(tool_calls=[ToolCall("bash", escalate)]), Reply(text="Read it."))
    read = f"read:{os.path.realpath(machine['other'])}/*"
    cli("run", "--base-url", url, "--allow", "bash:cat *", "--allow", read, "again")
    assert SECRET in body_text(server.requests[-1].body), "an escalation the rules grant runs on the host"


_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=12).filter(
    lambda name: name not in (".", "..")
)
_READERS = st.sampled_from(
    [
        "cat {path}",
        "head -c 4096 {path}",
        "grep -r . {parent}",
        "cp -r {parent} copied; cat copied/*",
        "find {parent} -type f -exec cat {{}} +",
        "python3 -c 'import sys; print(open(sys.argv[1]).read())' {path}",
        "tar cf - {parent} | tar xOf -",
        "ln -s {path} linked && cat linked",
    ]
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.lists(_NAMES, min_size=1, max_size=3), reader=_READERS, token=st.uuids())
def test_no_file_outside_the_workspace_reaches_a_contained_command(
    tmp_path: Path, where: list[str], reader: str, token: object
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as root:
        workspace = Path(root, "ws")
        workspace.mkdir()
        secret = Path(root, *where)
        if workspace in (secret, *secret.parents):
            return
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(f"TOKEN-{token}")
        sandbox, _ = open_sandbox("workspace-write", str(workspace))
        ctx = ToolContext(workspace=str(workspace), spill_dir=str(Path(root, "spill")), sandbox=sandbox)
        out = bash(ctx, reader.format(path=shlex.quote(str(secret)), parent=shlex.quote(str(secret.parent))))
        assert f"TOKEN-{token}" not in out["stdout"] + out.get("stderr", "")
        copies = [
            path
            for path in workspace.rglob("*")
            if path.is_file()
            and not path.is_symlink()
            and f"TOKEN-{token}" in path.read_text("utf-8", "replace")
        ]
        assert copies == []
